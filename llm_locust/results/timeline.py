"""Requests placed on the wall clock: numpy columns built once from ``requests.jsonl`` rows.

Time windows, the peak output rate, the report's over-time charts and its CDFs all need the
same few columns (send time, end time, outcome, latencies, token counts, and the arrival
time of every content chunk); :class:`Timeline` pulls them out of the rows once.

Token arrival times are rebuilt from each record's marks (send + TTFT, then the ITL gaps),
and each content chunk carries ``completion_tokens / chunks`` tokens, so the tokens of a
request add up to its count (from the server's ``usage`` when it sent one) whether a chunk
held one token or several. Pure module.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from llm_locust.record import CANCELLED, INCOMPLETE, OK
from llm_locust.results.chunk_arrivals import ChunkStore, chunk_table
from llm_locust.results.inclusion import Coverage, covered

if TYPE_CHECKING:
    from llm_locust.results.columns import Columns

__all__ = ["Timeline", "binned_overlap", "binned_sum"]


def _floats(values: Iterable[float | None]) -> np.ndarray:
    return np.fromiter((np.nan if v is None else v for v in values), dtype=float)


def _flags(values: Iterable[object]) -> np.ndarray:
    return np.fromiter((bool(v) for v in values), dtype=bool)


class Timeline:
    """Columns of ``rows`` (one entry per row, NaN where a value is missing).

    :meth:`from_columns` builds the same columns from :class:`~llm_locust.results.columns.Columns`
    (the end of a run reads ``requests.jsonl`` once, into those), without keeping the rows:
    its chunks come from the columns' :class:`~llm_locust.results.chunk_arrivals.ChunkStore`.
    """

    def __init__(self, rows: Sequence[dict[str, Any]]) -> None:
        self.rows = rows
        self.start = _floats(r.get("start_time") for r in rows)
        self.ttft = _floats(r.get("ttft") for r in rows)
        self.tpot = _floats(r.get("tpot") for r in rows)
        self.e2e = _floats(r.get("e2e") for r in rows)
        self.outcome = np.array([r.get("outcome") or "unknown" for r in rows], dtype=object)
        self.ok = self.outcome == OK
        self.completion_tokens = _floats(r.get("completion_tokens") for r in rows)
        self.prompt_tokens = _floats(r.get("prompt_tokens") for r in rows)
        self.target_input = _floats(r.get("target_input_tokens") for r in rows)
        self.target_output = _floats(r.get("target_output_tokens") for r in rows)
        self.stage = _floats(r.get("stage") for r in rows)
        self.incomplete = self.outcome == INCOMPLETE
        self.cancelled = self.outcome == CANCELLED
        self.warmup = _flags(r.get("warmup") for r in rows)
        self.rampup = _flags(r.get("rampup") for r in rows)
        self.outside = _flags(r.get("outside") for r in rows)
        self.stalled = _flags(r.get("client_stall_s") for r in rows)
        self._finish()
        self.store: ChunkStore | None = None

    @classmethod
    def from_columns(cls, cols: Columns) -> Timeline:
        """The timeline of every row read into ``cols`` (no row kept)."""
        self = cls.__new__(cls)
        self.rows = ()
        self.start, self.ttft, self.tpot, self.e2e = cols.start, cols.ttft, cols.tpot, cols.e2e
        names = np.asarray(cols.outcome_names or ["unknown"], dtype=object)
        self.outcome = names[cols.outcome]
        self.ok = cols.ok
        self.completion_tokens, self.prompt_tokens = cols.completion, cols.prompt
        self.target_input, self.target_output = cols.target_in, cols.target_out
        self.stage = np.where(cols.stage < 0, np.nan, cols.stage.astype(float))
        self.incomplete, self.cancelled = cols.incomplete, cols.cancelled
        self.warmup, self.rampup, self.stalled = cols.warmup, cols.rampup, cols.stalled
        self.outside = cols.outside
        self._finish()
        self.store = cols.chunks
        return self

    def _finish(self) -> None:
        #: left out of the statistics: the start of a stage (warm-up, ramp-up), outside the stages
        self.excluded = self.warmup | self.rampup | self.outside
        #: when the request ended (its send time when it has no E2E)
        self.end = np.where(np.isnan(self.e2e), self.start, self.start + np.nan_to_num(self.e2e))
        self._chunks: _Chunks | None = None

    def __len__(self) -> int:
        return int(self.start.size)

    def measured(self, stage: int | None = None) -> np.ndarray:
        """Mask of the successful measured requests (of one stage when given): those whose
        tokens count (``Coverage.COMPLETED``, :mod:`llm_locust.results.inclusion`)."""
        return self.covered(Coverage.COMPLETED, stage)

    def timed(self, stage: int | None = None) -> np.ndarray:
        """Mask of the requests whose latencies count (``Coverage.LATENCY``), of one stage when given."""
        return self.covered(Coverage.LATENCY, stage)

    def covered(self, coverage: Coverage, stage: int | None = None) -> np.ndarray:
        """The requests (of one stage when given) that ``coverage`` covers."""
        return covered(coverage, self, None if stage is None else self.stage == stage)

    @property
    def binned(self) -> bool:
        """Chunks are binned by time (a run past :data:`.chunk_arrivals.EXACT_CHUNK_GAPS`)."""
        return self.store is not None and not self.store.exact

    def gaps(self, mask: np.ndarray) -> np.ndarray:
        """Every ITL gap of the rows in ``mask`` (successful ones), pooled."""
        if self.binned:
            raise ValueError("the chunks of this timeline are binned by time: no gaps kept")
        chunks = self._chunk_table()
        gaps: np.ndarray = chunks.gaps[mask[chunks.gap_owner]]
        return gaps

    def chunk_times(self, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(wall time of every content chunk of the successful requests, or of those in
        ``mask``; the tokens each chunk carried). Binned chunks (see
        :mod:`llm_locust.results.chunk_arrivals`): the bins' centres and tokens, for every
        successful request or the measured ones only."""
        if self.binned:
            assert self.store is not None
            if mask is None:
                return self.store.binned(measured=False)
            if np.array_equal(mask, self.measured()):
                return self.store.binned(measured=True)
            raise ValueError("the chunks of this timeline are binned: only all or the measured ones")
        chunks = self._chunk_table()
        if mask is None:
            return chunks.times, chunks.tokens
        keep = mask[chunks.owner]
        return chunks.times[keep], chunks.tokens[keep]

    def token_precision(self) -> dict[str, Any]:
        """How exact the chunk times are (``exact``, or ``binned`` and the bin width)."""
        return {"method": "exact"} if self.store is None else self.store.precision()

    def _chunk_table(self) -> _Chunks:
        if self._chunks is None:
            self._chunks = _Chunks(self)
        return self._chunks


