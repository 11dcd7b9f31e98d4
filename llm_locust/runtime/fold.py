"""Finished requests handed on in the event loop's idle time, not in the burst that ends them.

Streams started together stay in step, so their requests end in bursts (up to ~45 records
in 10 ms at 500 streams per core, benchmarks/README.md). Each finished request's row (the
record to its JSON form, the line written, the live aggregate, the outbox) costs
~0.1-0.2 ms; run in the user's greenlet, straight after the hub woke it, a burst of them
holds the loop while the next requests' first bytes and every other stream's tokens wait to
be timestamped.

:class:`IdleFolder` queues that work and runs it from a libev *idle* watcher, which the loop
calls only when no socket or timer is pending: between bursts. Each call runs queued items
for at most :data:`SLICE_S`, then returns to the loop. Nothing is lost or reordered:

- items run in the order they were queued, each exactly once;
- a loop that never idles (a busy client: at 700 streams a core some socket is ready at
  nearly every poll, and libev calls an idle watcher only when none is) does not let the
  queue grow: once :data:`MAX_PENDING` items wait, or the oldest has waited
  :data:`MAX_WAIT_S`, each submit runs one slice of the queue in the caller, at least two
  items (so the queue shrinks while it is over its bounds), never the whole queue: 512
  rows at once held the loop 60-90 ms every 2 s at 700 lockstep streams, the tokens of every
  other stream read late and coalesced (benchmarks/README.md, issue 29);
- :meth:`IdleFolder.drain` runs what is queued now: the end of a test calls it before the
  results close (a worker before its final batch), so every record still reaches disk.

The records themselves are complete before they are queued: every timing mark was taken by
the reader (:mod:`llm_locust.client.reader`); only their serialisation and delivery wait.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable

import gevent

__all__ = ["MAX_PENDING", "MAX_WAIT_S", "SLICE_S", "IdleFolder"]

log = logging.getLogger("llm_locust")

#: Seconds of queued work one idle call runs before it lets the loop poll again.
SLICE_S = 0.001
#: Items queued at most before each submit runs a slice of the queue in the caller.
MAX_PENDING = 512
#: Seconds the oldest item may wait before each submit runs a slice of the queue in the caller.
MAX_WAIT_S = 0.5

Item = Callable[[], None]


class IdleFolder:
    """Runs queued work when the event loop is idle (see the module docstring)."""

    def __init__(
        self, slice_s: float = SLICE_S, max_pending: int = MAX_PENDING, max_wait_s: float = MAX_WAIT_S
    ) -> None:
        self.slice_s = slice_s
        self.max_pending = max_pending
        self.max_wait_s = max_wait_s
        self._queue: deque[tuple[float, Item]] = deque()
        self._watcher: object | None = None
        self.inline_runs = 0  # how often the queue had to be run in the caller

    def __len__(self) -> int:
        return len(self._queue)

    def submit(self, item: Item) -> None:
        """Run ``item`` once the loop is idle (or sooner: see the module docstring)."""
        now = time.perf_counter()
        queue = self._queue
        queue.append((now, item))
        if len(queue) >= self.max_pending or now - queue[0][0] >= self.max_wait_s:
            self.inline_runs += 1
            self._run_slice(minimum=2)
            if not queue:
                self._stop()
                return
        watcher = self._watcher
        if watcher is None:
            watcher = self._watcher = gevent.get_hub().loop.idle(ref=False)
        if not watcher.active:  # type: ignore[attr-defined]
            watcher.start(self._on_idle)  # type: ignore[attr-defined]

    def drain(self) -> None:
        """Run everything queued now, in order."""
        while self._queue:
            self._run_one()
        self._stop()

    def _on_idle(self) -> None:
        self._run_slice()
        if not self._queue:
            self._stop()

    def _run_slice(self, minimum: int = 1) -> None:
        """Queued items in order, for at most :attr:`slice_s` once ``minimum`` of them ran."""
        queue = self._queue
        deadline = time.perf_counter() + self.slice_s
        ran = 0
        while queue:
            self._run_one()
            ran += 1
            if ran >= minimum and time.perf_counter() >= deadline:
                return

    def _run_one(self) -> None:
        _, item = self._queue.popleft()
        try:
            item()
        except Exception:  # one record's sink failing must not lose the others
            log.exception("llm-locust: handing on a finished request failed")

    def _stop(self) -> None:
        watcher = self._watcher
        if watcher is not None and watcher.active:  # type: ignore[attr-defined]
            watcher.stop()  # type: ignore[attr-defined]
