"""Confidence intervals for the statistics an SLO relies on, and the verdict they allow.

A percentile over 40 requests is a guess about the server, not a fact about it. Every SLO
line therefore carries a 95 % interval for its statistic, and its verdict is:

- ``pass`` when the whole interval meets the threshold,
- ``fail`` when the whole interval misses it,
- ``inconclusive`` when the interval straddles the threshold, or the sample is too small
  for the interval to have a bound on the side that matters.

The intervals:

- **Percentiles** (``ttft_p95`` ...): distribution-free, from order statistics. With ``n``
  sorted values and ``B ~ Binomial(n, q)``, ``[x_(l), x_(u)]`` covers the true q-quantile
  with probability >= 95 %, where ``l`` is the largest index with ``P(B <= l-1) <= 2.5 %``
  and ``u`` the smallest with ``P(B <= u-1) >= 97.5 %``. No assumption on the latency
  distribution; the requests are taken as independent draws (pooled ITL gaps of one
  request are not, so an ITL interval is narrower than the truth).
  The upper bound exists only when ``q^n <= 2.5 %``: **a P99 needs at least 368 requests
  before it can pass, a P95 72, a P90 36, a P50 6** (:func:`min_samples`). Below that a
  P99 line can fail (when enough requests are already over the threshold) but never pass.
- **Means**: Student's t interval (normal approximation of the mean, ``n >= 2``).
- **Success ratio**: Wilson score interval.
- **max** ("every request") is a fact about the requests sent, not an estimate: exact.

Pure module: numpy and the standard library.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

from llm_locust.load.search import Verdict

__all__ = [
    "LEVEL",
    "Interval",
    "mean_interval",
    "min_samples",
    "min_successes",
    "order_statistic_ranks",
    "quantile_interval",
    "shortfall",
    "statistic_interval",
    "t_quantile",
    "verdict",
    "wilson_interval",
]

LEVEL = 0.95
#: (lower, upper); ``None`` on a side the sample cannot bound.
Interval = tuple[float | None, float | None]


def min_samples(q: float, level: float = LEVEL) -> int:
    """The fewest values for which the order-statistic interval of the ``q`` quantile has an
    upper bound: the smallest ``n`` with ``q^n <= (1 - level) / 2``."""
    if not 0.0 < q < 1.0:
        raise ValueError(f"quantile must be in (0, 1), got {q}")
    return math.ceil(math.log((1.0 - level) / 2.0) / math.log(q))


def min_successes(threshold: float, level: float = LEVEL) -> int:
    """The fewest requests, all successful, whose Wilson lower bound reaches ``threshold``:
    ``n >= z^2 t / (1 - t)`` (381 for 99 %, 73 for 95 %)."""
    if threshold >= 1.0:
        raise ValueError("a success ratio of 100 % can never be shown by a sample")
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    return math.ceil(z * z * threshold / (1.0 - threshold) - 1e-9)


def shortfall(stat: str, op: str, threshold: float, n: int, interval: Interval) -> str:
    """Why a verdict is inconclusive, when the cause is the sample size; ``""`` otherwise."""
    lo, hi = interval
    if stat.startswith("p") and op in ("<=", "<") and hi is None and 0 < float(stat[1:]) < 100:
        need = min_samples(float(stat[1:]) / 100.0)
        return f"{n} values cannot bound a {stat.upper()} from above (it needs at least {need})"
    if stat == "success" and lo is not None and lo < threshold < 1.0 and n < min_successes(threshold):
        shown = f"success{op}{threshold * 100:g}%"
        return (
            f"{n} requests are too few to show {shown} ({min_successes(threshold)} without a failure needed)"
        )
    if stat == "mean" and n < 2:
        return "a mean needs at least 2 values for an interval"
    return ""


def _binomial_cdf(n: int, q: float) -> np.ndarray:
    """``P(B <= k)`` for ``k = 0..n``, ``B ~ Binomial(n, q)``, from log-pmf ratios (stable for
    large ``n``)."""
    k = np.arange(n, dtype=float)
    steps = np.log(n - k) - np.log(k + 1.0) + math.log(q) - math.log1p(-q)
    log_pmf = np.concatenate(([n * math.log1p(-q)], n * math.log1p(-q) + np.cumsum(steps)))
    pmf = np.exp(log_pmf - log_pmf.max())
    return np.cumsum(pmf / pmf.sum())


def _ranks(n: int, q: float, tail: float) -> tuple[int | None, int | None]:
    """0-based indices of the interval's order statistics (``None``: no such bound). Exact
    binomial; for ``n q (1 - q) > 2000`` (a pooled ITL of a million gaps) the normal
    approximation of the binomial, whose error in rank is then well under 1 %."""
    if n * q * (1 - q) > 2000:
        z = NormalDist().inv_cdf(1.0 - tail)
        half = z * math.sqrt(n * q * (1 - q))
        return max(math.floor(n * q - half) - 1, 0), min(math.ceil(n * q + half), n - 1)
    cdf = _binomial_cdf(n, q)
    below = np.nonzero(cdf <= tail)[0]
    above = np.nonzero(cdf[:n] >= 1.0 - tail)[0]
    return (int(below[-1]) if below.size else None), (int(above[0]) if above.size else None)


def order_statistic_ranks(n: int, q: float, level: float = LEVEL) -> tuple[int | None, int | None]:
    """The 0-based ranks of the order statistics bounding the ``q`` quantile of ``n`` values
    (``q`` in (0, 1); ``None``: no such bound), as :func:`quantile_interval` picks them."""
    return _ranks(n, q, (1.0 - level) / 2.0)


def quantile_interval(values: Sequence[float] | np.ndarray, q: float, level: float = LEVEL) -> Interval:
    """Distribution-free ``level`` interval for the ``q`` quantile (``q`` in (0, 1))."""
    x = np.sort(np.asarray(values, dtype=float))
    n = x.size
    if n == 0:
        return None, None
    if q >= 1.0:
        return float(x[-1]), float(x[-1])
    if q <= 0.0:
        return float(x[0]), float(x[0])
    # lower: x_(l) with P(B <= l-1) <= tail, l as large as possible (1-based: index l-1);
    # upper: x_(u) with P(B <= u-1) >= 1 - tail, u as small as possible, u <= n
    lo, hi = _ranks(n, q, (1.0 - level) / 2.0)
    return (None if lo is None else float(x[lo])), (None if hi is None else float(x[hi]))


def t_quantile(p: float, df: float) -> float:
    """Student's t quantile: exact for 1 and 2 degrees of freedom, a fourth-order Cornish-Fisher
    expansion above (within 0.2 % of the exact value at 3 degrees of freedom, closer beyond)."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be > 0, got {df}")
    if df <= 1.0:
        return math.tan(math.pi * (p - 0.5))
    if df <= 2.0:
        return (2.0 * p - 1.0) / math.sqrt(2.0 * p * (1.0 - p))
    z = NormalDist().inv_cdf(p)
    v = float(df)
    terms = (
        (z**3 + z) / (4 * v),
        (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2),
        (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3),
        (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / (92160 * v**4),
    )
    return z + sum(terms)


def mean_interval(values: Sequence[float] | np.ndarray, level: float = LEVEL) -> Interval:
    """Student's t interval for the mean; unbounded with fewer than two values."""
    x = np.asarray(values, dtype=float)
    if x.size < 2:
        return None, None
    half = t_quantile(0.5 + level / 2.0, x.size - 1) * float(x.std(ddof=1)) / math.sqrt(x.size)
    mean = float(x.mean())
    return mean - half, mean + half


def wilson_interval(successes: int, n: int, level: float = LEVEL) -> Interval:
    """Wilson score interval for a proportion."""
    if n <= 0:
        return None, None
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1.0 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def statistic_interval(
    stat: str, values: Sequence[float] | np.ndarray, successes: int = 0, n: int = 0
) -> Interval:
    """The interval of an SLO statistic: ``pNN``, ``mean``, ``max`` (exact) over ``values``,
    or ``success`` (``successes`` of ``n``)."""
    if stat == "success":
        return wilson_interval(successes, n)
    x = np.asarray(values, dtype=float)
    if stat == "max":
        return (float(x.max()), float(x.max())) if x.size else (None, None)
    if stat == "mean":
        return mean_interval(x)
    return quantile_interval(x, float(stat[1:]) / 100.0)


def verdict(op: str, threshold: float, interval: Interval) -> Verdict:
    """``pass`` / ``fail`` / ``inconclusive`` for ``statistic OP threshold`` given its interval."""
    lo, hi = interval
    if op in ("<=", "<"):
        good = hi is not None and (hi <= threshold if op == "<=" else hi < threshold)
        bad = lo is not None and (lo > threshold if op == "<=" else lo >= threshold)
    elif op in (">=", ">"):
        good = lo is not None and (lo >= threshold if op == ">=" else lo > threshold)
        bad = hi is not None and (hi < threshold if op == ">=" else hi <= threshold)
    elif op == "==":
        good = lo is not None and hi is not None and lo == threshold == hi
        bad = (lo is not None and lo > threshold) or (hi is not None and hi < threshold)
    else:
        raise ValueError(f"unknown operator {op!r}")
    if good:
        return Verdict.PASS
    return Verdict.FAIL if bad else Verdict.INCONCLUSIVE
