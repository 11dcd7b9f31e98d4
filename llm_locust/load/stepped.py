"""Open-loop arrivals for rate steps decided on the fly (``--search rate``).

A rate search cannot draw its schedule up front: the next rate depends on the last step's
verdict. The process that runs the search announces each step as ``(applies_at, rate)`` (wall
clock) and, at the end, the time the load stops; every sender (the local runner, or each worker)
keeps a :class:`SteppedArrivals` fed with those announcements. Step ``k`` is its own seeded
renewal sequence from ``applies_at``, split across workers as a fixed schedule is (every W-th
arrival of one global sequence, see :mod:`llm_locust.load.arrivals`), and it ends where the
next step begins. An arrival drawn before its step's end was known is checked again before
it is sent (:meth:`SteppedArrivals.peek` returns only arrivals inside their step).

Pure module: no Locust, no network. Times are wall-clock seconds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence

from llm_locust.config.jsontypes import JsonObject
from llm_locust.load.arrivals import ArrivalProcess, ArrivalSchedule, RateStep, split_for_worker

__all__ = ["POLL_S", "WAIT", "SteppedArrivals", "SteppedRates"]

#: :meth:`SteppedArrivals.peek` has nothing yet: no step has been announced.
WAIT = "wait"


class SteppedArrivals:
    """This sender's share of the arrivals of announced rate steps."""

    def __init__(self, process: ArrivalProcess, seed: int, worker_index: int = 0, workers: int = 1) -> None:
        self.process = process
        self.seed = seed
        self.worker_index = worker_index
        self.workers = max(workers, 1)
        self.steps: list[tuple[float, float]] = []  # (applies_at, rate)
        self.stopped_at: float | None = None
        self._k = -1
        self._offsets: Iterator[float] | None = None
        self._next: float | None = None

    def update(self, steps: Sequence[Sequence[float]], stopped_at: float | None) -> None:
        """The announcements so far: every step's ``(applies_at, rate)`` in order, and the stop."""
        self.steps = [(float(a), float(r)) for a, r in steps]
        self.stopped_at = stopped_at

    def _start(self, k: int) -> None:
        rate = self.steps[k][1]
        schedule = ArrivalSchedule(self.process, (RateStep(rate, None),), (self.seed + 1) * 100_003 + k)
        self._offsets = iter(split_for_worker(schedule, self.worker_index, self.workers))
        self._k, self._next = k, None

    def _end(self, k: int) -> float:
        if k + 1 < len(self.steps):
            return self.steps[k + 1][0]
        return self.stopped_at if self.stopped_at is not None else math.inf

    def peek(self) -> float | str | None:
        """The next arrival's wall time, :data:`WAIT` before any step, ``None`` once stopped."""
        while True:
            if self._k < 0:
                if not self.steps:
                    return None if self.stopped_at is not None else WAIT
                self._start(0)
            assert self._offsets is not None
            if self._next is None:
                self._next = self.steps[self._k][0] + next(self._offsets)
            if self._next < self._end(self._k):
                return self._next
            if self._k + 1 < len(self.steps):
                self._start(self._k + 1)
                continue
            return None

    def pop(self) -> None:
        """The arrival :meth:`peek` returned was sent."""
        self._next = None


#: How often a rate search's dispatcher looks at the announcements while it waits (seconds).
POLL_S = 0.2


class SteppedRates:
    """The :class:`~llm_locust.load.sources.ArrivalSource` of ``--search rate``: the arrivals of
    the rate steps announced so far (:meth:`announce`, offsets from the plan's ``t0``), each
    worker its share. ``for_worker`` waits (``sleep``, cooperative under Locust's gevent) while
    nothing is due, and looks at the announcements again before it hands an arrival on."""

    def __init__(
        self,
        process: ArrivalProcess,
        seed: int = 0,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.process, self.seed, self.clock, self.sleep = process, seed, clock, sleep
        self.t0 = 0.0
        self.steps: list[tuple[float, float]] = []  # (applies at, offset from t0; rate)
        self.stopped_at: float | None = None

    def reset(self, t0: float) -> None:
        """A new test, starting at wall time ``t0``: no step announced yet."""
        self.t0, self.steps, self.stopped_at = t0, [], None

    def announce(self, steps: Sequence[Sequence[float]], stopped_at: float | None) -> None:
        self.steps = [(float(a), float(r)) for a, r in steps]
        self.stopped_at = stopped_at

    def for_worker(self, index: int, count: int) -> Iterator[tuple[float, None]]:
        stepped = SteppedArrivals(self.process, self.seed, index, count)
        while True:
            stepped.update(self.steps, self.stopped_at)
            due = stepped.peek()
            if due is None:
                return
            now = self.clock() - self.t0
            if due == WAIT or float(due) > now + POLL_S:
                self.sleep(POLL_S if due == WAIT else min(POLL_S, float(due) - now))
                continue
            stepped.pop()
            yield float(due), None

    def describe(self) -> JsonObject:
        return {"arrival": {"kind": self.process.kind.value, "burstiness": self.process.burstiness}}
