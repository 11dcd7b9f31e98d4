"""Service-level objectives: pass/fail per run (or per stage) and goodput.

The SLO itself (``--slo`` text or YAML file, the grammar of its lines, including terms on the
server's metrics and on drift) is :mod:`llm_locust.config.slo`; this module evaluates a parsed
:class:`SloSpec` on records.

Aggregates are exact, over successful non-warm-up requests (incomplete ones, in flight
when the load stopped, count neither as successes nor as failures): numpy ``percentile`` with
``method="linear"`` (as ``vllm bench serve``); ITL pools every gap of every request.

Goodput counts "good" requests: succeeded, and met each latency line as a per-request
threshold: ``ttft_p95<=5s`` -> the request's TTFT <= 5 s. For ``itl_pNN`` the request's
*own* ITL p-NN (``mean``/``max`` likewise) must meet it, so one stall fails a request
under ``itl_max`` but not under ``itl_p50``. Requests with undefined TPOT (<2 tokens) or
no ITL gaps pass those lines; undefined TTFT/E2E fail theirs (not shown to be met).

Every line also gets a 95 % interval for its statistic and a ``verdict`` (``pass``,
``fail`` or ``inconclusive``; :mod:`llm_locust.results.confidence` states the rule); the
result's ``verdict`` is ``fail`` if a line surely fails, ``pass`` if every line surely
passes, else ``inconclusive``. ``passed`` stays the point-estimate answer (exit code 3).
Pure module; seconds everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from llm_locust.config.slo import LATENCY_METRICS, SloLine, SloSpec, load_slo_file, parse_slo
from llm_locust.record import INCOMPLETE, RequestRecord
from llm_locust.results.confidence import Interval, shortfall, statistic_interval, verdict

__all__ = [
    "LATENCY_METRICS",
    "SloLine",
    "SloLineResult",
    "SloResult",
    "SloSpec",
    "evaluate",
    "evaluate_by_stage",
    "highest_passing_stage",
    "is_good",
    "load_slo_file",
    "parse_slo",
    "percentile",
    "statistic",
]

K = TypeVar("K")


def percentile(values: Sequence[float] | np.ndarray, q: float) -> float | None:
    """Exact linear-interpolated percentile (numpy ``method="linear"``); ``None`` if empty."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return None
    return float(np.percentile(arr, q, method="linear"))


def statistic(values: Sequence[float] | np.ndarray, stat: str) -> float | None:
    """``stat`` (``mean``, ``max``, ``pNN``) of ``values``; ``None`` if empty."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return None
    if stat == "mean":
        return float(arr.mean())
    if stat == "max":
        return float(arr.max())
    return percentile(arr, float(stat[1:]))


# --------------------------------------------------------------------------- evaluation


def _start(r: RequestRecord, intended: bool) -> float:
    return r.t_intended if intended and r.t_intended is not None else r.t_sent


def _request_value(r: RequestRecord, line: SloLine) -> float | None:
    """The request's own value for ``line`` (undefined -> ``None``)."""
    if line.metric == "ttft":
        return None if r.t_first_token is None else r.t_first_token - _start(r, line.intended)
    if line.metric == "e2e":
        return None if r.t_end is None else r.t_end - _start(r, line.intended)
    if line.metric == "tpot":
        return r.tpot
    return statistic(r.itl, line.stat or "max")


def _values(records: Sequence[RequestRecord], line: SloLine) -> list[float]:
    """Population for the aggregate: one value per request, or every ITL gap pooled."""
    if line.metric == "itl":
        return [gap for r in records for gap in r.itl]
    return [v for r in records if (v := _request_value(r, line)) is not None]


def is_good(r: RequestRecord, spec: SloSpec) -> bool:
    """Succeeded and met every latency line as a per-request threshold."""
    if not r.ok:
        return False
    for line in spec.lines:
        if line.metric == "success" or line.kind != "request":
            continue
        value = _request_value(r, line)
        if value is None:
            if line.metric in ("ttft", "e2e"):
                return False
            continue
        if not line.holds(value):
            return False
    return True


@dataclass
class SloLineResult:
    line: SloLine
    measured: float | None
    passed: bool
    n: int
    interval: Interval = (None, None)
    verdict: str = "inconclusive"
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        out = {
            "objective": self.line.text,
            "name": self.line.name,
            "kind": self.line.kind,
            "op": self.line.op,
            "threshold": self.line.threshold,
            "measured": self.measured,
            "n": self.n,
            "passed": self.passed,
            "interval": list(self.interval),
            "verdict": self.verdict,
        }
        if self.note:
            out["note"] = self.note
        return out


