"""Mergeable latency histograms: fixed memory whatever the number of observations.

Two histograms, for two jobs:

- :class:`LogHistogram`: geometric buckets for quantiles: the live aggregates' (web UI,
  exporter) and the summary's per-chunk ITL once it is past its exact budget
  (:mod:`llm_locust.results.stats`). Relative error of a quantile is at most
  ``relative_error`` (default 0.5 %) for values in ``[min_value, max_value]``; memory is
  fixed: 1,978 int64 slots (16 KB) with the default layout.
- :class:`~llm_locust.results.bucket_counts.FixedBucketCounts`: exact counts per Prometheus
  ``le`` edge (value <= edge), for the exporter's ``_bucket`` series. Interpolating ``le`` counts out of a
  :class:`LogHistogram` would blur observations that sit on an SLO edge.

Both count in :class:`Counts` (here) and merge by adding counts, which is exact and
order-independent (a merged histogram is identical to one built from every sample), and
serialize to sparse plain-types dicts (:class:`CountsDict`).
(Workers ship their raw records to the master, not histograms: :mod:`llm_locust.runtime.distributed`.)

Pure module: numpy only.
"""

from __future__ import annotations

import bisect
import functools
import math
from collections.abc import Iterable, Sequence
from typing import TypedDict

import numpy as np

__all__ = [
    "FORMAT",
    "LOG_SLOTS_FROM",
    "Counts",
    "CountsDict",
    "LogHistogram",
    "check_finite",
    "finite_array",
    "same_counts",
]

#: The version of the plain-types form (:class:`CountsDict`) both histograms write.
FORMAT = 1


class CountsDict(TypedDict, total=False):
    """A histogram's sparse plain-types form: its layout, the exact count, sum, min and max,
    and the non-empty slots (``index``) with their ``counts``."""

    format: int
    kind: str  # "log" (LogHistogram) or "le" (FixedBucketCounts)
    layout: list[float]  # LogHistogram: min_value, max_value, relative_error
    edges: list[float]  # FixedBucketCounts: the le edges
    count: int
    sum: float
    min: float | None
    max: float | None
    index: list[int]
    counts: list[int]


def finite_array(values: Iterable[float] | np.ndarray) -> np.ndarray:
    arr = np.asarray(values if isinstance(values, np.ndarray) else list(values), dtype=np.float64)
    arr = arr.reshape(-1)
    if arr.size and not np.isfinite(arr).all():
        raise ValueError("observations must be finite")
    return arr


def check_finite(x: float) -> float:
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"observation must be finite, got {x}")
    return x


class Counts:
    """Shared state of both histograms: slot counters, exact count/sum/min/max.

    Subclasses define the slot layout via ``_edges`` (``bisect``/``searchsorted``
    boundaries) and ``_side``; the same comparison decides a slot for one value and
    for an array, so ``add`` and ``add_many`` agree bit for bit.
    """

    _edges: np.ndarray
    _edge_list: list[float]
    _side: str  # "left": value <= edge goes below it; "right": value >= edge goes above

    def _init_counts(self) -> None:
        self._counts = np.zeros(len(self._edge_list) + 1, dtype=np.int64)
        self._count = 0
        self._sum = 0.0
        self._min = math.inf
        self._max = -math.inf

    # -- observing --
    def add(self, x: float) -> None:
        """Observe one value."""
        x = check_finite(x)
        find = bisect.bisect_left if self._side == "left" else bisect.bisect_right
        self._counts[find(self._edge_list, x)] += 1
        self._count += 1
        self._sum += x
        self._min = min(self._min, x)
        self._max = max(self._max, x)

    def add_many(self, values: Iterable[float] | np.ndarray) -> None:
        """Observe many values at once (vectorized)."""
        arr = finite_array(values)
        if not arr.size:
            return
        self._counts += np.bincount(self._slots(arr), minlength=self._counts.size)
        self._count += int(arr.size)
        self._sum += float(arr.sum())
        self._min = min(self._min, float(arr.min()))
        self._max = max(self._max, float(arr.max()))

    def _slots(self, arr: np.ndarray) -> np.ndarray:  # the comparison ``add`` makes, for an array
        slots: np.ndarray = np.searchsorted(self._edges, arr, side=self._side)  # type: ignore[call-overload]
        return slots

    # -- exact summaries --
    @property
    def count(self) -> int:
        return self._count

    @property
    def sum(self) -> float:
        return self._sum

    @property
    def min(self) -> float | None:
        return self._min if self._count else None

    @property
    def max(self) -> float | None:
        return self._max if self._count else None

    @property
    def mean(self) -> float | None:
        return self._sum / self._count if self._count else None

    @property
    def counts(self) -> np.ndarray:
        """Per-slot counts (read-only view); its size never depends on ``count``."""
        view = self._counts.view()
        view.flags.writeable = False
        return view

    def __bool__(self) -> bool:
        return self._count > 0

    # -- combining --
    def _layout(self) -> tuple[float, ...]:
        raise NotImplementedError

    def _check_layout(self, other: Counts) -> None:
        if type(other) is not type(self) or other._layout() != self._layout():
            raise ValueError(
                f"cannot merge histograms with different layouts: {other._layout()} != {self._layout()}"
            )

    def _merge_counts(self, other: Counts) -> None:
        self._check_layout(other)
        self._counts += other._counts
        self._count += other._count
        self._sum += other._sum
        self._min = min(self._min, other._min)
        self._max = max(self._max, other._max)

    def clear(self) -> None:
        """Forget every observation (the layout stays)."""
        self._init_counts()

    # -- serialization --
    def _counts_dict(self) -> CountsDict:
        nonzero = np.flatnonzero(self._counts)
        return {
            "count": self._count,
            "sum": self._sum,
            "min": self.min,
            "max": self.max,
            "index": nonzero.tolist(),
            "counts": self._counts[nonzero].tolist(),
        }

    def _load_counts(self, data: CountsDict) -> None:
        index, counts = list(data["index"]), list(data["counts"])
        if len(index) != len(counts):
            raise ValueError("index and counts differ in length")
        if any(not 0 <= i < self._counts.size for i in index) or any(c <= 0 for c in counts):
            raise ValueError("bucket index out of range or count not positive")
        self._counts[np.asarray(index, dtype=np.int64)] = np.asarray(counts, dtype=np.int64)
        self._count = int(data["count"])
        if int(self._counts.sum()) != self._count:
            raise ValueError("bucket counts do not add up to count")
        self._sum = float(data["sum"])
        if self._count:
            low, high = data["min"], data["max"]
            if low is None or high is None:
                raise ValueError("a histogram with observations has a min and a max")
            self._min, self._max = float(low), float(high)


