"""The one record shape of the results side: the rows of ``requests.jsonl`` as numpy columns.

Every statistic after the run (the summary, each stage, the SLO, Little's law, length
accuracy, stage validity) reads these columns; no record object is rebuilt. The file is read
once, row by row (:func:`read_columns`), into flat ``array`` buffers (8 bytes a number, no
Python object per value), so memory grows with the requests (about 100 bytes each), not
with the rows' size; per-chunk ITL gaps go to :class:`~llm_locust.results.stats.ItlPool`\\ s,
one per (stage, exclusion) group of successful records, exact up to a budget.

Missing numbers are ``nan`` (``stage`` is -1); outcomes and token sources are small integer
codes with their names beside them. A :class:`Part` is a selection of rows (a stage, the
measured ones) with the ITL pools that belong to exactly those rows.

Which records each statistic covers is decided in one place,
:mod:`llm_locust.results.inclusion` (the left-out ones are counted under one reason each:
``incomplete``, ``warmup``, ``rampup``, ``outside``); a :class:`Part` hands out its rows per
:class:`~llm_locust.results.inclusion.Coverage` (:meth:`Part.covered`). A request the load
generator stalled inside (``client_stall_s`` > 0) is counted but left out of every latency
statistic; its ITL gaps go to a pool of their own, :data:`STALLED`.

Pure module: numpy (and orjson to read the file), no Locust, no network.
"""

from __future__ import annotations

import math
import os
from array import array
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from llm_locust.record import CANCELLED, INCOMPLETE, OK
from llm_locust.results.chunk_arrivals import ChunkStore
from llm_locust.results.inclusion import EXCLUSIONS, Coverage, covered, exclusion, row_covers
from llm_locust.results.sessions import SessionBuilder
from llm_locust.results.stats import ItlBudget, ItlPool, ItlValues, percentile
from llm_locust.results.traffic_columns import TrafficBuilder

__all__ = [
    "EXCLUSIONS",
    "STALLED",
    "Columns",
    "ColumnsBuilder",
    "Part",
    "Unreadable",
    "exclusion",
    "itl_own_stat",
    "read_columns",
    "read_rows",
    "skipped_sentence",
]

#: The ITL pool of measured requests the client stalled inside (no measured part selects it).
STALLED = "client_stall"
_NAN = math.nan
_FLOATS = (
    ("start", "start_time"),
    ("ttft", "ttft"),
    ("tpot", "tpot"),
    ("e2e", "e2e"),
    ("lag", "send_lag"),
    ("prompt", "prompt_tokens"),
    ("target_in", "target_input_tokens"),
    ("completion", "completion_tokens"),
    ("target_out", "target_output_tokens"),
)
_FLAGS = (
    ("warmup", "warmup"),
    ("rampup", "rampup"),
    ("outside", "outside"),
    ("waited", "waited_for_slot"),
    ("stalled", "client_stall_s"),
    ("usage_conflict", "usage_conflict"),  # the server's usage contradicted the stream
)


def itl_own_stat(gaps: Sequence[float], stat: str) -> float | None:
    """A request's own ITL ``mean``, ``max`` or ``pNN`` (an SLO line per request); ``None``: no gaps."""
    if not gaps:
        return None
    if stat == "mean":
        return math.fsum(gaps) / len(gaps)
    if stat == "max":
        return max(gaps)
    return percentile(gaps, float(stat[1:]))


