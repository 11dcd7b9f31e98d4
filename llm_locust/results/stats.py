"""The one percentile function of the results side, the summary's latency statistics, and pooled ITL.

Percentiles are exact over the records: numpy's linear interpolation (``method="linear"``,
as ``vllm bench serve``), never Locust's rounded buckets. Every statistic of the results
side (the summary's ``pNN_X_ms``, SLO lines, send lag, length accuracy) goes through
:func:`percentiles`.

Per-chunk ITL is the one population that grows with the tokens, not the requests: a
million 1,000-token requests hold a billion gaps. :class:`ItlPool` keeps the gaps exactly
up to :data:`ITL_EXACT_LIMIT` values in all (160 MB of float64) and, past that, folds every
pool into a mergeable :class:`~llm_locust.results.histogram.LogHistogram` whose quantiles are
within :data:`ITL_RELATIVE_ERROR` of the exact ones (count, mean, std and max stay exact);
the summary says which (``itl_precision``).

Pure module: numpy only.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from llm_locust.results.confidence import (
    LEVEL,
    Interval,
    order_statistic_ranks,
    statistic_interval,
    t_quantile,
)
from llm_locust.results.histogram import LogHistogram

__all__ = [
    "ITL_EXACT_LIMIT",
    "ITL_RELATIVE_ERROR",
    "PERCENTILES",
    "ZERO_GAP_NOTE_SHARE",
    "ItlBudget",
    "ItlPool",
    "ItlValues",
    "latency_stats",
    "percentile",
    "percentile_key",
    "percentiles",
]

PERCENTILES = (50, 90, 95, 99)
#: Above this share of 0 ms ITL gaps the end-of-run text says the chunks came coalesced.
ZERO_GAP_NOTE_SHARE = 0.10
#: Gaps kept exactly, over every pool of one summary, before they turn into histograms.
ITL_EXACT_LIMIT = 20_000_000
#: The relative error of an ITL quantile from the histogram (its default layout).
ITL_RELATIVE_ERROR = 0.005


def percentiles(values: Sequence[float] | np.ndarray, qs: Sequence[float]) -> list[float | None]:
    """Exact linear-interpolated percentiles ``qs`` (0..100) of ``values``; ``None`` each if empty."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return [None] * len(qs)
    return [float(v) for v in np.percentile(arr, list(qs), method="linear")]


def percentile(values: Sequence[float] | np.ndarray, q: float) -> float | None:
    """One percentile (0..100) of ``values``; ``None`` if empty.

    A short Python sequence (one request's ITL gaps, judged per request by an SLO line, for
    every record) takes a pure-Python path that does numpy's arithmetic step for step, so the
    result is the same float (a test checks it against numpy); numpy's call costs ~50 µs.
    """
    if isinstance(values, (list, tuple)) and len(values) <= _SHORT:
        return _linear(sorted(values), q) if values else None
    return percentiles(values, (q,))[0]


_SHORT = 4096


def _linear(ordered: list[float], q: float) -> float:
    """numpy's ``method="linear"`` on sorted values: index ``q/100 * (n-1)``, then its lerp."""
    n = len(ordered)
    virtual = (q / 100.0) * (n - 1)
    lo = math.floor(virtual)
    hi = min(lo + 1, n - 1)
    lo = min(max(lo, 0), n - 1)
    gamma = virtual - lo
    a, b = ordered[lo], ordered[hi]
    diff = b - a
    if gamma >= 0.5:  # numpy's _lerp: from the upper end for t >= 0.5
        return float(b - diff * (1.0 - gamma))
    return float(a + diff * gamma)


def percentile_key(q: float, name: str) -> str:
    """``p99_ttft_ms``, ``p99.9_ttft_ms`` (``vllm bench serve``'s keys: the percentile as written)."""
    return f"p{q:g}_{name}_ms"


def _keys(name: str, qs: Sequence[float]) -> list[str]:
    return [
        f"mean_{name}_ms",
        f"median_{name}_ms",
        f"std_{name}_ms",
        *(percentile_key(q, name) for q in qs),
    ]


