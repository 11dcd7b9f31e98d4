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
from typing import Any

import numpy as np

from llm_locust.record import OK

__all__ = ["Timeline", "binned_overlap", "binned_sum"]


def _floats(values: Iterable[Any]) -> np.ndarray:
    return np.fromiter((np.nan if v is None else v for v in values), dtype=float)


class Timeline:
    """Columns of ``rows`` (one entry per row, NaN where a value is missing)."""

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
        #: left out of the statistics: the start of a stage (warm-up, ramp-up)
        self.excluded = np.fromiter((bool(r.get("warmup") or r.get("rampup")) for r in rows), dtype=bool)
        #: when the request ended (its send time when it has no E2E)
        self.end = np.where(np.isnan(self.e2e), self.start, self.start + np.nan_to_num(self.e2e))
        self._chunks: _Chunks | None = None

    def __len__(self) -> int:
        return len(self.rows)

    def measured(self, stage: int | None = None) -> np.ndarray:
        """Mask of the successful measured requests (of one stage when given)."""
        mask = self.ok & ~self.excluded
        return mask if stage is None else mask & (self.stage == stage)

    def gaps(self, mask: np.ndarray) -> np.ndarray:
        """Every ITL gap of the rows in ``mask`` (successful ones), pooled."""
        chunks = self._chunk_table()
        return chunks.gaps[mask[chunks.gap_owner]]

    def chunk_times(self, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(wall time of every content chunk of the successful requests, or of those in
        ``mask``; the tokens each chunk carried)."""
        chunks = self._chunk_table()
        if mask is None:
            return chunks.times, chunks.tokens
        keep = mask[chunks.owner]
        return chunks.times[keep], chunks.tokens[keep]

    def _chunk_table(self) -> _Chunks:
        if self._chunks is None:
            self._chunks = _Chunks(self)
        return self._chunks


class _Chunks:
    """Every content chunk of the successful requests, flattened once: its wall time, the
    tokens it carried, its row; and every ITL gap with its row."""

    def __init__(self, timeline: Timeline) -> None:
        keep = np.nonzero(timeline.ok & ~np.isnan(timeline.ttft))[0]
        gap_lists = [timeline.rows[i].get("itl") or [] for i in keep]
        counts = np.fromiter((len(g) for g in gap_lists), dtype=np.int64, count=keep.size)
        self.gaps = np.fromiter(
            itertools.chain.from_iterable(gap_lists), dtype=float, count=int(counts.sum())
        )
        self.gap_owner = np.repeat(keep, counts)
        lengths = counts + 1
        # each request's chunks: its first token, then one after each gap
        firsts = np.cumsum(lengths) - lengths
        flat = np.zeros(int(lengths.sum()))
        flat[np.delete(np.arange(flat.size), firsts)] = self.gaps
        sums = np.cumsum(flat)
        relative = sums - np.repeat(sums[firsts], lengths) if flat.size else flat
        self.owner = np.repeat(keep, lengths)
        self.times = np.repeat(timeline.start[keep] + timeline.ttft[keep], lengths) + relative
        tokens = np.nan_to_num(timeline.completion_tokens[keep], nan=0.0)
        # a request without a token count still produced its chunks: one token each
        self.tokens = np.repeat(np.where(tokens > 0, tokens / lengths, 1.0), lengths)


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
