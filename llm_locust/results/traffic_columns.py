"""Modern traffic on the columns: reasoning splits, prefix-cache hits, bursts (issue 16).

:class:`~llm_locust.results.columns.ColumnsBuilder` hands every row to a
:class:`TrafficBuilder`, which keeps only what a row has to say, sparsely (row index and
value): a visible TTFT that differs from the TTFT, a reasoning split, a first content chunk
of several tokens, a ``cached_tokens``, a burst wave. A plain chat run costs nothing per
row. :class:`TrafficColumns` then answers, for any selection of rows (a stage, the measured
ones), what the summary needs:

- latencies beside TTFT: ``ttft_visible`` (the TTFT where a row has no separate value),
  ``ttft_cache_hit`` / ``ttft_cache_miss``, ``ttft_burst`` / ``ttft_base``;
- ``time_to_first_tool_call`` / ``time_to_tool_args_complete`` of the rows with a tool call;
- the ``reasoning``, ``tools``, ``prefix_cache`` and ``bursts`` blocks
  (see :mod:`llm_locust.results.traffic`).

Pure module: numpy, no Locust, no network.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from llm_locust.config.jsontypes import JsonObject
from llm_locust.protocol.reasoning import PHASES

__all__ = ["TrafficBuilder", "TrafficColumns"]

_TOKEN_PERCENTILES = (50, 90, 99)
_NAN = math.nan


class TrafficBuilder:
    """Rows in (with their index), sparse columns out."""

    def __init__(self) -> None:
        self.visible_at, self.visible = array("i"), array("d")
        self.split_at, self.reasoning, self.answer = array("i"), array("d"), array("d")
        self.sources: list[str] = []
        self.batched_at = array("i")
        self.cached_at, self.cached = array("i"), array("d")
        self.burst_at_row, self.wave, self.wave_time = array("i"), array("i"), array("d")
        self.offered_at = array("i")
        self.tool_at, self.tool_calls, self.first_tool = array("i"), array("i"), array("d")
        self.args_done, self.args_ok = array("d"), array("d")

    def add(self, index: int, row: Mapping[str, Any]) -> None:
        get = row.get
        visible = get("ttft_visible")
        if visible != get("ttft"):
            self.visible_at.append(index)
            self.visible.append(_NAN if visible is None else visible)
        reasoning = get("reasoning_tokens")
        if reasoning is not None:
            answer = get("answer_tokens")
            self.split_at.append(index)
            self.reasoning.append(reasoning)
            self.answer.append(_NAN if answer is None else answer)
            self.sources.append(get("reasoning_token_source") or "none")
        if (get("first_visible_tokens") or 0) > 1:
            self.batched_at.append(index)
        cached = get("cached_tokens")
        if cached is not None:
            self.cached_at.append(index)
            self.cached.append(cached)
        if get("tools_offered"):
            self.offered_at.append(index)
        calls = get("tool_calls")
        if calls:
            self.tool_at.append(index)
            self.tool_calls.append(int(calls))
            self.first_tool.append(_float(get("time_to_first_tool_call")))
            self.args_done.append(_float(get("time_to_tool_args_complete")))
            self.args_ok.append(_float(get("tool_args_json_ok")))
        wave = get("burst")
        if wave is not None:
            self.burst_at_row.append(index)
            self.wave.append(int(wave))
            self.wave_time.append(float(get("burst_at") or _NAN))

    def build(self) -> TrafficColumns:
        return TrafficColumns(self)


def _float(value: float | None) -> float:
    return _NAN if value is None else float(value)


def _ints(buffer: array[int]) -> np.ndarray:
    return np.frombuffer(buffer, dtype=np.int32) if len(buffer) else np.empty(0, dtype=np.int32)


def _floats(buffer: array[float]) -> np.ndarray:
    return np.frombuffer(buffer, dtype=float) if len(buffer) else np.empty(0, dtype=float)


class TrafficColumns:
    """The sparse columns; every method takes the run's columns and a row mask."""

    def __init__(self, built: TrafficBuilder) -> None:
        self.visible_at, self.visible = _ints(built.visible_at), _floats(built.visible)
        self.split_at, self.reasoning = _ints(built.split_at), _floats(built.reasoning)
        self.answer = _floats(built.answer)
        self.sources = np.asarray(built.sources, dtype=object)
        self.batched_at = _ints(built.batched_at)
        self.cached_at, self.cached = _ints(built.cached_at), _floats(built.cached)
        self.burst_rows, self.wave = _ints(built.burst_at_row), _ints(built.wave)
        self.wave_time = _floats(built.wave_time)
        self.offered_at = _ints(built.offered_at)
        self.tool_at, self.tool_calls = _ints(built.tool_at), _ints(built.tool_calls)
        self.first_tool, self.args_done = _floats(built.first_tool), _floats(built.args_done)
        self.args_ok = _floats(built.args_ok)

    def latencies(self, cols: Any, ok: np.ndarray) -> dict[str, np.ndarray]:
        """Latency columns (seconds) beside TTFT, of the rows ``ok`` (the rows the TTFT of the
        same statistic covers: ``Coverage.LATENCY``, :mod:`llm_locust.results.inclusion`)."""
        visible = cols.ttft.copy()
        visible[self.visible_at] = self.visible
        out = {"ttft_visible": _known(visible[ok])}
        if self.burst_rows.size:
            burst = _flag(cols.n, self.burst_rows)
            out["ttft_burst"] = _known(cols.ttft[ok & burst])
            out["ttft_base"] = _known(cols.ttft[ok & ~burst])
        if self.tool_at.size:
            timed = ok[self.tool_at]
            out["time_to_first_tool_call"] = _known(self.first_tool[timed])
            out["time_to_tool_args_complete"] = _known(self.args_done[timed])
        if self.cached_at.size:
            reporting = _flag(cols.n, self.cached_at)
            hit = _flag(cols.n, self.cached_at[self.cached > 0])
            out["ttft_cache_hit"] = _known(cols.ttft[ok & hit])
            out["ttft_cache_miss"] = _known(cols.ttft[ok & reporting & ~hit])
        return out

    def reasoning_block(self, ok: np.ndarray) -> JsonObject | None:
        """Reasoning and answer tokens of the successful rows with a split; ``None``: none."""
        chosen = ok[self.split_at]
        if not chosen.any():
            return None
        reasoning, answer = self.reasoning[chosen], _known(self.answer[chosen])
        out: JsonObject = {
            "requests": int(chosen.sum()),
            "with_reasoning": int((reasoning > 0).sum()),
            "total_reasoning_tokens": int(reasoning.sum()),
            "total_answer_tokens": int(answer.sum()),
        }
        out.update(_token_stats("reasoning_tokens", reasoning))
        out.update(_token_stats("answer_tokens", answer))
        out["sources"] = dict(sorted(Counter(self.sources[chosen].tolist()).items()))
        out["first_chunk_batched"] = int(ok[self.batched_at].sum())
        out["phases"] = dict(PHASES)
        return out

    def tools_block(self, ok: np.ndarray) -> JsonObject | None:
        """Tool calls of the successful rows: how many offered tools, how many were answered
        with a call, the calls, the share whose arguments parse as JSON; ``None``: no tools."""
        offered, called = ok[self.offered_at], ok[self.tool_at]
        if not offered.any() and not called.any():
            return None
        verdicts = _known(self.args_ok[called])
        return {
            "requests_offered": int(offered.sum()),
            "requests_with_tool_calls": int(called.sum()),
            "tool_calls": int(self.tool_calls[called].sum()),
            "args_json_ok_share": float(verdicts.mean()) if verdicts.size else None,
        }

    def cache_block(self, cols: Any, ok: np.ndarray) -> JsonObject | None:
        """Prefix-cache hits of the successful rows whose server reported ``cached_tokens``."""
        chosen = ok[self.cached_at]
        if not chosen.any():
            return None
        cached = self.cached[chosen]
        prompt = int(np.nan_to_num(cols.prompt[self.cached_at[chosen]]).sum())
        hits = int((cached > 0).sum())
        return {
            "requests_reporting": int(chosen.sum()),
            "hits": hits,
            "hit_ratio": hits / int(chosen.sum()),
            "cached_tokens": int(cached.sum()),
            "prompt_tokens": prompt,
            "token_hit_ratio": float(cached.sum()) / prompt if prompt else None,
        }

    def burst_block(self, cols: Any, mask: np.ndarray) -> dict[str, Any] | None:
        """Each wave's size and drain times over the rows of ``mask``; ``None``: no burst."""
        chosen = mask[self.burst_rows]
        if not chosen.any():
            return None
        rows, waves, times = self.burst_rows[chosen], self.wave[chosen], self.wave_time[chosen]
        per_wave = [
            _wave(cols, int(w), rows[waves == w], float(times[waves == w][0])) for w in np.unique(waves)
        ]
        queue = [w["queue_drain_s"] for w in per_wave if w["queue_drain_s"] is not None]
        drain = [w["drain_s"] for w in per_wave if w["drain_s"] is not None]
        return {
            "waves": len(per_wave),
            "requests": sum(w["sent"] for w in per_wave),
            "completed": sum(w["ok"] for w in per_wave),
            "mean_queue_drain_s": float(np.mean(queue)) if queue else None,
            "max_queue_drain_s": max(queue, default=None),
            "max_drain_s": max(drain, default=None),
            "per_wave": per_wave,
        }