class _Codes:
    """Names <-> small integer codes (outcomes, token sources)."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}
        self.values: array[int] = array("h")

    def add(self, name: str) -> None:
        code = self.codes.get(name)
        if code is None:
            code = self.codes[name] = len(self.codes)
        self.values.append(code)

    def names(self) -> list[str]:
        return list(self.codes)


class ColumnsBuilder:
    """Rows in, one at a time; :meth:`build` gives the :class:`Columns`.

    ``itl_stats``: the per-request ITL statistics to keep (``max``, ``mean``, ``p50`` ...), the
    ones the SLO's ``itl_*`` lines judge each request by.
    """

    def __init__(self, itl_stats: Collection[str] = (), budget: ItlBudget | None = None) -> None:
        self.floats = {name: array("d") for name, _ in _FLOATS}
        self.flags = {name: array("b") for name, _ in _FLAGS}
        self.stage: array[int] = array("i")
        self.outcome = _Codes()
        self.token_source = _Codes()
        self.exclusion = _Codes()
        self.itl_stats = tuple(sorted(set(itl_stats)))
        self.itl_own = {stat: array("d") for stat in self.itl_stats}
        self.budget = budget if budget is not None else ItlBudget()
        self.pools: dict[tuple[int, str | None], ItlPool] = {}
        self.chunks = ChunkStore()
        self.traffic = TrafficBuilder()  # reasoning, prefix cache, bursts: sparse (issue 16)
        self.sessions = SessionBuilder()  # rows of a session: sparse (issue 28)

    def add(self, row: Mapping[str, Any]) -> None:
        get = row.get
        index = len(self.stage)
        for name, key in _FLOATS:
            value = get(key)
            self.floats[name].append(_NAN if value is None else value)
        for name, key in _FLAGS:
            self.flags[name].append(1 if get(key) else 0)
        stage = get("stage")
        self.stage.append(-1 if stage is None else stage)
        outcome = get("outcome", "unknown")
        self.outcome.add(outcome)
        self.token_source.add(get("token_source") or "none")
        why = exclusion(row)
        self.traffic.add(index, row)
        self.sessions.add(index, row)
        self.exclusion.add(why.value if why is not None else "")
        gaps = get("itl") or ()
        for stat, column in self.itl_own.items():
            own = itl_own_stat(gaps, stat)
            column.append(_NAN if own is None else own)
        if outcome == OK and (ttft := get("ttft")) is not None:
            tokens = get("completion_tokens")
            sent = get("start_time")
            base = _NAN if sent is None else sent + ttft
            self.chunks.add(index, base, _NAN if tokens is None else tokens, why is None, gaps)
        if gaps and outcome == OK:
            timed = why is None and row_covers(Coverage.LATENCY, row)
            pool_key = (
                -1 if stage is None else stage,
                None if timed else STALLED if why is None else why.value,
            )
            pool = self.pools.get(pool_key)
            if pool is None:
                pool = self.pools[pool_key] = ItlPool(self.budget)
            pool.extend(gaps)

    def build(self) -> Columns:
        return Columns(self)


def _array(buffer: array[int] | array[float], dtype: npt.DTypeLike) -> np.ndarray:
    return np.frombuffer(buffer, dtype=dtype) if len(buffer) else np.empty(0, dtype=dtype)


class Columns:
    """Every record of a test, column by column (see the module docstring)."""

    def __init__(self, built: ColumnsBuilder) -> None:
        for name, _ in _FLOATS:
            setattr(self, name, _array(built.floats[name], float))
        for name, _ in _FLAGS:
            setattr(self, name, _array(built.flags[name], np.int8).astype(bool))
        self.stage = _array(built.stage, np.int32)
        self.n = int(self.stage.size)
        self.outcome = _array(built.outcome.values, np.int16)
        self.outcome_names = built.outcome.names()
        self.token_source = _array(built.token_source.values, np.int16)
        self.token_source_names = built.token_source.names()
        self._exclusion = _array(built.exclusion.values, np.int16)
        self._exclusion_names = built.exclusion.names()
        self.itl_own = {stat: _array(col, float) for stat, col in built.itl_own.items()}
        self.pools = built.pools
        self.chunks = built.chunks  # every content chunk's time (results.chunk_arrivals)
        self.ok = self._is_outcome(OK)
        self.incomplete = self._is_outcome(INCOMPLETE)
        self.cancelled = self._is_outcome(CANCELLED)  # abandoned by the client: not a failure
        self.traffic = built.traffic.build()
        self.sessions = built.sessions.build()
        self.measured = self.excluded_as(None)

    # -- declared for type checkers (set from _FLOATS and _FLAGS) --
    start: np.ndarray
    ttft: np.ndarray
    tpot: np.ndarray
    e2e: np.ndarray
    lag: np.ndarray
    prompt: np.ndarray
    target_in: np.ndarray
    completion: np.ndarray
    target_out: np.ndarray
    warmup: np.ndarray
    stalled: np.ndarray
    rampup: np.ndarray
    outside: np.ndarray
    waited: np.ndarray
    usage_conflict: np.ndarray

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, Any]], itl_stats: Collection[str] = ()) -> Columns:
        builder = ColumnsBuilder(itl_stats)
        for row in rows:
            builder.add(row)
        return builder.build()

    def _is_outcome(self, name: str) -> np.ndarray:
        code = self.outcome_names.index(name) if name in self.outcome_names else -1
        rows: np.ndarray = self.outcome == code
        return rows

    def excluded_as(self, reason: str | None) -> np.ndarray:
        """Rows left out for ``reason`` (``None``: the measured rows)."""
        name = reason or ""
        code = self._exclusion_names.index(name) if name in self._exclusion_names else -1
        rows: np.ndarray = self._exclusion == code
        return rows

    def outcome_of(self, mask: np.ndarray) -> list[str]:
        """The outcome names of the rows in ``mask``, in order."""
        names = np.asarray(self.outcome_names, dtype=object)
        return list(names[self.outcome[mask]]) if self.outcome_names else []

    def part(self, stage: int | None = None, reasons: Collection[str | None] | None = None) -> Part:
        """The rows of stage ``stage`` (``None``: every stage) whose exclusion is in ``reasons``
        (``None``: any; ``{None}``: the measured rows)."""
        mask = np.ones(self.n, dtype=bool)
        if stage is not None:
            mask &= self.stage == stage
        if reasons is not None:
            chosen = np.zeros(self.n, dtype=bool)
            for reason in reasons:
                chosen |= self.excluded_as(reason)
            mask &= chosen
        keys = [
            key
            for key in self.pools
            if (stage is None or key[0] == stage) and (reasons is None or key[1] in reasons)
        ]
        return Part(self, mask, keys)

    def measured_part(self, stage: int | None = None) -> Part:
        return self.part(stage, (None,))


class Part:
    """A selection of rows of :class:`Columns` and the ITL pools of exactly those rows."""

    def __init__(self, cols: Columns, mask: np.ndarray, pool_keys: Sequence[tuple[int, str | None]]) -> None:
        self.cols = cols
        self.mask = mask
        self.pool_keys = list(pool_keys)

    @property
    def n(self) -> int:
        return int(self.mask.sum())

    def ok(self) -> np.ndarray:
        """The mask of the part's successful rows."""
        rows: np.ndarray = self.mask & self.cols.ok
        return rows

    def covered(self, coverage: Coverage) -> np.ndarray:
        """The mask of the part's rows that ``coverage`` covers (:mod:`llm_locust.results.inclusion`)."""
        return covered(coverage, self.cols, self.mask)

    def timed(self) -> np.ndarray:
        """The rows whose latencies count (``Coverage.LATENCY``)."""
        return self.covered(Coverage.LATENCY)

    def itl(self) -> ItlValues:
        """The ITL gaps of the part's rows that ``Coverage.LATENCY`` covers (their pools)."""
        return ItlValues(self.cols.pools[key] for key in self.pool_keys if key[1] is None)

    def stage(self, index: int) -> Part:
        """The part's rows (and pools) of stage ``index``."""
        keys = [k for k in self.pool_keys if k[0] == index]
        return Part(self.cols, self.mask & (self.cols.stage == index), keys)

    def without(self, reasons: Collection[str]) -> Part:
        """The part without the rows (and pools) excluded for ``reasons``."""
        mask = self.mask.copy()
        for reason in reasons:
            mask &= ~self.cols.excluded_as(reason)
        return Part(self.cols, mask, [k for k in self.pool_keys if k[1] not in reasons])


