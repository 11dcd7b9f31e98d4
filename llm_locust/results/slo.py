"""Service-level objectives: pass/fail per run (or per stage) and goodput.

Spec (``--slo``), comma-separated ``<metric><op><value>`` lines::

    success>=99%,ttft_p95<=5s,e2e_p95<=30s,tpot_p99<=100ms,e2e_p95_intended<=40s

- ``success``: share of requests that succeeded; ``>=``/``>`` only. Value ``99%``,
  ``0.99``, or a bare number above 1 read as a percentage (``99``); ``1`` means 100%.
- ``ttft|tpot|itl|e2e`` with a statistic ``_p50|_p90|_p95|_p99|_pNN[.N]|_mean|_max``
  (bare ``ttft`` means ``ttft_max``: every request); ``<=``/``<`` only. Value in ``ms``,
  ``s``, or a bare number of seconds.
- ``_intended`` (``ttft`` and ``e2e`` only) measures from the intended send time
  (``t_intended``, open-loop schedules), so queueing in the load generator itself counts;
  records without one fall back to the actual send.

YAML file (``--slo slo.yaml``): a mapping ``{success: ">=99%", ttft_p95: "<=5s"}``
(a bare number takes the natural operator: ``>=`` for success, ``<=`` otherwise), a
list of line strings, or either under a top-level ``slo:`` key.

Aggregates are exact, over successful non-warm-up requests (incomplete ones, in flight
when the load stopped, count neither as successes nor as failures): numpy ``percentile`` with
``method="linear"`` (as ``vllm bench serve``); ITL pools every gap of every request.

Goodput counts "good" requests: succeeded, and met each latency line as a per-request
threshold: ``ttft_p95<=5s`` -> the request's TTFT <= 5 s. For ``itl_pNN`` the request's
*own* ITL p-NN (``mean``/``max`` likewise) must meet it, so one stall fails a request
under ``itl_max`` but not under ``itl_p50``. Requests with undefined TPOT (<2 tokens) or
no ITL gaps pass those lines; undefined TTFT/E2E fail theirs (not shown to be met).
Pure module; seconds everywhere.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from llm_locust.record import INCOMPLETE, RequestRecord

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
]

LATENCY_METRICS = ("ttft", "tpot", "itl", "e2e")
_INTENDED_OK = ("ttft", "e2e")
_LINE = re.compile(r"^\s*([A-Za-z0-9_.]+)\s*(<=|>=|<|>)\s*(.+?)\s*$")
_METRIC = re.compile(r"^(ttft|tpot|itl|e2e)(?:_(p\d+(?:\.\d+)?|mean|max))?(_intended)?$")
_NUMBER = re.compile(r"^([0-9]*\.?[0-9]+(?:e[-+]?\d+)?)\s*(ms|s|%)?$")
K = TypeVar("K")


def percentile(values: Sequence[float] | np.ndarray, q: float) -> float | None:
    """Exact linear-interpolated percentile (numpy ``method="linear"``); ``None`` if empty."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return None
    return float(np.percentile(arr, q, method="linear"))


# --------------------------------------------------------------------------- spec


@dataclass(frozen=True)
class SloLine:
    """One objective. ``stat`` is ``pNN``, ``mean`` or ``max``; ``None`` for success."""

    metric: str
    stat: str | None
    op: str
    threshold: float  # seconds, or a fraction for success
    intended: bool = False
    text: str = ""

    @property
    def name(self) -> str:
        if self.metric == "success":
            return "success"
        return f"{self.metric}_{self.stat}" + ("_intended" if self.intended else "")

    def holds(self, value: float) -> bool:
        return {
            "<=": value <= self.threshold,
            "<": value < self.threshold,
            ">=": value >= self.threshold,
            ">": value > self.threshold,
        }[self.op]

    def aggregate(self, values: Sequence[float] | np.ndarray) -> float | None:
        return _stat(values, self.stat or "mean")


@dataclass(frozen=True)
class SloSpec:
    lines: tuple[SloLine, ...]

    def __iter__(self) -> Iterator[SloLine]:
        return iter(self.lines)

    def __len__(self) -> int:
        return len(self.lines)

    def to_json(self) -> list[str]:
        return [line.text for line in self.lines]


def _stat(values: Sequence[float] | np.ndarray, stat: str) -> float | None:
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return None
    if stat == "mean":
        return float(arr.mean())
    if stat == "max":
        return float(arr.max())
    return percentile(arr, float(stat[1:]))


def _bad(part: str, why: str) -> ValueError:
    return ValueError(f"--slo: {part.strip()!r}: {why}")