def latency_stats(
    name: str, seconds: np.ndarray, qs: Sequence[float] = PERCENTILES
) -> dict[str, float | None]:
    """``mean_X_ms``, ``median_X_ms``, ``std_X_ms``, ``pNN_X_ms`` for each of ``qs``; ``None``: no data."""
    keys = _keys(name, qs)
    if seconds.size == 0:
        return dict.fromkeys(keys)
    ms = seconds * 1000.0
    values = [float(np.mean(ms)), float(np.median(ms)), float(np.std(ms)), *percentiles(ms, qs)]
    return dict(zip(keys, values, strict=True))


class ItlBudget:
    """How many exact gaps all the pools of one summary may still hold."""

    def __init__(self, limit: int = ITL_EXACT_LIMIT) -> None:
        self.left = limit
        self.pools: list[ItlPool] = []

    def take(self, n: int) -> bool:
        """Whether ``n`` more exact gaps fit; when they do not, every pool turns into a histogram."""
        self.left -= n
        if self.left >= 0:
            return True
        for pool in self.pools:
            pool.to_histogram()
        return False


#: Gaps buffered before they are folded into a histogram at once (histogram mode).
_CHUNK = 1 << 20


class ItlPool:
    """The ITL gaps of one group of records: exact while the budget lasts, a histogram after.

    Gaps are appended to a flat ``array("d")`` (no Python object per gap); in histogram mode
    the buffer is folded in every :data:`_CHUNK` gaps, with exact count, sum, sum of squares
    and maximum kept beside the histogram.
    """

    def __init__(self, budget: ItlBudget | None = None) -> None:
        self.budget = budget if budget is not None else ItlBudget()
        self.budget.pools.append(self)
        self._buf: array[float] = array("d")
        self._hist: LogHistogram | None = None  # set: histogram mode
        self._folded = (0, 0.0, 0.0, -math.inf)  # count, sum, sum of squares, max of folded gaps
        self._folded_zeros = 0  # gaps of exactly 0 s among the folded ones

    def extend(self, gaps: Sequence[float]) -> None:
        if not gaps:
            return
        if self._hist is None and not self.budget.take(len(gaps)):
            assert self._hist is not None  # the budget turned every pool into a histogram
        self._buf.extend(gaps)
        if self._hist is not None and len(self._buf) >= _CHUNK:
            self._fold()

    def to_histogram(self) -> None:
        if self._hist is None:
            self._hist = LogHistogram()
        self._fold()

    def _fold(self) -> None:
        assert self._hist is not None
        if not len(self._buf):
            return
        chunk = np.frombuffer(self._buf, dtype=float)
        self._hist.add_many(chunk)
        n, total, squares, top = self._folded
        self._folded = (
            n + chunk.size,
            total + float(chunk.sum()),
            squares + float(np.dot(chunk, chunk)),
            max(top, float(chunk.max())),
        )
        self._folded_zeros += int(np.count_nonzero(chunk == 0.0))
        self._buf = array("d")

    @property
    def exact(self) -> bool:
        return self._hist is None

    @property
    def count(self) -> int:
        return self._folded[0] + len(self._buf)

    @property
    def zeros(self) -> int:
        """Gaps of exactly 0 s: content events that arrived in the same read as the one before."""
        buffered = np.frombuffer(self._buf, dtype=float) if len(self._buf) else np.empty(0)
        return self._folded_zeros + int(np.count_nonzero(buffered == 0.0))

    def values(self) -> np.ndarray:
        """The exact gaps (only while :attr:`exact`)."""
        assert self._hist is None
        return np.frombuffer(self._buf, dtype=float) if len(self._buf) else np.empty(0)

    def histogram(self) -> LogHistogram:
        self.to_histogram()
        assert self._hist is not None
        return self._hist

    def moments(self) -> tuple[int, float, float, float]:
        """Count, sum, sum of squares and maximum of every gap."""
        if self._hist is not None:
            self._fold()
            return self._folded
        values = self.values()
        if not values.size:
            return 0, 0.0, 0.0, -math.inf
        return values.size, float(values.sum()), float(np.dot(values, values)), float(values.max())


