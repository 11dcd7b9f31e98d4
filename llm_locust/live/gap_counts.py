"""A batch of rows' inter-token gaps counted the way the live aggregate counts them: the live
view's second tier, on the workers.

A 1,024-token record carries 1,023 ITL gaps. A master that decodes each of them from the
wire, puts them into its histograms and encodes them again into ``requests.jsonl`` spends
0.24-0.37 ms a row, most of a core at 100 workers x 50 req/s (benchmarks/README.md, "A
hundred workers"). So a worker does that part for its own rows as it ships them
(:class:`~llm_locust.runtime.distributed.Outbox`):

- it counts each row's gaps into one :class:`GapCounts` per batch: the run's log histogram (the
  live view's quantiles, :class:`~llm_locust.results.histogram.LogHistogram` at its default
  layout) and the exporter's exact ``le`` counts, per replica (the exporter's ``endpoint``
  label), over :func:`gap_edges`;
- it sends each row's gaps as their JSON text (:class:`~llm_locust.record.RawJson`).

The master merges the counts into its aggregates (counts add: the merged histogram is the one
its own fills would have made, bit for bit) and writes each row's text as it came, so
``requests.jsonl`` and every statistic of the summary stay exact. It decodes the text instead
when it needs the values themselves (a capacity search judges steps on them; an SLO line on
ITL is checked per request), or when the counts are not over its own edges.

Only rows the live view counts latencies of are counted (:func:`latencies_counted`: the one
inclusion rule, :mod:`llm_locust.results.inclusion`). Rows' gaps are counted :data:`CHUNK` at a
time, not row by row: numpy's fixed cost per count (~60 µs) is then spread over the rows, and a
count stays short enough to run between a worker's reads (~0.25 ms). A worker pays ~10 µs a
200-token row and ~65 µs a 1,024-token row for it (benchmarks/README.md).

Pure module: numpy only, no Locust, no network.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from llm_locust.config.jsontypes import JsonObject, JsonValue
from llm_locust.config.slo import SloSpec
from llm_locust.live import catalog as metrics
from llm_locust.record import OK
from llm_locust.results.bucket_counts import FixedBucketCounts
from llm_locust.results.histogram import CountsDict, LogHistogram
from llm_locust.results.inclusion import Coverage, row_covers

__all__ = ["CHUNK", "GapCounts", "gap_edges", "gaps_of", "latencies_counted"]

#: Gaps counted at a time (see the module docstring).
CHUNK = 4096

#: A finished request as its ``requests.jsonl`` row.
Row = Mapping[str, object]


def latencies_counted(row: Row) -> bool:
    """Does the live view count ``row``'s latencies? Successful, and not stalled by the client
    (the series' rule); a stalled request still counts, its latencies do not."""
    return row.get("outcome") == OK and row_covers(Coverage.SERIES_LATENCY, row)


def gaps_of(value: object) -> NDArray[np.float64]:
    """A record's ITL list as an array of its finite values (one conversion, no Python loop)."""
    try:
        arr = np.asarray(value or (), dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):  # a malformed row: keep what is a number
        values = value if isinstance(value, Iterable) else ()
        arr = np.asarray(
            [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)], dtype=np.float64
        )
    return arr if np.isfinite(arr).all() else arr[np.isfinite(arr)]


def gap_edges(slo: SloSpec | None, searching: bool) -> tuple[float, ...] | None:
    """The ``le`` edges a worker counts its rows' gaps over, or ``None``: the master needs each
    row's gaps as values (a capacity search, an SLO line on ITL), so counting them is no use.
    Without an ITL line the exporter's ITL edges are the catalog's alone (thresholds add edges)."""
    if searching or any(line.metric == "itl" for line in slo or ()):
        return None
    return metrics.buckets_with_thresholds(metrics.INTER_TOKEN_LATENCY.buckets or (), ())


class GapCounts:
    """One batch's gaps: the run's log histogram and the ``le`` counts per replica URL (``""``: a
    row without one)."""

    __slots__ = ("_pending", "_waiting", "edges", "le", "log")

    def __init__(self, edges: Sequence[float]) -> None:
        self.edges = tuple(float(e) for e in edges)
        self.log = LogHistogram()
        self.le: dict[str, FixedBucketCounts] = {}
        self._pending: dict[str, list[Sequence[object]]] = {}  # per replica: gaps not counted yet
        self._waiting = 0  # how many

    def add(self, row: Row) -> None:
        """Count ``row``'s gaps, if the live view counts its latencies (with the next
        :data:`CHUNK` of them, or at :meth:`settle`)."""
        if not latencies_counted(row):
            return
        gaps, replica = row.get("itl"), row.get("replica")
        key = replica if isinstance(replica, str) else ""
        if not isinstance(gaps, (list, tuple)):  # none, or not a list: what is a number, now
            self._count(key, gaps_of(gaps))
            return
        self._pending.setdefault(key, []).append(gaps)
        self._waiting += len(gaps)
        if self._waiting >= CHUNK:
            self.settle()

    def settle(self) -> None:
        """Count every gap added and not counted yet."""
        for replica, lists in self._pending.items():
            self._count(replica, _joined(lists))
        self._pending.clear()
        self._waiting = 0

    def _count(self, replica: str, gaps: NDArray[np.float64]) -> None:
        if not gaps.size:
            return
        self.log.add_many(gaps)
        counts = self.le.get(replica)
        if counts is None:
            counts = self.le[replica] = FixedBucketCounts(self.edges)
        counts.add_many(gaps)

    def __bool__(self) -> bool:
        self.settle()
        return bool(self.log)

    def to_data(self) -> JsonObject:
        """The wire form: the edges once, each histogram's sparse counts (the pending counted first)."""
        self.settle()
        log: JsonValue = dict(self.log.to_dict())  # type: ignore[arg-type]  # a TypedDict of plain values
        le: JsonObject = {}
        for replica, counts in self.le.items():
            part = dict(counts.to_dict())
            del part["edges"]
            le[replica] = part  # type: ignore[assignment]  # a TypedDict of plain values
        return {"edges": list(self.edges), "log": log, "le": le}

    @classmethod
    def from_data(cls, data: object) -> GapCounts:
        """Read back :meth:`to_data`; ``ValueError`` when it is not of that shape."""
        try:
            if not isinstance(data, Mapping):
                raise TypeError("not an object")
            counts = cls(data["edges"])
            counts.log = LogHistogram.from_dict(data["log"])
            if counts.log._layout() != LogHistogram()._layout():
                raise ValueError("log histogram of another layout")
            for replica, part in dict(data["le"]).items():
                spec: CountsDict = {**part, "edges": list(counts.edges)}
                counts.le[str(replica)] = FixedBucketCounts.from_dict(spec)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"gap counts: {exc}") from None
        return counts


def _joined(lists: list[Sequence[object]]) -> NDArray[np.float64]:
    """Several rows' gaps as one array of their finite values (one conversion for all; each row's
    own numbers when one of them holds something else)."""
    try:
        arr = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.float64, count=sum(map(len, lists)))
    except (TypeError, ValueError):  # a malformed row
        return np.concatenate([gaps_of(gaps) for gaps in lists])
    return arr if np.isfinite(arr).all() else arr[np.isfinite(arr)]
