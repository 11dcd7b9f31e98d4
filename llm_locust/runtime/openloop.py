"""Open-loop sending: requests leave on the arrival schedule, whatever the server does.

One dispatcher per worker walks its share of the schedule (every W-th arrival of the one
global sequence, see :mod:`llm_locust.load.arrivals`) and spawns a greenlet per arrival at its
intended time, so a slow server never slows the arrivals down (no coordinated omission).
Each record keeps its intended send time; the gap to the actual send is the send lag.

With ``--max-concurrency C`` each worker lets at most ``ceil(C / W)`` requests be in
flight; an arrival that finds no free slot waits for one (marked ``waited_for_slot``),
it is never dropped.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from typing import Any

import gevent
from gevent.lock import BoundedSemaphore
from gevent.pool import Group

from llm_locust.client import StreamingClient, build_body
from llm_locust.workload.base import RequestSpec

__all__ = ["dispatch"]

_UNBOUNDED = 4096  # connection pool size without a ceiling


def dispatch(run: Any, user: Any) -> None:
    """Run this worker's share of the open-loop schedule until it ends (or the test stops)."""
    t0 = _wait_for_start(run)
    if t0 is None:
        return
    plan = run.plan
    workers = max(run.plan_workers, 1)
    ceiling = math.ceil(plan.max_concurrency / workers) if plan.max_concurrency else None
    slots = BoundedSemaphore(ceiling) if ceiling else None
    client = StreamingClient(run.config, concurrency=ceiling or _UNBOUNDED)
    group = Group()
    try:
        for offset, entry in _arrivals(run, workers):
            delay = t0 + offset - time.time()
            if delay > 0:
                gevent.sleep(delay)
            if run.stopping:  # stopped mid-schedule: send nothing new, let the in-flight drain
                break
            t_intended = time.perf_counter() + (t0 + offset - time.time())
            group.spawn(_send_one, run, user, client, slots, t_intended, entry)
        group.join()
    finally:
        group.kill()
        client.close()


def _wait_for_start(run: Any, timeout: float = 30.0) -> float | None:
    deadline = time.time() + timeout
    while run.plan_t0 is None:
        if time.time() > deadline:
            return None
        gevent.sleep(0.05)
    return run.plan_t0


def _arrivals(run: Any, workers: int) -> Iterator[tuple[float, Any]]:
    """(offset from t0, trace entry or None) for this worker."""
    plan = run.plan
    index = run.worker_slot()
    if plan.trace is not None:
        for k, entry in enumerate(plan.trace.entries):
            if k % workers == index:
                yield entry.offset_s, entry
        return
    for offset in plan.schedule(index, workers):
        yield offset, None


def _send_one(
    run: Any,
    user: Any,
    client: StreamingClient,
    slots: BoundedSemaphore | None,
    t_intended: float,
    entry: Any,
) -> None:
    waited = False
    if slots is not None:
        waited = slots.locked()
        slots.acquire()
    try:
        spec: RequestSpec = user.next_spec(entry)
        record = run.new_record(spec)
        record.t_intended = t_intended
        if waited:
            record.extra["waited_for_slot"] = True
        run.send(client, build_body(client.config, spec), record)
    finally:
        if slots is not None:
            slots.release()
