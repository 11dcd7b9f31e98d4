"""The 95 % interval of each difference ``B - A`` that ``report --compare`` shows, and its verdict.

Which interval, and why:

- **Percentiles** (TTFT, TPOT, E2E): distribution-free, from order statistics, the same
  intervals the report draws on every stage (:func:`~llm_locust.results.confidence.order_statistic_ranks`).
  Each run's percentile gets a 97.5 % interval ``[lo, hi]``; then ``[lo_B - hi_A, hi_B - lo_A]``
  covers the true difference with probability >= 95 % (both cover at once with >= 1 - 2.5 % -
  2.5 %, Bonferroni: no assumption on the latency distributions, nor on the runs being
  independent). Why not a bootstrap over the records: a bootstrap of a tail percentile (P99 of a
  few hundred requests) is known to undercover, it needs random draws (a seed) and thousands of
  resamples, while this costs one partial sort of each run's values (well under a second for
  1e5 records) and is exact under the one assumption every statistic here makes: the requests
  are independent draws. A side a run has too few requests to bound (a P99 below 368 requests)
  leaves the difference's interval open on that side.
- **ITL**: the gaps of one request are not independent of each other, so the requests are the
  units: the ranks come from the number of requests, applied to the pooled gaps' quantiles
  (with the gaps as units the interval would be far narrower than the truth).
- **Rates** (req/s, output tok/s): counts in the run's duration, with a compound-Poisson
  variance (completions: ``var = n``; output tokens: ``var = sum of x^2`` over the requests),
  and a normal interval of the difference. Conservative for closed-loop runs, whose completions
  come more evenly than a Poisson process; optimistic for bursty open-loop arrivals.
- **Counts** (completed, failed requests): what happened, not an estimate: no interval.

Deterministic: nothing is drawn at random, so the same folders give the same intervals.
A difference is "no significant difference" when its interval contains 0; "too few requests"
when an open side lets it reach 0. Pure: numpy and the results package.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from statistics import NormalDist

import numpy as np

from llm_locust.results.columns import Columns, Part
from llm_locust.results.confidence import LEVEL, order_statistic_ranks
from llm_locust.results.stats import ItlValues
from llm_locust.results.summary_model import Stats

__all__ = ["Difference", "Kind", "Scope", "difference", "percentile_bounds", "rate_sd"]

#: each run's percentile interval, so that the difference's is at least LEVEL (Bonferroni)
_SIDE_LEVEL = 1.0 - (1.0 - LEVEL) / 2.0
_Z = NormalDist().inv_cdf(1.0 - (1.0 - LEVEL) / 2.0)


class Kind(StrEnum):
    """How a compared key is estimated (see the module docstring)."""

    COUNT = "count"
    RATE = "rate"
    PERCENTILE = "percentile"
    ITL = "itl"


@dataclass(frozen=True)
class Difference:
    """``B - A`` and its 95 % interval; ``lo``/``hi`` ``None``: unbounded on that side."""

    delta: float | None
    lo: float | None = None
    hi: float | None = None
    bounded: bool = False  # False: no interval at all (a count, or no data)

    @property
    def verdict(self) -> str:
        if not self.bounded or self.delta is None:
            return ""
        if self.lo is not None and self.lo > 0:
            return "B higher"
        if self.hi is not None and self.hi < 0:
            return "B lower"
        if self.lo is None or self.hi is None:
            return "too few requests to tell"
        return "no significant difference"


def percentile_bounds(values: np.ndarray, q: float) -> tuple[float | None, float | None]:
    """A run's 97.5 % interval of the ``q`` quantile of ``values`` (one partial sort)."""
    n = int(values.size)
    if n == 0:
        return None, None
    lo, hi = order_statistic_ranks(n, q, _SIDE_LEVEL)
    picks = [r for r in (lo, hi) if r is not None]
    part = np.partition(values, picks) if picks else values
    return (None if lo is None else float(part[lo])), (None if hi is None else float(part[hi]))


def _itl_bounds(itl: ItlValues, requests: int, q: float) -> tuple[float | None, float | None]:
    if not itl.count or not requests:
        return None, None
    lo, hi = order_statistic_ranks(requests, q, _SIDE_LEVEL)
    out = []
    for rank in (lo, hi):
        fraction = None if rank is None else rank / max(requests - 1, 1)
        out.append(None if fraction is None else itl.stat(f"p{fraction * 100.0!r}"))
    return out[0], out[1]


def rate_sd(rate: float, counts: np.ndarray) -> float:
    """The standard deviation of a rate ``rate = sum(counts) / T`` under a compound-Poisson
    model: ``sqrt(sum(counts^2)) / T``."""
    total = float(counts.sum())
    return rate * math.sqrt(float((counts * counts).sum())) / total if total > 0 else math.inf


@dataclass(frozen=True)
class Scope:
    """One side of a comparison: the summary's statistics (the run's, or a stage row's) and its
    measured rows."""

    row: Stats
    part: Part

    @property
    def cols(self) -> Columns:
        return self.part.cols


def _bounds(scope: Scope, key: str, kind: Kind) -> tuple[float | None, float | None]:
    """A run's interval of ``key`` (milliseconds), for a percentile or ITL key ``pNN_name_ms``."""
    q = float(key.split("_")[0][1:]) / 100.0
    timed = scope.part.timed()
    if kind == Kind.ITL:
        lo, hi = _itl_bounds(scope.part.itl(), int(timed.sum()), q)
    else:
        column = {"ttft": scope.cols.ttft, "tpot": scope.cols.tpot, "e2el": scope.cols.e2e}[key.split("_")[1]]
        values = column[timed]
        lo, hi = percentile_bounds(values[~np.isnan(values)], q)
    return (None if lo is None else lo * 1000.0), (None if hi is None else hi * 1000.0)


def difference(key: str, kind: Kind, a: Scope, b: Scope) -> Difference:
    """``B - A`` of ``key`` with its interval (:class:`Kind` says how)."""
    va, vb = a.row.stated(key), b.row.stated(key)
    delta = None if va is None or vb is None else vb - va
    if delta is None or kind == Kind.COUNT:
        return Difference(delta)
    if kind == Kind.RATE:
        sds = [_rate_sd(key, s) for s in (a, b)]
        half = _Z * math.sqrt(sds[0] ** 2 + sds[1] ** 2)
        return Difference(delta, delta - half, delta + half, bounded=math.isfinite(half))
    (lo_a, hi_a), (lo_b, hi_b) = _bounds(a, key, kind), _bounds(b, key, kind)
    lo = None if lo_b is None or hi_a is None else lo_b - hi_a
    hi = None if hi_b is None or lo_a is None else hi_b - lo_a
    return Difference(delta, lo, hi, bounded=True)


def _rate_sd(key: str, scope: Scope) -> float:
    rate = scope.row.stated(key) or 0.0
    ok = scope.part.ok()
    if key == "request_throughput":
        return rate_sd(rate, np.ones(int(ok.sum())))
    return rate_sd(rate, np.nan_to_num(scope.cols.completion[ok]))
