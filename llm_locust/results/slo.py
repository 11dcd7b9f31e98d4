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
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from llm_locust.config.jsontypes import JsonObject, JsonValue
from llm_locust.config.slo import SloKind, SloLine, SloSpec, load_slo_file, parse_slo
from llm_locust.load.search import Verdict
from llm_locust.record import OK, RequestRecord
from llm_locust.results.columns import Columns, Part, itl_own_stat
from llm_locust.results.confidence import Interval, shortfall, statistic_interval, verdict
from llm_locust.results.inclusion import Coverage
from llm_locust.results.stats import percentile

__all__ = [
    "SeriesJudge",
    "SloLine",
    "SloLineResult",
    "SloResult",
    "SloSpec",
    "evaluate",
    "evaluate_by_stage",
    "highest_passing_stage",
    "is_good",
    "itl_stats_of",
    "load_slo_file",
    "parse_slo",
    "slo_part",
    "statistic",
]

K = TypeVar("K")
_OPS = {"<=": operator.le, "<": operator.lt, ">=": operator.ge, ">": operator.gt}
Row = Mapping[str, Any]


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


def itl_stats_of(spec: SloSpec | None) -> set[str]:
    """The per-request ITL statistics the SLO's ``itl_*`` lines judge each request by."""
    return {line.stat or "max" for line in spec or () if line.metric == "itl"}


Rows = Part | Columns | Iterable[Row] | Iterable[RequestRecord]


def slo_part(rows: Rows, spec: SloSpec) -> Part:
    """``rows`` (columns, rows, or records as a test builds them) as a :class:`Part` with the
    per-request ITL statistics ``spec`` needs."""
    if isinstance(rows, Part):
        return rows
    if isinstance(rows, Columns):
        return rows.part()
    as_rows = (r.to_json() if isinstance(r, RequestRecord) else r for r in rows)
    return Columns.from_rows(as_rows, itl_stats_of(spec)).part()


# --------------------------------------------------------------------------- per request


def _request_value(row: Row, line: SloLine) -> float | None:
    """A request's own value for ``line`` from its row (undefined -> ``None``)."""
    if line.metric == "itl":
        return itl_own_stat(row.get("itl") or (), line.stat or "max")
    value = row.get(line.metric)
    if value is not None and line.intended:
        value += row.get("send_lag") or 0.0
    return value


def is_good(row: Row, spec: SloSpec) -> bool:
    """Succeeded and met every latency line as a per-request threshold (one row)."""
    if row.get("outcome") != OK:
        return False
    for line in spec.lines:
        if line.metric == "success" or line.kind is not SloKind.REQUEST:
            continue
        value = _request_value(row, line)
        if value is None:
            if line.metric in ("ttft", "e2e"):
                return False
            continue
        if not line.holds(value):
            return False
    return True


def _values(part: Part, line: SloLine, mask: np.ndarray) -> np.ndarray:
    """Each request's value for ``line`` over ``mask`` (``nan``: undefined)."""
    cols = part.cols
    if line.metric == "itl":
        own: np.ndarray = cols.itl_own[line.stat or "max"][mask]
        return own
    values: np.ndarray = getattr(cols, line.metric)[mask]
    return values + np.nan_to_num(cols.lag[mask]) if line.intended else values


def _good(part: Part, spec: SloSpec, ok: np.ndarray) -> np.ndarray:
    """The successful requests of ``ok`` that met every latency line (same rules as :func:`is_good`)."""
    good = np.ones(int(ok.sum()), dtype=bool)
    for line in spec.lines:
        if line.metric == "success" or line.kind is not SloKind.REQUEST:
            continue
        values = _values(part, line, ok)
        defined = ~np.isnan(values)
        held = np.zeros(values.size, dtype=bool)
        held[defined] = _OPS[line.op](values[defined], line.threshold)
        good &= held | (~defined & (line.metric not in ("ttft", "e2e")))
    return good


