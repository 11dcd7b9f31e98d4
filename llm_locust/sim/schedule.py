"""Token clocks: when each stream's next token is due, in the two timing modes.

Fixed mode (:class:`FixedScheduler`): every request is independent; token ``i`` is due at
``t0 + ttft + i * tpot`` (absolute deadlines, so lateness never accumulates). One heap holds
every live stream's next deadline and one event-loop timer is armed for the earliest, so
1,000 streams cost one wake-up per distinct deadline instead of one task or sleep per
token. A wake-up delivers every token due within ``_SLACK`` of now, which also catches up
after a late wake.

Engine mode (:class:`EngineDriver`): the pure :class:`~llm_locust.sim.engine.Engine` is
stepped back to back on one timer; each step's tokens are written together when the step
ends. The next step starts at the previous step's *scheduled* end, so a late wake-up (a
busy host, which matters most under ``--speedup``, where steps last a few milliseconds)
does not slow the simulated GPU down: the steps catch up, as a real GPU's schedule would
not wait for its host. Only a loop more than ``_CATCH_UP`` behind (the process was
suspended) restarts the schedule from now: that much simulated GPU time is lost, and the
driver counts it (``restarts``, ``lost_s``, beside ``late_max_s``, the largest lateness of a
step's end; the simulator's ``/metrics`` shows them as ``llm_sim_schedule_*``), so a run on an
overloaded host can tell that its latencies ran slow. A step never admits a request that arrived
after the step's scheduled start (the engine is told the step's time), so catching up
stays causal.

Slow degradation (:class:`~llm_locust.sim.faults.Drift`) lengthens each token interval by
its wall-clock slope; with a drift, fixed-mode deadlines are chained from the previous
*scheduled* deadline (not from "now"), so lateness still does not accumulate.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math

from llm_locust.sim.engine import Engine, Seq
from llm_locust.sim.faults import Drift
from llm_locust.sim.stream import Stream

__all__ = ["EngineDriver", "FixedScheduler"]

#: Tokens due this close to "now" are delivered in the current wake-up. epoll timeouts have
#: 1 ms resolution and asyncio rounds them up, so wake-ups are 0-1 ms late anyway.
_SLACK = 0.0002
_CATCH_UP = 0.25


class FixedScheduler:
    """Timer heap for fixed TTFT/TPOT. Cancelled streams are dropped lazily when popped."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, ttft: float, tpot: float, drift: Drift | None = None
    ) -> None:
        self._loop = loop
        self.ttft = ttft
        self.tpot = tpot
        self.drift = drift if drift is not None and drift.tpot_per_s > 0 else None
        self.t_start = loop.time()
        self._heap: list[tuple[float, int, Stream]] = []
        self._seq = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.inf

    def submit(self, stream: Stream) -> None:
        self._push(stream.t0 + self.ttft, stream)
        self._arm()

    def _push(self, deadline: float, stream: Stream) -> None:
        heapq.heappush(self._heap, (deadline, next(self._seq), stream))

    def _arm(self) -> None:
        if not self._heap:
            return
        first = self._heap[0][0]
        if first >= self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = first
        self._timer = self._loop.call_at(first, self._wake)

    def _wake(self) -> None:
        self._timer = None
        self._timer_at = math.inf
        heap = self._heap
        pop, push = heapq.heappop, self._push
        t0_offset, tpot, drift = self.ttft, self.tpot, self.drift
        limit = self._loop.time() + _SLACK
        while heap and heap[0][0] <= limit:
            deadline, _, stream = pop(heap)
            if stream.on_token(deadline):
                if drift is None:
                    push(stream.t0 + t0_offset + stream.sent * tpot, stream)
                else:
                    push(deadline + tpot + drift.extra_tpot(deadline - self.t_start), stream)
        self._arm()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._heap.clear()


class EngineDriver:
    """Steps the engine on the event loop and delivers each step's tokens at its end."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        engine: Engine,
        drift: Drift | None = None,
        overhead: float = 0.0,
    ) -> None:
        self._loop = loop
        self.engine = engine
        self.overhead = overhead  # a calibrated model's time per request outside the engine
        self.drift = drift or Drift()
        self.t_start = loop.time()
        self._timer: asyncio.TimerHandle | None = None
        self._batch: list[Seq] = []
        self._step_end = 0.0
        self.steps = 0
        self.restarts = 0
        self.lost_s = 0.0  # wall time the schedule gave up (restarts)
        self.late_max_s = 0.0  # the latest a step's end was handled

    def submit(self, stream: Stream, block_hashes: tuple[int, ...] = ()) -> None:
        """Queue the stream's sequence. Raises ``ValueError`` if it can never fit the KV cache."""
        seq = Seq(
            prompt_tokens=stream.prompt_tokens,
            output_tokens=stream.n_tokens,
            payload=stream,
            block_hashes=block_hashes,
            arrival=stream.t0 + self.overhead,
        )
        self.engine.add(seq)
        stream.release = lambda: self._release(seq)
        if self._timer is None:
            self._start(self._loop.time())

    def _release(self, seq: Seq) -> None:
        self.engine.abort(seq)

    def leak(self, now: float) -> None:
        """Bring the KV leak up to date (slow degradation)."""
        if self.drift.kv_leak_per_s > 0:
            self.engine.kv.leak(self.drift.leaked(now - self.t_start))

    def _start(self, start: float) -> None:
        self.leak(start)
        result = self.engine.step(start)
        if result.duration <= 0 and not result.batch:
            waiting = self.engine.waiting
            if waiting and waiting[0].arrival > start:  # caught up to a request not yet arrived
                self._start(waiting[0].arrival)
                return
            self._timer = None
            return
        if self.engine.config.prefix_caching:
            for seq in result.admitted:
                seq.payload.cached_tokens = seq.cached_tokens
        self._batch = result.batch
        self._step_end = start + result.duration + self.drift.extra_tpot(start - self.t_start)
        self._timer = self._loop.call_at(self._step_end, self._end)

    def _end(self) -> None:
        end = self._step_end
        for seq in self._batch:
            stream: Stream = seq.payload
            stream.on_token(end)
        self._batch = []
        self._timer = None
        now = self._loop.time()
        late = now - end
        self.steps += 1
        self.late_max_s = max(self.late_max_s, late)
        if self.engine.has_work:
            if late >= _CATCH_UP:
                self.restarts += 1
                self.lost_s += late
            self._start(end if late < _CATCH_UP else now)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
