"""Open-loop sending: requests leave on the arrival schedule, whatever the server does.

One dispatcher per worker walks its share of the plan's arrivals (the plan's
:class:`~llm_locust.load.sources.ArrivalSource`: a seeded rate schedule or a trace, every
W-th arrival of the one global sequence) and spawns a greenlet per arrival at its intended
time, so a slow server never slows the arrivals down (no coordinated omission). Each record
keeps its intended send time; the gap to the actual send is the send lag.

With ``--max-concurrency C`` each worker lets at most ``ceil(C / W)`` requests be in
flight; an arrival that finds no free slot waits for one (marked ``waited_for_slot``),
it is never dropped.

A worker runs one dispatcher a test (:class:`_Turn`). When a worker quits, Locust moves its
dispatcher user to a worker left, which then has two for a moment (until the shape asks for one a
worker): the second waits, and if Locust stops the running one instead it takes over from where
that one stopped, never from ``t0`` (it replayed this worker's share from the start: every arrival
already past at once, 2026-12-02). A dispatcher that takes over skips arrivals due more than
``RESUME_GRACE_S`` ago: they are not sent (a dispatcher killed and replaced later). The survivor keeps
its own share of the schedule; the departed worker's share from its quit on is not sent (the
summary's ``arrivals_not_sent``, docs/load-models.md "Open loop").
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Protocol

import gevent
from gevent.event import Event
from gevent.lock import BoundedSemaphore
from gevent.pool import Group

from llm_locust.client.streaming import build_body
from llm_locust.config.balance import BalanceScope
from llm_locust.config.jsontypes import JsonObject
from llm_locust.load.replicas import Balancer
from llm_locust.load.sources import before_end
from llm_locust.load.traces import TraceEntry
from llm_locust.record import RequestRecord
from llm_locust.runtime.context import RunContext
from llm_locust.runtime.replicas import make_client
from llm_locust.runtime.sender import Sender
from llm_locust.workload.base import RequestSpec

__all__ = ["OpenLoopRun", "SpecSource", "dispatch"]

_UNBOUNDED = 4096  # connection pool size without a ceiling
#: A dispatcher taking over sends an arrival due at most this long ago (the hand-over's own gap,
#: milliseconds); older ones were the stopped dispatcher's, or are not sent.
RESUME_GRACE_S = 0.5
WAIT_SLICE_S = 0.2  # a waiting dispatcher checks this often whether it is stopping


class OpenLoopRun(Protocol):
    """What the dispatcher needs of the run (the node's front half,
    :class:`~llm_locust.runtime.front.LoadFront`)."""

    @property
    def stopping(self) -> bool: ...

    def new_record(self, spec: RequestSpec) -> RequestRecord: ...

    def send(
        self, client: Sender, body: JsonObject, record: RequestRecord, keep_text: bool = False
    ) -> str: ...

    def balancer(self) -> Balancer | None: ...


class SpecSource(Protocol):
    """Where the dispatcher's requests come from (the user): a trace row's lengths, or the workload's."""

    def next_spec(self, entry: TraceEntry | None = None) -> RequestSpec: ...

    def ticket(self) -> bool: ...

    @property
    def stopping(self) -> bool:
        """The test is stopping, or Locust is stopping this user (it has one dispatcher too many)."""
        ...


@dataclass
class _Turn:
    """This process's dispatching in one test: one dispatcher at a time, and how far it got."""

    context: RunContext
    free: Event = field(default_factory=Event)
    started: bool = False
    sent_to: float = -math.inf  # the offset of the last arrival a dispatcher of this test took
    holder: object | None = None  # the dispatcher that has the turn

    def __post_init__(self) -> None:
        self.free.set()

    def release(self, held: object | None) -> None:
        """The dispatcher that has the turn (``held``) stops sending: a waiting one may go on."""
        if held is not None and self.holder is held:
            self.holder = None
            self.free.set()


_turn: _Turn | None = None  # the current test's (a process runs one test at a time)


def _turn_of(context: RunContext) -> _Turn:
    global _turn
    if _turn is None or _turn.context is not context:
        _turn = _Turn(context)
    return _turn


def dispatch(context: RunContext, run: OpenLoopRun, user: SpecSource) -> None:
    """Run this worker's share of the open-loop schedule until it ends (or the test stops), one
    dispatcher at a time: a second one waits until the first stops, then goes on from there."""
    plan, t0 = context.plan, context.t0
    if t0 is None or plan.arrivals is None or context.client is None:
        return
    turn = _turn_of(context)
    while not turn.free.wait(WAIT_SLICE_S):
        if user.stopping:
            return
    if user.stopping:
        return
    turn.free.clear()
    turn.holder = held = object()
    try:
        _walk(context, run, user, turn, t0)
    finally:
        turn.release(held)


def _walk(context: RunContext, run: OpenLoopRun, user: SpecSource, turn: _Turn, t0: float) -> None:
    """This dispatcher's part of the worker's share: from the start, or (taking over) after the last
    arrival taken and not before ``RESUME_GRACE_S`` ago; it hands the turn back as it stops."""
    plan = context.plan
    assert plan.arrivals is not None and context.client is not None
    resume = turn.started
    turn.started = True
    workers = max(context.workers, 1)
    ceiling = math.ceil(plan.max_concurrency / workers) if plan.max_concurrency else None
    slots = BoundedSemaphore(ceiling) if ceiling else None
    # a dispatcher is no user: with --endpoints it picks a replica per request
    client = make_client(context.client, run.balancer(), BalanceScope.REQUEST, ceiling or _UNBOUNDED)
    group = Group()
    try:
        skip_to = max(turn.sent_to, time.time() - t0 - RESUME_GRACE_S) if resume else -math.inf
        # the master's end: a worker's own plan has no -t (Locust passes workers none of its options)
        arrivals = before_end(plan.arrivals.for_worker(context.slot, workers), context.plan_end)
        for offset, entry in arrivals:
            if offset <= skip_to:  # taken by the dispatcher before, or past: not sent twice or late
                continue
            delay = t0 + offset - time.time()
            if delay > 0:
                gevent.sleep(delay)
            if user.stopping or not user.ticket():  # stopped mid-schedule, or --num-requests sent:
                break  # nothing new, let the in-flight drain
            turn.sent_to = offset
            t_intended = time.perf_counter() + (t0 + offset - time.time())
            group.spawn(_send_one, run, user, client, slots, (offset, t_intended), entry)
        turn.release(turn.holder)  # a dispatcher waiting goes on while this one's requests finish
        group.join()
    finally:
        group.kill()
        client.close()


def _send_one(
    run: OpenLoopRun,
    user: SpecSource,
    client: Sender,
    slots: BoundedSemaphore | None,
    intended: tuple[float, float],
    entry: TraceEntry | None,
) -> None:
    """One arrival: ``intended`` is its offset in the plan (its stage) and its perf_counter time."""
    waited = False
    if slots is not None:
        waited = slots.locked()
        slots.acquire()
    try:
        spec = user.next_spec(entry)
        record = run.new_record(spec)
        record.schedule_offset, record.t_intended = intended
        if waited:
            record.extra["waited_for_slot"] = True
        run.send(client, build_body(client.config, spec), record)
    finally:
        if slots is not None:
            slots.release()
