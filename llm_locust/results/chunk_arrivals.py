"""When each content chunk arrived, gathered row by row while ``requests.jsonl`` is read.

Time windows (tokens per second in each) and vLLM's ``max_output_tokens_per_s`` need the
wall time of every content chunk: the send time + TTFT, then one chunk after each ITL gap,
each carrying ``completion_tokens / chunks`` tokens (one when the count is unknown). Like
the ITL pools (:mod:`llm_locust.results.stats`), this is the one per-token population; a
:class:`ChunkStore` keeps each successful row's gaps exactly up to :data:`EXACT_CHUNK_GAPS`
gaps in all (8 bytes each; the timeline then places every chunk exactly), and past that
folds them, batch by batch, into token sums per :data:`BIN_S` seconds of wall clock, for
every successful row and for the measured ones (not warm-up, not ramp-up). A window edge
then falls inside a bin: a window's token count may be off by the tokens of
:data:`BIN_S` / 2 at each of its edges, which the summary states (``token_arrivals``).

Pure module: numpy only.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["BIN_S", "EXACT_CHUNK_GAPS", "ChunkStore", "TokenBins", "chunk_table"]

#: Gaps kept exactly (all rows of one summary) before chunks are binned by time.
EXACT_CHUNK_GAPS = 4_000_000
#: The width of a time bin once chunks are binned (seconds of wall clock).
BIN_S = 0.01
#: Gaps folded into the bins at once, once binned (bounds the temporary arrays).
_BATCH = 1 << 20


def chunk_table(
    base: np.ndarray, tokens: np.ndarray, counts: np.ndarray, gaps: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every chunk of the rows given by their first-chunk time ``base`` (send + TTFT), token
    count (``nan``: unknown), gap count and flat ``gaps``: (chunk times, tokens per chunk,
    row position of each chunk)."""
    lengths = counts.astype(np.int64) + 1
    # each row's chunks: its first token, then one after each gap
    firsts = np.cumsum(lengths) - lengths
    flat = np.zeros(int(lengths.sum()))
    flat[np.delete(np.arange(flat.size), firsts)] = gaps
    sums = np.cumsum(flat)
    relative = sums - np.repeat(sums[firsts], lengths) if flat.size else flat
    owner = np.repeat(np.arange(base.size), lengths)
    times = np.repeat(base, lengths) + relative
    known = np.nan_to_num(tokens, nan=0.0)
    # a row without a token count still produced its chunks: one token each
    weights = np.repeat(np.where(known > 0, known / lengths, 1.0), lengths)
    return times, weights, owner


class TokenBins:
    """Token sums per :data:`BIN_S` bin of wall clock, grown as chunks come."""

    def __init__(self) -> None:
        self.origin: int | None = None  # the first bin's index (time / BIN_S)
        self.sums = np.zeros(0)

    def add(self, times: np.ndarray, weights: np.ndarray) -> None:
        if not times.size:
            return
        index = np.floor(times / BIN_S).astype(np.int64)
        lo, hi = int(index.min()), int(index.max())
        if self.origin is None:
            self.origin = lo
        if lo < self.origin:
            self.sums = np.concatenate((np.zeros(self.origin - lo), self.sums))
            self.origin = lo
        size = max(self.sums.size, hi - self.origin + 1)
        self.sums = np.pad(self.sums, (0, size - self.sums.size)) + np.bincount(
            index - self.origin, weights=weights, minlength=size
        )

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(bin centres, tokens) of the bins that received tokens."""
        if self.origin is None:
            return np.empty(0), np.empty(0)
        used = np.nonzero(self.sums)[0]
        return (self.origin + used + 0.5) * BIN_S, self.sums[used]


class ChunkStore:
    """The chunks of the successful rows of one summary: exact, then binned (module docstring)."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = EXACT_CHUNK_GAPS if limit is None else limit
        self.rows: array[int] = array("q")  # row index in the columns
        self.base: array[float] = array("d")  # send + TTFT
        self.tokens: array[float] = array("d")  # completion tokens (nan: unknown)
        self.measured: array[int] = array("b")
        self.counts: array[int] = array("i")
        self.gaps: array[float] = array("d")
        self.bins: dict[bool, TokenBins] | None = None  # set: binned (every row, measured rows)

    def add(self, row: int, base: float, tokens: float, measured: bool, gaps: Sequence[float]) -> None:
        self.rows.append(row)
        self.base.append(base)
        self.tokens.append(tokens)
        self.measured.append(1 if measured else 0)
        self.counts.append(len(gaps))
        self.gaps.extend(gaps)
        if len(self.gaps) > (self.limit if self.bins is None else min(self.limit, _BATCH)):
            self._fold()

    @property
    def exact(self) -> bool:
        return self.bins is None

    def _fold(self) -> None:
        if self.bins is None:
            self.bins = {False: TokenBins(), True: TokenBins()}
        if len(self.rows):
            times, weights, owner = chunk_table(*self._arrays())
            self.bins[False].add(times, weights)
            keep = np.frombuffer(self.measured, dtype=np.int8).astype(bool)[owner]
            self.bins[True].add(times[keep], weights[keep])
        for buffer in (self.rows, self.base, self.tokens, self.measured, self.counts, self.gaps):
            del buffer[:]

    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return (
            _np(self.base, float),
            _np(self.tokens, float),
            _np(self.counts, np.int32),
            _np(self.gaps, float),
        )

    def exact_parts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row indices, gap counts, flat gaps) of the stored rows (exact mode only)."""
        assert self.bins is None
        return _np(self.rows, np.int64), _np(self.counts, np.int32), _np(self.gaps, float)

    def binned(self, measured: bool) -> tuple[np.ndarray, np.ndarray]:
        """(bin centres, tokens) of every successful row or of the measured ones (binned mode)."""
        assert self.bins is not None
        if len(self.rows):
            self._fold()
        return self.bins[measured].arrays()

    def precision(self) -> dict[str, Any]:
        """How exact the token arrival times are, for the summary."""
        if self.bins is None:
            return {"method": "exact"}
        note = f"a window's tokens are placed to within {BIN_S / 2:g} s of their arrival"
        return {"method": "binned", "bin_s": BIN_S, "note": note}


def _np(buffer: array[int] | array[float], dtype: npt.DTypeLike) -> np.ndarray:
    return np.frombuffer(buffer, dtype=dtype).copy() if len(buffer) else np.empty(0, dtype=dtype)
