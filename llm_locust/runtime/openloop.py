"""Open-loop sending: requests leave on the arrival schedule, whatever the server does.

One dispatcher per worker walks its share of the plan's arrivals (the plan's
:class:`~llm_locust.load.sources.ArrivalSource`: a seeded rate schedule or a trace, every
W-th arrival of the one global sequence) and spawns a greenlet per arrival at its intended
time, so a slow server never slows the arrivals down (no coordinated omission). Each record
keeps its intended send time; the gap to the actual send is the send lag.

With ``--max-concurrency C`` each worker lets at most ``ceil(C / W)`` requests be in
flight; an arrival that finds no free slot waits for one (marked ``waited_for_slot``),
it is never dropped.
"""

from __future__ import annotations

import math
import time
from typing import Protocol

import gevent
from gevent.lock import BoundedSemaphore
from gevent.pool import Group

from llm_locust.client.streaming import build_body
from llm_locust.config.jsontypes import JsonObject
from llm_locust.load.replicas import Balancer
from llm_locust.load.traces import TraceEntry
from llm_locust.record import RequestRecord
from llm_locust.runtime.context import RunContext
from llm_locust.runtime.replicas import make_client
from llm_locust.runtime.sender import Sender
from llm_locust.workload.base import RequestSpec

__all__ = ["OpenLoopRun", "SpecSource", "dispatch"]

_UNBOUNDED = 4096  # connection pool size without a ceiling


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


def dispatch(context: RunContext, run: OpenLoopRun, user: SpecSource) -> None:
    """Run this worker's share of the open-loop schedule until it ends (or the test stops)."""
    plan, t0 = context.plan, context.t0
    if t0 is None or plan.arrivals is None or context.client is None:
        return
    workers = max(context.workers, 1)
    ceiling = math.ceil(plan.max_concurrency / workers) if plan.max_concurrency else None
    slots = BoundedSemaphore(ceiling) if ceiling else None
    # a dispatcher is no user: with --endpoints it picks a replica per request
    client = make_client(context.client, run.balancer(), "request", ceiling or _UNBOUNDED)
    group = Group()
    try:
        for offset, entry in plan.arrivals.for_worker(context.slot, workers):
            delay = t0 + offset - time.time()
            if delay > 0:
                gevent.sleep(delay)
            if run.stopping or not user.ticket():  # stopped mid-schedule, or --num-requests sent:
                break  # nothing new, let the in-flight drain
            t_intended = time.perf_counter() + (t0 + offset - time.time())
            group.spawn(_send_one, run, user, client, slots, (offset, t_intended), entry)
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