class _Chunks:
    """Every content chunk of the successful requests, flattened once: its wall time, the
    tokens it carried, its row; and every ITL gap with its row."""

    def __init__(self, timeline: Timeline) -> None:
        if timeline.store is not None:
            keep, counts, self.gaps = timeline.store.exact_parts()
        else:
            keep = np.nonzero(timeline.ok & ~np.isnan(timeline.ttft))[0]
            gap_lists = [timeline.rows[i].get("itl") or [] for i in keep.tolist()]
            counts = np.fromiter((len(g) for g in gap_lists), dtype=np.int64, count=keep.size)
            self.gaps = np.fromiter(
                itertools.chain.from_iterable(gap_lists), dtype=float, count=int(counts.sum())
            )
        self.gap_owner = np.repeat(keep, counts)
        base = timeline.start[keep] + timeline.ttft[keep]
        self.times, self.tokens, position = chunk_table(
            base, timeline.completion_tokens[keep], counts, self.gaps
        )
        self.owner = keep[position]


def binned_sum(times: np.ndarray, weights: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Sum of ``weights`` per bin ``[edges[i], edges[i+1])``."""
    if times.size == 0:
        return np.zeros(len(edges) - 1)
    sums, _ = np.histogram(times, bins=edges, weights=weights)
    return sums


def binned_overlap(starts: np.ndarray, ends: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per bin, the total time the intervals ``[starts, ends]`` spend inside it (seconds).

    Divided by the bin width this is the time-weighted mean number of intervals open in
    the bin: the mean number of requests in flight.
    """
    good = ~(np.isnan(starts) | np.isnan(ends))
    s, e = starts[good], ends[good]
    out = np.zeros(len(edges) - 1)
    for i in range(len(edges) - 1):
        lo, hi = edges[i], edges[i + 1]
        out[i] = float(np.clip(np.minimum(e, hi) - np.maximum(s, lo), 0.0, None).sum())
    return out