@functools.lru_cache(maxsize=16)
def _log_layout(
    min_value: float, max_value: float, relative_error: float
) -> tuple[np.ndarray, list[float], np.ndarray, np.ndarray]:
    """Bucket edges (array and list), geometric midpoints and the edges between -inf and inf
    (slot ``k`` holds ``padded[k] <= x < padded[k + 1]``); shared, read-only."""
    ratio = (1.0 + relative_error) ** 2
    n = math.ceil(math.log(max_value / min_value) / math.log(ratio))
    edges = min_value * ratio ** np.arange(n + 1, dtype=np.float64)
    mids = np.sqrt(edges[:-1] * edges[1:])
    edges.flags.writeable = False
    padded = np.concatenate(([-math.inf], edges, [math.inf]))
    for array in (mids, padded):
        array.flags.writeable = False
    return edges, edges.tolist(), mids, padded


#: From how many values at once ``LogHistogram`` finds slots by the logarithm: on this project's
#: 2-core host the log path wins only from about 2,000-4,000 values (benchmarks/README.md, issue 23).
LOG_SLOTS_FROM = 4096


class LogHistogram(Counts):
    """Geometric-bucket histogram of positive values (latencies in seconds).

    Slot 0 holds values below ``min_value`` (an underflow slot for 0..min), slots
    ``1..n`` the geometric buckets ``[min_value * r**(k-1), min_value * r**k)`` with
    ``r = (1 + relative_error) ** 2``, and slot ``n + 1`` values at or above the top
    edge (>= ``max_value``). A bucket's geometric midpoint is within
    ``relative_error`` of every value in it, so for values inside
    ``[min_value, max_value]`` :meth:`quantile` is within ``relative_error`` of the
    exact sample quantile (numpy's default linear interpolation). ``count``, ``sum``,
    ``min`` and ``max`` are exact; q=0 and q=1 return the exact min and max.
    """

    _side = "right"

    def __init__(self, min_value: float = 1e-5, max_value: float = 3600.0, relative_error: float = 0.005):
        if not 0 < min_value < max_value or not math.isfinite(max_value):
            raise ValueError("need 0 < min_value < max_value < inf")
        if not 0 < relative_error < 1:
            raise ValueError("relative_error must be in (0, 1)")
        self.min_value = float(min_value)
        self.max_value = float(max_value)
        self.relative_error = float(relative_error)
        self._edges, self._edge_list, self._mids, self._padded = _log_layout(*self._layout())
        self._init_counts()

    def _layout(self) -> tuple[float, float, float]:
        return (self.min_value, self.max_value, self.relative_error)

    def _slots(self, arr: np.ndarray) -> np.ndarray:
        """The base's slots: below ``LOG_SLOTS_FROM`` values by ``searchsorted`` (cheaper there: a
        200-token record's gaps 12-14 us against 21 us), above from the logarithm (geometric
        edges), each moved to the slot its two edges give (half the time of ``searchsorted`` for
        the second tier's batches of 4,096 gaps). Both give the same slots."""
        if arr.size < LOG_SLOTS_FROM:
            return super()._slots(arr)
        edges = self._padded
        scaled = np.maximum(arr, self.min_value * 0.5) / self.min_value  # no log of 0 or less
        guess = np.log(scaled, out=scaled) / (2.0 * math.log1p(self.relative_error)) + 1.0
        slots: np.ndarray = np.clip(guess, 0, edges.size - 2).astype(np.intp)  # floor: >= 0
        for _ in range(4):  # a guess is off by one at most (rounding at an edge)
            low, high = arr >= edges[slots + 1], arr < edges[slots]
            if not (low.any() or high.any()):
                return slots
            slots += low
            slots -= high
        return super()._slots(arr)

    @property
    def num_buckets(self) -> int:
        """Slots including underflow and overflow; fixed by the layout."""
        return int(self._counts.size)

    def merge(self, other: LogHistogram) -> LogHistogram:
        """Add ``other``'s observations into this one (same layout required)."""
        self._merge_counts(other)
        return self

    def copy(self) -> LogHistogram:
        dup = LogHistogram(self.min_value, self.max_value, self.relative_error)
        dup._merge_counts(self)
        return dup

    def take(self) -> LogHistogram:
        """Return everything observed so far and start empty (a worker's delta)."""
        delta = self.copy()
        self.clear()
        return delta

    # -- quantiles --
    def _slot_values(self) -> np.ndarray:
        """A representative value per slot: midpoints, exact min/max for the ends."""
        under = min(self._min, self.min_value)
        return np.concatenate(([under], self._mids, [max(self._max, self._edges[-1])]))

    def quantiles(self, qs: Sequence[float]) -> list[float | None]:
        """Estimates of several quantiles, ``q`` in [0, 1]."""
        q = np.asarray(qs, dtype=np.float64)
        if q.size and (np.isnan(q).any() or q.min() < 0 or q.max() > 1):
            raise ValueError("quantiles must be in [0, 1]")
        if not self._count:
            return [None] * q.size
        rank = q * (self._count - 1)
        lo = np.floor(rank)
        hi = np.minimum(lo + 1, self._count - 1)
        est = self._order_stats(lo) + (rank - lo) * (self._order_stats(hi) - self._order_stats(lo))
        values: list[float | None] = np.clip(est, self._min, self._max).tolist()
        return values

    def quantile(self, q: float) -> float | None:
        """Estimate of the ``q`` quantile, clamped to the observed [min, max]."""
        return self.quantiles([q])[0]

    def _order_stats(self, ranks: np.ndarray) -> np.ndarray:
        """Estimated k-th smallest observations (0-based), exact at both ends."""
        cum = np.cumsum(self._counts)
        slots = np.searchsorted(cum, ranks, side="right")
        values = self._slot_values()[slots]
        values = np.where(ranks == 0, self._min, values)
        return np.where(ranks == self._count - 1, self._max, values)

    # -- Prometheus-style export --
    def cumulative_counts(self, edges: Sequence[float]) -> list[int]:
        """Approximate count of observations <= each edge.

        Exact for edges at or above the observed max, and for the underflow slot;
        otherwise only the bucket straddling an edge is uncertain (it counts as
        below the edge when its midpoint is). Prefer :class:`FixedBucketCounts`
        where ``le`` counts must be exact.
        """
        uppers = self._slot_values()
        uppers[0] = self.min_value  # every underflow value is < min_value
        if self._count:  # no slot holds values outside the observed range
            uppers = np.clip(uppers, self._min, self._max)
        cum = np.concatenate(([0], np.cumsum(self._counts)))
        below = np.searchsorted(uppers, np.asarray(edges, dtype=np.float64), side="right")
        counts: list[int] = cum[below].tolist()
        return counts

    # -- serialization --
    def to_dict(self) -> CountsDict:
        """Sparse plain-types form: only non-empty slots are listed."""
        return {
            "format": FORMAT,
            "kind": "log",
            "layout": [self.min_value, self.max_value, self.relative_error],
            **self._counts_dict(),
        }

    @classmethod
    def from_dict(cls, data: CountsDict) -> LogHistogram:
        if data.get("kind") != "log" or data.get("format") != FORMAT:
            raise ValueError("not a LogHistogram dict of a known format")
        hist = cls(*data["layout"])
        hist._load_counts(data)
        return hist

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LogHistogram) and same_counts(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LogHistogram(count={self._count}, layout={self._layout()})"


def same_counts(a: Counts, b: Counts) -> bool:
    """Same layout and identical counts (``sum`` may differ in the last bits)."""
    return (
        a._layout() == b._layout()
        and a._count == b._count
        and bool(np.array_equal(a._counts, b._counts))
        and (a._min, a._max) == (b._min, b._max)
    )
