"""Open-loop arrivals as one strategy: an :class:`ArrivalSource` gives each worker its arrivals.

The open-loop dispatcher does not know where its arrivals come from: a seeded renewal
process over rate steps (:class:`RateArrivals`: ``--request-rate``, ``--rate-ramp``,
``--matrix rate=...``) or the rows of a trace file (:class:`TraceArrivals`: ``--trace``).
Each says, for worker ``index`` of ``count``, when each of its requests is due (seconds from
the plan's start ``t0``) and, for a trace, the row whose lengths the request must have.
Every worker keeps every ``count``-th arrival of the one global sequence, so the union over
the workers is exactly the single-process schedule (see :mod:`llm_locust.load.arrivals`).

A new open-loop model is a new source: a class with ``for_worker`` and ``describe``.
Pure module: no Locust, no network.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from llm_locust.config.jsontypes import JsonObject
from llm_locust.load.arrivals import ArrivalProcess, ArrivalSchedule, RateStep, split_for_worker
from llm_locust.load.stages import StagePlan
from llm_locust.load.trace_reuse import PrefixReuse
from llm_locust.load.traces import Trace, TraceEntry

__all__ = ["Arrival", "ArrivalSource", "RateArrivals", "TraceArrivals", "before_end"]

#: When a request is due (seconds from ``t0``) and the trace row it replays (``None``: the workload's).
Arrival = tuple[float, TraceEntry | None]


class ArrivalSource(Protocol):
    """The arrivals of an open-loop plan, shared out among its workers."""

    def for_worker(self, index: int, count: int) -> Iterator[Arrival]:
        """Worker ``index`` of ``count``'s arrivals, in time order."""
        ...

    def describe(self) -> JsonObject:
        """What the summary's ``config.load_model`` says about these arrivals."""
        ...


@dataclass(frozen=True)
class RateArrivals:
    """A renewal process (Poisson, gamma, constant) over the rate steps of a stage plan."""

    process: ArrivalProcess
    stages: StagePlan
    seed: int = 0

    def schedule(self, index: int = 0, count: int = 1) -> ArrivalSchedule:
        """Worker ``index`` of ``count``'s share of the arrivals (offsets in seconds from ``t0``)."""
        steps = tuple(RateStep(s.target, s.duration_s) for s in self.stages)
        return split_for_worker(ArrivalSchedule(self.process, steps, self.seed), index, count)

    def for_worker(self, index: int, count: int) -> Iterator[Arrival]:
        for offset in self.schedule(index, count):
            yield offset, None

    def describe(self) -> JsonObject:
        return {"arrival": {"kind": self.process.kind.value, "burstiness": self.process.burstiness}}


@dataclass(frozen=True)
class TraceArrivals:
    """The rows of a trace at their (spread, sliced, time-scaled) offsets, shared out over the
    workers: whole sessions when the rows have them (a session's requests on one worker, session
    ``s`` on worker ``s % count``), else round robin."""

    trace: Trace
    reuse: PrefixReuse | None = None  # hash_ids: the trace's sessions and hit ceiling

    def for_worker(self, index: int, count: int) -> Iterator[Arrival]:
        if not 0 <= index < count:
            raise ValueError(f"worker index {index} outside 0..{count - 1}")
        entries = self.trace.entries
        mine: Iterator[TraceEntry]
        if self.reuse is not None:
            mine = (e for e in entries if e.session is not None and e.session % count == index)
        else:
            mine = iter(entries[index::count])
        for entry in mine:
            yield entry.offset_s, entry

    def describe(self) -> JsonObject:
        trace = self.trace.describe()
        if self.reuse is not None:
            trace["prefix_reuse"] = self.reuse.describe()
        return {"trace": trace}


def before_end(arrivals: Iterable[Arrival], end: float | None) -> Iterator[Arrival]:
    """The arrivals due before ``end`` (seconds from ``t0``; ``None``: all of them). A stage is
    ``[start, end)``, so an arrival due at ``end`` is past the schedule; arrivals come in time
    order, so the first one past it ends the walk (a worker's own plan has no ``-t``: its rate
    stage runs "forever", and only the master's end stops it)."""
    for arrival in arrivals:
        if end is not None and arrival[0] >= end:
            return
        yield arrival