class ItlValues:
    """The pooled ITL of several groups, for the summary's statistics and the SLO's ITL lines."""

    def __init__(self, pools: Iterable[ItlPool]) -> None:
        self.pools = list(pools)
        self.exact = all(p.exact for p in self.pools)
        self.count = sum(p.count for p in self.pools)

    def values(self) -> np.ndarray:
        """Every gap, exactly (only when :attr:`exact`)."""
        parts = [p.values() for p in self.pools]
        return np.concatenate(parts) if parts else np.empty(0)

    def _histogram(self) -> LogHistogram:
        merged = LogHistogram()
        for p in self.pools:
            merged.merge(p.histogram())
        return merged

    def _moments(self) -> tuple[int, float, float, float]:
        parts = [p.moments() for p in self.pools]
        return (
            sum(m[0] for m in parts),
            math.fsum(m[1] for m in parts),
            math.fsum(m[2] for m in parts),
            max((m[3] for m in parts), default=-math.inf),
        )

    def stat(self, stat: str) -> float | None:
        """``mean``, ``max`` or ``pNN`` of the pooled gaps (seconds), as an SLO line reads it."""
        if not self.count:
            return None
        if self.exact:
            values = self.values()
            if stat == "mean":
                return float(values.mean())
            return float(values.max()) if stat == "max" else percentile(values, float(stat[1:]))
        n, total, _, top = self._moments()
        if stat == "mean":
            return total / n
        return top if stat == "max" else self._histogram().quantile(float(stat[1:]) / 100.0)

    def interval(self, stat: str) -> Interval:
        """The 95 % interval of ``stat`` over the pooled gaps (:mod:`llm_locust.results.confidence`);
        in histogram mode a percentile's bounds are the histogram's order statistics at the
        interval's ranks (within :data:`ITL_RELATIVE_ERROR`), the mean's from the exact moments."""
        if not self.count:
            return None, None
        if self.exact:
            return statistic_interval(stat, self.values())
        n, total, squares, top = self._moments()
        if stat == "max":
            return top, top
        if stat == "mean":
            if n < 2:
                return None, None
            mean = total / n
            variance = max((squares - n * mean * mean) / (n - 1), 0.0)
            half = t_quantile(0.5 + LEVEL / 2.0, n - 1) * math.sqrt(variance / n)
            return mean - half, mean + half
        lo, hi = order_statistic_ranks(n, float(stat[1:]) / 100.0)
        hist = self._histogram()
        rank = 1.0 / max(n - 1, 1)
        return (
            None if lo is None else hist.quantile(min(lo * rank, 1.0)),
            None if hi is None else hist.quantile(min(hi * rank, 1.0)),
        )

    def latency_stats(self, name: str = "itl", qs: Sequence[float] = PERCENTILES) -> dict[str, float | None]:
        """:func:`latency_stats` of the pooled gaps: exact, or quantiles from the histogram."""
        if self.exact or not self.count:
            return latency_stats(name, self.values() if self.count else np.empty(0), qs)
        n, total, squares, _ = self._moments()
        mean = total / n
        std = math.sqrt(max(squares / n - mean * mean, 0.0))
        found = self._histogram().quantiles([0.5, *(q / 100.0 for q in qs)])
        median, *pcts = (None if v is None else v * 1000.0 for v in found)
        return dict(zip(_keys(name, qs), [mean * 1000.0, median, std * 1000.0, *pcts], strict=True))

    def zero_share(self) -> float | None:
        """The share (0..1) of gaps of exactly 0 s: events coalesced into one read arrive together,
        so their gaps are 0 (:data:`ZERO_GAP_NOTE_SHARE`); ``None`` with no gaps."""
        if not self.count:
            return None
        return sum(p.zeros for p in self.pools) / self.count

    def precision(self) -> dict[str, Any]:
        """How exact the ITL percentiles are, for the summary."""
        if self.exact:
            return {"method": "exact", "gaps": self.count}
        return {"method": "histogram", "relative_error": ITL_RELATIVE_ERROR, "gaps": self.count}