@dataclass
class SloLineResult:
    line: SloLine
    measured: float | None
    passed: bool
    n: int
    interval: Interval = (None, None)
    verdict: Verdict = Verdict.INCONCLUSIVE
    note: str = ""

    def to_json(self) -> JsonObject:
        out: JsonObject = {
            "objective": self.line.text,
            "name": self.line.name,
            "kind": self.line.kind.value,
            "op": self.line.op,
            "threshold": self.line.threshold,
            "measured": self.measured,
            "n": self.n,
            "passed": self.passed,
            "interval": list[JsonValue](self.interval),
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
    extra: JsonObject = field(default_factory=dict)

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
    def verdict(self) -> Verdict:
        verdicts = {line.verdict for line in self.lines}
        if Verdict.FAIL in verdicts:
            return Verdict.FAIL
        return Verdict.PASS if verdicts == {Verdict.PASS} else Verdict.INCONCLUSIVE

    def to_json(self) -> JsonObject:
        return {
            "passed": self.passed,
            "verdict": self.verdict,
            "objectives": list[JsonValue](line.to_json() for line in self.lines),
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


def _line_result(line: SloLine, part: Part, rows: np.ndarray, ok: np.ndarray) -> SloLineResult:
    """``line`` judged on ``part``: success over ``rows`` (``Coverage.SUCCESS``) of which ``ok``
    succeeded; a latency over ``Coverage.LATENCY`` (:mod:`llm_locust.results.inclusion`)."""
    if line.metric == "success":
        n = int(rows.sum())
        measured = int(ok.sum()) / n if n else None
        interval = statistic_interval("success", [], int(ok.sum()), n)
    elif line.metric == "itl":
        pooled = part.itl()
        measured, n = pooled.stat(line.stat or "mean"), pooled.count
        interval = pooled.interval(line.stat or "max")
    else:
        values = _values(part, line, part.covered(Coverage.LATENCY))
        values = values[~np.isnan(values)]
        measured, n = statistic(values, line.stat or "mean"), int(values.size)
        interval = statistic_interval(line.stat or "max", values)
    passed = measured is not None and not math.isnan(measured) and line.holds(measured)
    judged = verdict(line.op, line.threshold, interval)
    why = (
        shortfall(line.stat or "success", line.op, line.threshold, n, interval)
        if judged is Verdict.INCONCLUSIVE
        else ""
    )
    return SloLineResult(line, measured, passed, n, interval, judged, why)


#: Judges one series line (server metrics, drift) for the records' span: see slo_series.
SeriesJudge = Callable[[SloLine], SloLineResult]


def _unjudged(line: SloLine) -> SloLineResult:
    need = "--server-metrics" if line.kind is SloKind.SERVER else "time windows"
    return SloLineResult(line, None, False, 0, note=f"not evaluated here (needs {need})")


def evaluate(spec: SloSpec, rows: Rows, duration_s: float, series: SeriesJudge | None = None) -> SloResult:
    """Check ``spec`` against the records of ``rows`` that ran over ``duration_s`` s, as the
    inclusion rule covers them (:mod:`llm_locust.results.inclusion`: no warm-up, ramp-up or
    incomplete request; no latency the client stalled inside); ``series`` judges the server
    and drift lines (without it they fail, unjudged).

    A line with nothing to measure (no requests, or no TPOT at all) fails: the objective
    was not shown to hold. Incomplete requests (in flight when the load stopped) are left
    out, of the success ratio too: the server neither served nor failed them.
    """
    part = slo_part(rows, spec)
    mask = part.covered(Coverage.SUCCESS)  # a cancelled request was neither served nor failed
    ok = part.covered(Coverage.COMPLETED)
    judge = series or _unjudged
    results = [
        _line_result(line, part, mask, ok) if line.kind is SloKind.REQUEST else judge(line)
        for line in spec.lines
    ]
    good = _good(part, spec, ok)
    return SloResult(
        lines=results,
        passed=bool(results) and all(x.passed for x in results),
        requests=int(mask.sum()),
        succeeded=int(ok.sum()),
        good=int(good.sum()),
        good_output_tokens=int(np.nan_to_num(part.cols.completion[ok][good]).sum()),
        duration_s=float(duration_s),
    )


def evaluate_by_stage(spec: SloSpec, rows: Rows, durations_s: Mapping[int, float]) -> dict[int, SloResult]:
    """One result per stage index in ``durations_s`` (measured, i.e. post-warm-up, seconds)."""
    part = slo_part(rows, spec)
    return {i: evaluate(spec, part.stage(i), durations_s[i]) for i in sorted(durations_s)}


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