def _wave(cols: Any, index: int, rows: np.ndarray, at: float) -> dict[str, Any]:
    """A wave drained when its last request got its first token (queue) or finished."""
    ok = cols.ok[rows]
    firsts = cols.start[rows] + cols.ttft[rows]
    ends = cols.start[rows] + cols.e2e[rows]
    admitted = not np.isnan(firsts).any()  # every request of the wave got its first token
    return {
        "wave": index,
        "at": at,
        "sent": int(rows.size),
        "ok": int(ok.sum()),
        "queue_drain_s": float(np.max(firsts) - at) if admitted else None,
        "drain_s": float(np.max(ends[ok]) - at) if ok.all() and rows.size else None,
    }


def _flag(n: int, rows: np.ndarray) -> np.ndarray:
    flags = np.zeros(n, dtype=bool)
    flags[rows] = True
    return flags


def _known(values: np.ndarray) -> np.ndarray:
    known: np.ndarray = values[~np.isnan(values)]
    return known


def _token_stats(name: str, values: np.ndarray) -> dict[str, float | None]:
    keys = [f"mean_{name}"] + [f"p{p}_{name}" for p in _TOKEN_PERCENTILES]
    if values.size == 0:
        return dict.fromkeys(keys)
    stats = [float(np.mean(values))] + [float(v) for v in np.percentile(values, _TOKEN_PERCENTILES)]
    return dict(zip(keys, stats, strict=True))
