"""Sessions on the columns: agent loops, multi-turn conversations, replayed trace sessions.

:class:`SessionBuilder` keeps, sparsely, what a row with a ``session_id`` says: its session
(coded), its step (``turn``), the steps its session planned (``session_steps``, agents only) and
the tool wait before it (``tool_wait_s``). :meth:`SessionColumns.block` gives the summary's
``sessions`` block over a selection of rows:

- ``started`` (sessions with a counted request) and ``completed``: every request of the session
  counted and successful and, when the session planned its steps, all of them sent;
- ``sessions_per_s``: completed sessions over the measured span, beside ``request_throughput``;
- ``session_e2e_s``: a completed session's first request sent -> last byte of its last one
  (tool waits included), percentiles; ``steps`` per completed session, percentiles;
- ``tool_wait_s``: the mean wait for a tool between two steps (in no request's latency);
- ``step_ttft_ms``: TTFT percentiles per step (the first :data:`MAX_STEPS` steps), over the
  rows whose latencies count (:mod:`llm_locust.results.inclusion`);
- ``prefix_cache``: when the server reported ``cached_tokens``, each session's token hit ratio
  (cached / prompt tokens over its successful requests), percentiles over the sessions.

Pure module: numpy, no Locust, no network.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from llm_locust.config.jsontypes import JsonObject, JsonValue
from llm_locust.results.session_model import StepTtft
from llm_locust.results.summary_model import Stats

__all__ = ["MAX_STEPS", "SessionBuilder", "SessionColumns", "session_lines"]

#: Steps with their own TTFT line in the block (later steps are pooled into none).
MAX_STEPS = 16
_QS = (50, 90, 95, 99)
_NAN = float("nan")


class SessionBuilder:
    """Rows in (with their index); the rows that belong to a session, sparsely."""

    def __init__(self) -> None:
        self.at, self.code, self.turn, self.steps = array("i"), array("i"), array("i"), array("i")
        self.wait, self.cached = array("d"), array("d")
        self._codes: dict[str, int] = {}

    def add(self, index: int, row: Mapping[str, Any]) -> None:
        sid = row.get("session_id")
        if sid is None:
            return
        self.at.append(index)
        self.code.append(self._codes.setdefault(str(sid), len(self._codes)))
        turn, steps = row.get("turn"), row.get("session_steps")
        wait, cached = row.get("tool_wait_s"), row.get("cached_tokens")
        self.turn.append(-1 if turn is None else int(turn))
        self.steps.append(-1 if steps is None else int(steps))
        self.wait.append(_NAN if wait is None else float(wait))
        self.cached.append(_NAN if cached is None else float(cached))

    def build(self) -> SessionColumns:
        return SessionColumns(self)


def _np(buffer: array[int] | array[float], dtype: npt.DTypeLike) -> np.ndarray:
    return np.frombuffer(buffer, dtype=dtype) if len(buffer) else np.empty(0, dtype=dtype)


def _pcts(values: np.ndarray, unit: str, scale: float = 1.0) -> dict[str, float | None]:
    values = values[~np.isnan(values)] * scale
    out: dict[str, float | None] = {}
    out[f"mean_{unit}"] = float(values.mean()) if values.size else None
    for q in _QS:
        out[f"p{q}_{unit}"] = float(np.percentile(values, q)) if values.size else None
    return out


class SessionColumns:
    """The session rows of a test (see the module docstring)."""

    def __init__(self, built: SessionBuilder) -> None:
        self.at = _np(built.at, np.int32)
        self.code = _np(built.code, np.int32)
        self.turn = _np(built.turn, np.int32)
        self.steps = _np(built.steps, np.int32)
        self.wait = _np(built.wait, float)
        self.cached = _np(built.cached, float)

    def block(
        self, cols: Any, counted: np.ndarray, ok: np.ndarray, timed: np.ndarray, duration: float
    ) -> JsonObject | None:
        """The ``sessions`` block over the rows ``counted`` (``None``: no session row counted). A
        session is started when one of its requests is counted, completed when every request it
        sent is counted and successful (one outside the window leaves it incomplete)."""
        keep = counted[self.at]
        if not keep.any():
            return None
        good = keep & ok[self.at]
        ids, inverse = np.unique(self.code, return_inverse=True)
        n = ids.size
        count = np.bincount(inverse, minlength=n)
        started = np.bincount(inverse, weights=keep, minlength=n) > 0
        planned = np.full(n, -1)
        np.maximum.at(planned, inverse, self.steps)
        done = (np.bincount(inverse, weights=good, minlength=n) == count) & (
            (planned < 0) | (count == planned)
        )
        start = cols.start[self.at]
        end = np.nan_to_num(start + cols.e2e[self.at], nan=-np.inf)
        first, last = np.full(n, np.inf), np.full(n, -np.inf)
        np.minimum.at(first, inverse, start)
        np.maximum.at(last, inverse, end)
        completed = int(done.sum())
        waits = self.wait[keep]
        at, turn = self.at[keep], self.turn[keep]
        out: JsonObject = {
            "started": int(started.sum()),
            "completed": completed,
            "sessions_per_s": completed / max(duration, 1e-9),
            **_pcts((last - first)[done], "session_e2e_s"),
            **_pcts(count[done].astype(float), "steps"),
            "mean_tool_wait_s": float(np.nanmean(waits)) if (~np.isnan(waits)).any() else None,
            "step_ttft_ms": self._step_ttft(cols, at, turn, timed),
        }
        cache = self._cache(cols, at, self.cached[keep], inverse[keep], ok[at], n)
        if cache is not None:
            out["prefix_cache"] = cache
        return out

    @staticmethod
    def _step_ttft(cols: Any, at: np.ndarray, turn: np.ndarray, timed: np.ndarray) -> list[JsonValue]:
        steps: list[JsonValue] = []
        for k in sorted(set(turn[(turn >= 0) & (turn < MAX_STEPS)].tolist())):
            rows = at[(turn == k) & timed[at]]
            steps.append({"step": k, "requests": int(rows.size), **_pcts(cols.ttft[rows], "ttft_ms", 1000.0)})
        return steps

    @staticmethod
    def _cache(
        cols: Any, at: np.ndarray, cached: np.ndarray, inverse: np.ndarray, row_ok: np.ndarray, n: int
    ) -> JsonObject | None:
        reported = row_ok & ~np.isnan(cached)
        if not reported.any():
            return None
        prompt = np.nan_to_num(cols.prompt[at])
        hit = np.bincount(inverse[reported], weights=cached[reported], minlength=n)
        total = np.bincount(inverse[reported], weights=prompt[reported], minlength=n)
        has = total > 0
        ratios = hit[has] / total[has]
        out: JsonObject = {"sessions": int(has.sum())}
        for q in (10, 50, 90):
            out[f"p{q}_token_hit_ratio"] = float(np.percentile(ratios, q)) if ratios.size else None
        return out


def session_lines(summary: Stats) -> list[str]:
    """The end-of-run table's lines for sessions (agent loops, conversations, trace sessions)."""
    block = summary.sessions
    if not block:
        return []
    row = "{:<40}{:>16}".format
    lines = [f"{'-' * 20} Sessions {'-' * 20}"]
    lines.append(row("Completed / started:", f"{block.completed} / {block.started}"))
    rate = summary.request_throughput
    lines.append(row("Sessions/s / requests/s:", f"{block.sessions_per_s:.3f} / {_num(rate)}"))
    for value, q in (
        (block.p50_session_e2e_s, 50),
        (block.p90_session_e2e_s, 90),
        (block.p99_session_e2e_s, 99),
    ):
        lines.append(row(f"P{q} session E2E (s):", _num(value)))
    lines.append(row("Steps p50 / p99:", f"{_num(block.p50_steps)} / {_num(block.p99_steps)}"))
    if block.mean_tool_wait_s is not None:
        lines.append(row("Mean tool wait (s, in no latency):", _num(block.mean_tool_wait_s)))
    for step in _shown(block.step_ttft_ms):
        pair = f"{_num(step.p50_ttft_ms)} / {_num(step.p99_ttft_ms)}"
        lines.append(row(f"Step {step.step} TTFT p50 / p99 (ms):", pair))
    cache = block.prefix_cache
    if cache:
        ratios = (cache.p10_token_hit_ratio, cache.p50_token_hit_ratio, cache.p90_token_hit_ratio)
        lines.append(row("Session token hit ratio p10/p50/p90:", " / ".join(_pct(r) for r in ratios)))
    return lines


def _shown(steps: Sequence[StepTtft]) -> Sequence[StepTtft]:
    return steps if len(steps) <= 6 else [*steps[:5], steps[-1]]


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"
