"""SLO terms judged from series rather than from single requests: the server's own metrics
and the soak trend. The grammar only; evaluation is :mod:`llm_locust.results.slo_series`.

Server terms (need ``--server-metrics``; over the scrapes inside the run or the stage)::

    kv_cache_usage_max<=95%     kv_cache_usage_mean / _pNN too; 95%, 0.95 or 95
    waiting_p95<=10             waiting or running requests: _max, _mean, _pNN; a count
    preemptions==0              the preemption counter's increase; ==, <= or <
    gpu_mem_max<=95%            the fullest GPU's memory (a DCGM exporter among --server-metrics)
    gpu_util_mean<=90%          the busiest GPU's utilisation

Drift terms (the slope of a time-window series, per 10 minutes, see
:mod:`llm_locust.results.drift`)::

    ttft_p95_drift<=50ms        ttft, tpot or e2e with _p50, _p95 or _p99: ms or s per 10 min
    e2e_p95_drift<=1s/h         an explicit /10min, /min or /h rescales the value
    error_rate_drift<=0.5%      percentage points per 10 min
    kv_cache_usage_drift<=5%    percentage points per 10 min
    waiting_drift<=2            waiting requests per 10 min

Thresholds are stored per 10 minutes in seconds (latency drift), fractions (error rate,
KV-cache usage) or counts. Depends on nothing else in the package.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["DRIFT_PER_S", "SERVER_GAUGES", "SeriesTerm", "SloKind", "parse_series_term"]

DRIFT_PER_S = 600.0
SERVER_GAUGES = ("kv_cache_usage", "waiting", "running", "gpu_mem", "gpu_util")
_SERVER = re.compile(r"^(kv_cache_usage|waiting|running|gpu_mem|gpu_util)_(max|mean|p\d+(?:\.\d+)?)$")
_RATIOS = ("kv_cache_usage", "gpu_mem", "gpu_util")
_DRIFT_LATENCY = re.compile(r"^(ttft|tpot|e2e)_(p50|p95|p99)_drift$")
_DRIFT_OTHER = ("error_rate_drift", "kv_cache_usage_drift", "waiting_drift")
_VALUE = re.compile(r"^([0-9]*\.?[0-9]+(?:e[-+]?\d+)?)\s*(ms|s|%)?\s*(?:/\s*(10min|min|h))?$")
_PER = {None: 1.0, "10min": 1.0, "min": 10.0, "h": 1.0 / 6.0}


class SloKind(StrEnum):
    """What an SLO line is judged from (its value is the summary's ``kind``); the lines are
    :class:`llm_locust.config.slo.SloLine`, the kind lives here, below them."""

    REQUEST = "request"  # each request's outcome or latency
    SERVER = "server"  # the server's metrics (--server-metrics)
    DRIFT = "drift"  # the slope of a time-window series


@dataclass(frozen=True)
class SeriesTerm:
    """What a series line measures: ``kind`` is ``SloKind.SERVER`` or ``SloKind.DRIFT``."""

    kind: SloKind
    metric: str  # kv_cache_usage | waiting | running | preemptions | ttft_p95 | error_rate ...
    stat: str | None  # max | mean | pNN for server gauges; "drift"; None for preemptions
    threshold: float


def parse_series_term(name: str, op: str, value: str) -> SeriesTerm | None:
    """The term for ``name`` (``None`` if ``name`` is not a series term); raises ``ValueError``
    with the reason when the operator or the value does not fit the term."""
    number, unit, per = _number(value)
    if name == "preemptions":
        if op not in ("==", "<=", "<"):
            raise ValueError("preemptions takes ==, <= or <")
        _plain(unit, per, "a count, e.g. preemptions==0")
        return SeriesTerm(SloKind.SERVER, "preemptions", None, number)
    m = _SERVER.match(name)
    if m:
        _upper(op)
        gauge, stat = m.group(1), m.group(2)
        if stat.startswith("p") and not 0 <= float(stat[1:]) <= 100:
            raise ValueError("percentile must be between 0 and 100")
        if per is not None:
            raise ValueError("a server gauge takes a level, not a rate")
        threshold = _fraction(number, unit) if gauge in _RATIOS else _count(number, unit)
        return SeriesTerm(SloKind.SERVER, gauge, stat, threshold)
    m = _DRIFT_LATENCY.match(name)
    if m:
        _upper(op)
        if unit not in ("ms", "s"):
            raise ValueError("a latency drift takes ms or s (per 10 min), e.g. 50ms")
        seconds = number / 1000 if unit == "ms" else number
        return SeriesTerm(SloKind.DRIFT, f"{m.group(1)}_{m.group(2)}", "drift", seconds * _PER[per])
    if name in _DRIFT_OTHER:
        _upper(op)
        metric = name[: -len("_drift")]
        if metric == "waiting":
            threshold = _count(number, unit)
        else:
            threshold = _fraction(number, unit, bare_is_percent=False)
        return SeriesTerm(SloKind.DRIFT, metric, "drift", threshold * _PER[per])
    return None


def _number(value: str) -> tuple[float, str | None, str | None]:
    m = _VALUE.match(value.strip().lower())
    if not m:
        raise ValueError(f"bad value {value!r} (e.g. 95%, 10, 50ms)")
    return float(m.group(1)), m.group(2), m.group(3)


def _upper(op: str) -> None:
    if op not in ("<=", "<"):
        raise ValueError("this objective is an upper bound: use <= or <")


def _plain(unit: str | None, per: str | None, example: str) -> None:
    if unit is not None or per is not None:
        raise ValueError(f"takes {example}")


def _count(number: float, unit: str | None) -> float:
    if unit is not None:
        raise ValueError("takes a number of requests, e.g. 10")
    return number


def _fraction(number: float, unit: str | None, bare_is_percent: bool = True) -> float:
    """``95%`` -> 0.95; a bare number above 1 is a percentage when ``bare_is_percent``."""
    if unit in ("ms", "s"):
        raise ValueError("takes a percentage, e.g. 95%")
    fraction = number / 100 if unit == "%" or (bare_is_percent and number > 1) else number
    if fraction > 1:
        raise ValueError("cannot exceed 100%")
    return fraction