class Unreadable:
    """Lines of ``requests.jsonl`` that hold no record: skipped and counted, never fatal.

    A crash mid-write or a full disk leaves a line that is not JSON (or not a JSON object) in
    the middle, or a last line without its newline. The statistics
    are over the records that were read; how many lines were not, and which, is said where the
    numbers are shown (``llm-locust summarize``: one line on stderr and the summary's
    ``rebuilt.skipped_lines``).
    """

    SHOWN = 10  #: line numbers kept (the count is exact)

    def __init__(self) -> None:
        self.count = 0
        self.lines: list[int] = []
        self.torn_last = False

    def add(self, number: int) -> None:
        self.count += 1
        if len(self.lines) < self.SHOWN:
            self.lines.append(number)

    def to_json(self, file: str) -> dict[str, Any]:
        return {
            "count": self.count,
            "file": file,
            "lines": list(self.lines),
            "last_line_torn": self.torn_last,
            "why": "not a JSON record (a crash mid-write or a full disk); left out of every statistic",
        }


def skipped_sentence(block: Mapping[str, Any], path: str) -> str:
    """The one line that says :meth:`Unreadable.to_json`'s ``block`` of the file at ``path``."""
    count, lines = int(block["count"]), list(block["lines"])
    shown = ", ".join(str(n) for n in lines) + (", ..." if count > len(lines) else "")
    torn = "; the last one cut short" if block.get("last_line_torn") else ""
    return (
        f"skipped {count} unreadable line{'s' if count != 1 else ''} of {path} "
        f"(line{'s' if len(lines) != 1 else ''} {shown}{torn}): not JSON records, left out of every statistic"
    )


def _record(line: bytes) -> dict[str, Any] | None:
    try:
        row = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return row if isinstance(row, dict) else None


def read_rows(path: str | os.PathLike[str], unreadable: Unreadable | None = None) -> Iterator[dict[str, Any]]:
    """Rows of a ``requests.jsonl``; a line that is no record (a torn last line, a corrupt one
    in the middle) is skipped, and counted in ``unreadable`` when given."""
    with open(path, "rb") as f:
        for number, line in enumerate(f, 1):
            row = _record(line) if line.endswith(b"\n") else None
            if row is not None:
                yield row
            elif line.strip() and unreadable is not None:
                unreadable.add(number)
                unreadable.torn_last = not line.endswith(b"\n")


def read_columns(
    path: str | os.PathLike[str], itl_stats: Collection[str] = (), unreadable: Unreadable | None = None
) -> Columns:
    """``requests.jsonl`` read once, row by row, into :class:`Columns` (constant memory per row)."""
    return Columns.from_rows(read_rows(path, unreadable), itl_stats)
