"""``--burst`` in a running test: one dispatcher greenlet per sending process.

At each wave's time (:func:`llm_locust.load.bursts.wave_offsets`, from the plan's ``t0``, which
the master shares with its workers) the dispatcher spawns this process's share of the wave at
once, open loop, on top of whatever the users are doing. Each record says its wave
(``burst``) and the wave's wall-clock time (``burst_at``).

When the load stops, no new wave leaves; the requests of a wave in flight get the same drain
as the users' (``--stop-timeout``, counted from the moment the stop began), then are killed
and recorded ``incomplete``, before the records go to the results (or to the master).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

import gevent
from gevent.pool import Group

from llm_locust.client.streaming import StreamingClient, build_body
from llm_locust.config.jsontypes import JsonObject
from llm_locust.load.bursts import wave_offsets, wave_share
from llm_locust.load.stages import Stage
from llm_locust.record import RequestRecord
from llm_locust.runtime.context import RunContext
from llm_locust.runtime.sender import Sender
from llm_locust.workload.base import RequestSource, RequestSpec

__all__ = ["BurstDispatcher", "BurstRun"]

_POLL_S = 0.2
_START_TIMEOUT_S = 30.0


class BurstRun(Protocol):
    """What the dispatcher needs of the run (the node's front half,
    :class:`~llm_locust.runtime.front.LoadFront`)."""

    @property
    def stopping(self) -> bool: ...

    def stage_now(self) -> Stage | None: ...

    def new_source(self, stage: Stage | None = None) -> RequestSource: ...

    def new_record(self, spec: RequestSpec) -> RequestRecord: ...

    def send(
        self, client: Sender, body: JsonObject, record: RequestRecord, keep_text: bool = False
    ) -> str: ...


class BurstDispatcher:
    """Sends this process's share of every wave until the load stops; :meth:`finish` drains.

    ``plan_start``: the plan's start ``t0`` and the number of sending processes, as the shape
    fixed them and sent them to the workers (which may hear of them after their test started:
    polled until ``t0`` is known); this process's share follows from its worker index."""

    def __init__(
        self, context: RunContext, run: BurstRun, plan_start: Callable[[], tuple[float | None, int]]
    ) -> None:
        self.context = context
        self.run = run
        self._plan_start = plan_start
        self.group = Group()
        self.client: StreamingClient | None = None
        self.stopping_since: float | None = None
        self.waves = 0
        self.main = gevent.spawn(self._dispatch)

    def _dispatch(self) -> None:
        run, context, spec = self.run, self.context, self.context.plan.burst
        t0 = self._wait_for_t0()
        if t0 is None or spec is None or context.client is None:
            return
        workers = max(self._plan_start()[1], 1)
        share = wave_share(spec.size, context.worker_index % workers, workers)
        if share:
            self.client = StreamingClient(context.client, concurrency=share)
            for wave, offset in wave_offsets(spec):
                if t0 + offset < context.start_time - 1.0:
                    continue  # a start fixed for an earlier test: its past waves never leave
                if not self._sleep_until(t0 + offset):
                    break
                source = run.new_source(run.stage_now())
                for _ in range(share):
                    self.group.spawn(self._send_one, source, wave, t0 + offset)
                self.waves += 1
        self._sleep_until(None)

    def _wait_for_t0(self) -> float | None:
        deadline = time.time() + _START_TIMEOUT_S
        while self._plan_start()[0] is None and time.time() < deadline and not self._stopping():
            gevent.sleep(0.05)
        return self._plan_start()[0]

    def _sleep_until(self, when: float | None) -> bool:
        """Sleep until ``when`` (``None``: until the load stops); ``False`` if it stopped first."""
        while not self._stopping():
            left = _POLL_S if when is None else when - time.time()
            if left <= 0:
                return True
            gevent.sleep(min(left, _POLL_S))
        return False

    def _stopping(self) -> bool:
        if self.run.stopping and self.stopping_since is None:
            self.stopping_since = time.time()
        return self.run.stopping

    def _send_one(self, source: RequestSource, wave: int, at: float) -> None:
        run, client = self.run, self.client
        assert client is not None
        spec = source.next_request()
        record = run.new_record(spec)
        record.extra["burst"] = wave
        record.extra["burst_at"] = at
        run.send(client, build_body(client.config, spec), record)

    def finish(self, drain_s: float) -> None:
        """No new wave; the waves in flight finish within the drain, or are recorded incomplete."""
        self._stopping()
        self.main.kill()
        since = self.stopping_since if self.stopping_since is not None else time.time()
        self.group.join(timeout=max(0.0, since + drain_s - time.time()))
        self.group.kill()
        if self.client is not None:
            self.client.close()