def _parse_metric(part: str, name: str) -> tuple[str, str | None, bool]:
    if name == "success":
        return "success", None, False
    m = _METRIC.match(name)
    if not m:
        raise _bad(part, "unknown metric (use success, or ttft/tpot/itl/e2e with _p95, _mean, _max ...)")
    metric, stat, intended = m.group(1), m.group(2) or "max", bool(m.group(3))
    if stat.startswith("p") and not 0 <= float(stat[1:]) <= 100:
        raise _bad(part, "percentile must be between 0 and 100")
    if intended and metric not in _INTENDED_OK:
        raise _bad(part, "_intended applies only to ttft and e2e")
    return metric, stat, intended


def _parse_value(part: str, metric: str, value: str) -> float:
    m = _NUMBER.match(value.strip().lower())
    if not m:
        raise _bad(part, f"bad value {value!r} (e.g. 500ms, 5s, 99%)")
    number, unit = float(m.group(1)), m.group(2)
    if metric == "success":
        if unit in ("ms", "s"):
            raise _bad(part, "success takes a percentage or a fraction")
        fraction = number / 100 if unit == "%" or number > 1 else number
        if fraction > 1:
            raise _bad(part, "success cannot exceed 100%")
        return fraction
    if unit == "%":
        raise _bad(part, "latencies take ms or s")
    return number / 1000 if unit == "ms" else number


def _parse_line(part: str) -> SloLine:
    m = _LINE.match(part)
    if not m:
        raise _bad(part, "expected <metric><op><value>, e.g. ttft_p95<=5s")
    name, op, value = m.group(1).lower(), m.group(2), m.group(3)
    metric, stat, intended = _parse_metric(part, name)
    if metric == "success" and op.startswith("<"):
        raise _bad(part, "success needs >= or >")
    if metric != "success" and op.startswith(">"):
        raise _bad(part, "latency objectives need <= or <")
    threshold = _parse_value(part, metric, value)
    return SloLine(metric, stat, op, threshold, intended, f"{name}{op}{value.strip()}")


def parse_slo(spec: str | Sequence[str] | Mapping[str, Any]) -> SloSpec:
    """``--slo`` text, a YAML file path, a list of lines, or a mapping (the YAML form)."""
    if isinstance(spec, Mapping):
        return _from_mapping(spec)
    if isinstance(spec, str):
        text = spec.strip()
        if text.lower().endswith((".yaml", ".yml", ".json")) and not _LINE.match(text):
            return load_slo_file(text)
        parts = [p for p in text.split(",") if p.strip()]
    else:
        parts = [str(p) for p in spec]
    if not parts:
        raise ValueError("--slo: empty objective list")
    lines = tuple(_parse_line(p) for p in parts)
    names = [line.name for line in lines]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"--slo: {dupes[0]!r} given more than once")
    return SloSpec(lines)


def _from_mapping(data: Mapping[str, Any]) -> SloSpec:
    parts = []
    for key, value in data.items():
        name = str(key).strip()
        if isinstance(value, bool) or value is None:
            raise _bad(f"{name}: {value}", "needs a value such as '<=5s'")
        text = str(value).strip()
        if not text.startswith(("<", ">")):
            text = (">=" if name.lower() == "success" else "<=") + text
        parts.append(name + text)
    return parse_slo(parts)


def load_slo_file(path: str | Path) -> SloSpec:
    """A YAML (or JSON) SLO file; see the module docstring for the accepted shapes."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise ValueError(f"--slo: cannot read {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"--slo: {path} is not valid YAML: {' '.join(str(exc).split())}") from None
    if isinstance(data, Mapping) and set(data) == {"slo"}:
        data = data["slo"]
    if isinstance(data, Mapping):
        return _from_mapping(data)
    if isinstance(data, list) and all(isinstance(x, str) for x in data):
        return parse_slo(data)
    raise ValueError(f"--slo: {path} must hold a mapping (ttft_p95: '<=5s') or a list of lines")


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
    return _stat(r.itl, line.stat or "max")


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
        if line.metric == "success":
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

    def to_json(self) -> dict[str, Any]:
        return {
            "objective": self.line.text,
            "name": self.line.name,
            "op": self.line.op,
            "threshold": self.line.threshold,
            "measured": self.measured,
            "n": self.n,
            "passed": self.passed,
        }


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

    def to_json(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
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
    else:
        values = _values(ok, line)
        measured, n = line.aggregate(values), len(values)
    passed = measured is not None and not math.isnan(measured) and line.holds(measured)
    return SloLineResult(line, measured, passed, n)


def evaluate(spec: SloSpec, records: Iterable[RequestRecord], duration_s: float) -> SloResult:
    """Check ``spec`` against non-warm-up ``records`` that ran over ``duration_s`` seconds.

    A line with nothing to measure (no requests, or no TPOT at all) fails: the objective
    was not shown to hold. Incomplete requests (in flight when the load stopped) are left
    out, of the success ratio too: the server neither served nor failed them.
    """
    rows = [r for r in records if not r.warmup and r.outcome != INCOMPLETE]
    ok = [r for r in rows if r.ok]
    results = [_line_result(line, rows, ok) for line in spec.lines]
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