@dataclass
class SloResult:
    lines: list[SloLineResult]
    passed: bool
    requests: int
    succeeded: int
    good: int
    good_output_tokens: int
    duration_s: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def success_rate(self) -> float | None:
        return self.succeeded / self.requests if self.requests else None

    @property
    def goodput_rps(self) -> float:
        return self.good / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def goodput_tokens_per_s(self) -> float:
        return self.good_output_tokens / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def verdict(self) -> str:
        verdicts = {line.verdict for line in self.lines}
        if "fail" in verdicts:
            return "fail"
        return "pass" if verdicts == {"pass"} else "inconclusive"

    def to_json(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "verdict": self.verdict,
            "objectives": [line.to_json() for line in self.lines],
            "requests": self.requests,
            "succeeded": self.succeeded,
            "success_rate": self.success_rate,
            "good_requests": self.good,
            "good_fraction": self.good / self.requests if self.requests else None,
            "goodput_rps": self.goodput_rps,
            "goodput_output_tokens_per_s": self.goodput_tokens_per_s,
            "duration_s": self.duration_s,
            **self.extra,
        }


def _line_result(line: SloLine, records: list[RequestRecord], ok: list[RequestRecord]) -> SloLineResult:
    if line.metric == "success":
        measured = len(ok) / len(records) if records else None
        n = len(records)
        interval = statistic_interval("success", [], len(ok), n)
    else:
        values = _values(ok, line)
        measured, n = statistic(values, line.stat or "mean"), len(values)
        interval = statistic_interval(line.stat or "max", values)
    passed = measured is not None and not math.isnan(measured) and line.holds(measured)
    judged = verdict(line.op, line.threshold, interval)
    why = (
        shortfall(line.stat or "success", line.op, line.threshold, n, interval)
        if judged == "inconclusive"
        else ""
    )
    return SloLineResult(line, measured, passed, n, interval, judged, why)


#: Judges one series line (server metrics, drift) for the records' span: see slo_series.
SeriesJudge = Callable[[SloLine], SloLineResult]


def _unjudged(line: SloLine) -> SloLineResult:
    need = "--server-metrics" if line.kind == "server" else "time windows"
    return SloLineResult(line, None, False, 0, note=f"not evaluated here (needs {need})")


def evaluate(
    spec: SloSpec, records: Iterable[RequestRecord], duration_s: float, series: SeriesJudge | None = None
) -> SloResult:
    """Check ``spec`` against non-warm-up ``records`` that ran over ``duration_s`` seconds;
    ``series`` judges the server and drift lines (without it they fail, unjudged).

    A line with nothing to measure (no requests, or no TPOT at all) fails: the objective
    was not shown to hold. Incomplete requests (in flight when the load stopped) are left
    out, of the success ratio too: the server neither served nor failed them.
    """
    rows = [r for r in records if not r.warmup and r.outcome != INCOMPLETE]
    ok = [r for r in rows if r.ok]
    judge = series or _unjudged
    results = [_line_result(line, rows, ok) if line.kind == "request" else judge(line) for line in spec.lines]
    good = [r for r in ok if is_good(r, spec)]
    return SloResult(
        lines=results,
        passed=bool(results) and all(x.passed for x in results),
        requests=len(rows),
        succeeded=len(ok),
        good=len(good),
        good_output_tokens=sum(r.completion_tokens or 0 for r in good),
        duration_s=float(duration_s),
    )


def evaluate_by_stage(
    spec: SloSpec, records: Iterable[RequestRecord], durations_s: Mapping[int, float]
) -> dict[int, SloResult]:
    """One result per stage index in ``durations_s`` (measured, i.e. post-warm-up, seconds),
    from records grouped by ``RequestRecord.stage``.
    """
    groups: dict[int, list[RequestRecord]] = {i: [] for i in durations_s}
    for r in records:
        if r.stage in groups:
            groups[r.stage].append(r)
    return {i: evaluate(spec, groups[i], durations_s[i]) for i in sorted(groups)}


def highest_passing_stage(
    results: Sequence[tuple[K, SloResult]] | Mapping[K, SloResult],
    contiguous: bool = True,
    passed: Callable[[SloResult], bool] | None = None,
) -> K | None:
    """The key of the highest-load stage that met the SLO; ``results`` ordered by load.

    ``contiguous=True`` (the capacity answer): the last pass before the first failure,
    so a lucky pass above a failed stage does not count. ``False``: the last pass anywhere.
    ``None`` if no stage qualifies.
    """
    items = list(results.items()) if isinstance(results, Mapping) else list(results)
    check = passed or (lambda res: res.passed)
    best: K | None = None
    for key, res in items:
        if check(res):
            best = key
        elif contiguous:
            break
    return best
