"""Exact per-edge counts with Prometheus ``le`` semantics, for the exporter's ``_bucket``
series: :class:`FixedBucketCounts`. Interpolating ``le`` counts out of a
:class:`~llm_locust.results.histogram.LogHistogram` would blur observations that sit on an SLO
edge. Counts, merges and serializes as that histogram does (:class:`~llm_locust.results.histogram.Counts`).

Pure module: numpy only.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from llm_locust.results.histogram import FORMAT, Counts, CountsDict, same_counts

__all__ = ["FixedBucketCounts"]


class FixedBucketCounts(Counts):
    """Exact per-edge counts with Prometheus ``le`` semantics (value <= edge).

    Slot ``i`` counts values in ``(edges[i-1], edges[i]]``; the last slot the values
    above every edge (the ``+Inf`` bucket's share). Mergeable and serializable like
    :class:`LogHistogram`.
    """

    _side = "left"

    def __init__(self, edges: Sequence[float]):
        values = [float(e) for e in edges]
        if not values or any(not math.isfinite(e) for e in values):
            raise ValueError("edges must be a non-empty list of finite numbers")
        if any(b <= a for a, b in itertools.pairwise(values)):
            raise ValueError("edges must be strictly increasing")
        self._edge_list = values
        self._edges = np.asarray(values, dtype=np.float64)
        self._init_counts()

    @property
    def edges(self) -> tuple[float, ...]:
        return tuple(self._edge_list)

    def _layout(self) -> tuple[float, ...]:
        return self.edges

    def merge(self, other: FixedBucketCounts) -> FixedBucketCounts:
        self._merge_counts(other)
        return self

    def copy(self) -> FixedBucketCounts:
        dup = FixedBucketCounts(self._edge_list)
        dup._merge_counts(self)
        return dup

    def take(self) -> FixedBucketCounts:
        """Return everything observed so far and start empty (a worker's delta)."""
        delta = self.copy()
        self.clear()
        return delta

    def cumulative(self) -> list[int]:
        """Count of observations <= each edge, then the total (``le="+Inf"``)."""
        counts: list[int] = np.cumsum(self._counts).tolist()
        return counts

    def to_dict(self) -> CountsDict:
        return {"format": FORMAT, "kind": "le", "edges": list(self._edge_list), **self._counts_dict()}

    @classmethod
    def from_dict(cls, data: CountsDict) -> FixedBucketCounts:
        if data.get("kind") != "le" or data.get("format") != FORMAT:
            raise ValueError("not a FixedBucketCounts dict of a known format")
        counts = cls(data["edges"])
        counts._load_counts(data)
        return counts

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FixedBucketCounts) and same_counts(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"FixedBucketCounts(count={self._count}, edges={len(self._edge_list)})"
