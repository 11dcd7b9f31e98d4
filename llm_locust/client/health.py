"""The client's own health: how late its event loop runs, when it stalled, how busy it is.

Every timestamp llm-locust takes is taken by the event loop (:mod:`llm_locust.client.reader`),
so a loop that runs late makes every latency look longer than the server made it.
:class:`LoopMonitor` measures that directly: a hub timer due every :data:`PERIOD`
seconds notes how late it fired (``perf_counter`` against its due time). A lateness
of at least :data:`STALL_FLOOR` is a *stall*: the process did not look at its sockets
from the due time until the timer fired (a CPU-bound loop, a GC pause, swapping, a
``SIGSTOP``). Two products:

- per request: :meth:`LoopMonitor.stall_within` gives the seconds of stall inside a
  request's span (the record's ``client_stall_s``), counting a stall still in progress
  when the request ends (the timer has not run yet when a stalled loop wakes up with a
  finished stream in the same iteration);
- per interval (one second of wall clock): CPU of the process (``process_time``) as a
  fraction of one core, the host's CPU beside it (``host_cpu``: the share of all its
  ``cores`` busy, from ``/proc/stat``; absent where there is no such file), so an overloaded
  host is told apart from a busy process, the loop's mean / p90 / max lateness and the stall
  seconds with where they lie (``stall_from`` / ``stall_to``: a step counts only its own), the
  numbers :mod:`llm_locust.results.saturation` turns into "client saturated" verdicts. Workers
  ship theirs with their records (:mod:`llm_locust.runtime.distributed`); the process that owns
  the results writes each one to ``health.jsonl`` as it closes (:meth:`LoopMonitor.subscribe`),
  so ``llm-locust summarize DIR`` rebuilds the verdicts.

The timer's callback runs in the hub (no greenlet, no switch) and costs about 2 µs:
at 50 per second, 0.01 % of a core. With ``LLMLOCUST_HEALTH_LOG=FILE`` in the
environment each interval is also appended to FILE as a JSON line (the benchmarks read
the client's health from there; not an ``LLM_LOCUST_*`` name, which would be read as an option).
"""

from __future__ import annotations

import bisect
import json
import os
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import gevent

if TYPE_CHECKING:  # the loop's timer type exists in gevent's stubs only
    from gevent._types import _TimerWatcher

__all__ = [
    "INTERVAL",
    "PERIOD",
    "STALL_FLOOR",
    "HealthInterval",
    "LoopMonitor",
    "host_cpu_times",
    "host_share",
    "monitor",
    "since",
]

#: One closed interval's figures by name: start, end (wall clock), cpu, lag_mean_s, lag_p90_s,
#: lag_max_s, stall_s, ticks; stall_from and stall_to (wall clock: the first stall's start, the last
#: one's end) when it stalled; host_cpu and cores where the host's CPU is known.
HealthInterval = dict[str, float]
#: Seconds between the timer's due times.
PERIOD = 0.02
#: A lateness at least this long is a stall (the client's own pause, not the server's).
STALL_FLOOR = 0.1
#: Seconds of wall clock per interval record.
INTERVAL = 1.0
#: Stalls older than this are forgotten (no request lasts longer than its timeout).
_KEEP_STALLS_S = 3600.0
_PROC_STAT = "/proc/stat"
_NO_STALL = (float("inf"), float("-inf"))


def host_cpu_times(path: str = _PROC_STAT) -> tuple[float, float] | None:
    """(busy, total) CPU time of the whole host since boot (clock ticks, every core), from the
    first line of ``/proc/stat``; ``None`` where it cannot be read. Idle and I/O wait are not busy."""
    try:
        with open(path, encoding="ascii") as stat:
            fields = stat.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [float(v) for v in fields[1:9]]  # user nice system idle iowait irq softirq steal
    total = sum(ticks)
    return total - ticks[3] - (ticks[4] if len(ticks) > 4 else 0.0), total


def host_share(before: tuple[float, float] | None, after: tuple[float, float] | None) -> float | None:
    """The share (0-1) of the host's CPU capacity that was busy between two readings."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return min(max((after[0] - before[0]) / (after[1] - before[1]), 0.0), 1.0)


class LoopMonitor:
    """One per process: see the module docstring. ``start`` is idempotent."""

    def __init__(
        self, period: float = PERIOD, stall_floor: float = STALL_FLOOR, interval: float = INTERVAL
    ) -> None:
        self.period = period
        self.stall_floor = stall_floor
        self.interval = interval
        # closed intervals, in order (the last day's: 86,400 of ~300 bytes)
        self.intervals: deque[HealthInterval] = deque(maxlen=86_400)
        self._unshipped: list[HealthInterval] = []
        self._listeners: list[Callable[[HealthInterval], None]] = []
        self._stall_starts: deque[float] = deque()
        self._stall_ends: deque[float] = deque()
        self._timer: _TimerWatcher | None = None
        self._due = 0.0
        self._lags: list[float] = []
        self._open_at = (0.0, 0.0, 0.0)  # perf_counter, wall clock, process_time
        self._stall_in_interval = 0.0
        self._stall_span = _NO_STALL
        self._host: tuple[float, float] | None = None
        self.cores = os.cpu_count() or 1
        self._log = os.environ.get("LLMLOCUST_HEALTH_LOG")

    # -- running -------------------------------------------------------------------
    def start(self) -> None:
        if self._timer is not None:
            return
        self._open_at = (time.perf_counter(), time.time(), time.process_time())
        self._host = host_cpu_times()
        self._arm(time.perf_counter())

    def _arm(self, now: float) -> None:
        # a fresh one-shot timer each time: gevent fires a timer restarted inside its own
        # callback at once, over and over
        timer = self._timer = gevent.get_hub().loop.timer(self.period, ref=False)
        self._due = now + self.period
        timer.start(self._tick, update=True)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer.close()
            self._timer = None

    def _tick(self) -> None:
        now = time.perf_counter()
        self._note(now)
        if now - self._open_at[0] >= self.interval:
            self._close_interval(now)
        self._rearm(now)

    def _rearm(self, now: float) -> None:
        """The current timer (the one that called this tick, or one still pending) replaced by a
        fresh one due a period after ``now``."""
        if self._timer is not None:
            self._timer.stop()
            self._timer.close()
        self._arm(now)

    def _note(self, now: float) -> None:
        """The timer due at ``self._due`` ran (or is taken as running) at ``now``."""
        late = max(now - self._due, 0.0)
        self._lags.append(late)
        if late >= self.stall_floor:
            self._stall_starts.append(self._due)
            self._stall_ends.append(now)
            self._stall_in_interval += late
            wall = time.time()  # where the interval's stalls lie, on the wall clock
            self._stall_span = (min(self._stall_span[0], wall - late), max(self._stall_span[1], wall))
            while self._stall_ends and self._stall_ends[0] < now - _KEEP_STALLS_S:
                self._stall_starts.popleft()
                self._stall_ends.popleft()

    def _close_interval(self, now: float) -> None:
        t0, wall0, cpu0 = self._open_at
        wall, cpu = time.time(), time.process_time()
        lags = sorted(self._lags)
        host = host_cpu_times()
        entry: HealthInterval = {
            "start": wall0,
            "end": wall,
            "cpu": (cpu - cpu0) / max(now - t0, 1e-9),
            "lag_mean_s": sum(lags) / len(lags),
            "lag_p90_s": lags[min(len(lags) - 1, int(0.9 * len(lags)))],
            "lag_max_s": lags[-1],
            "stall_s": self._stall_in_interval,
            "ticks": len(lags),
        }
        if self._stall_in_interval > 0:  # from the first stall's start to the last one's end
            entry["stall_from"], entry["stall_to"] = self._stall_span
        share = host_share(self._host, host)
        if share is not None:
            entry["host_cpu"], entry["cores"] = share, self.cores
        self._host = host
        self.intervals.append(entry)
        self._unshipped.append(entry)
        if self._log:
            with open(self._log, "a", encoding="utf-8") as log:
                log.write(json.dumps(entry) + "\n")
        for listener in list(self._listeners):
            listener(entry)
        self._open_at = (now, wall, cpu)
        self._lags = []
        self._stall_in_interval = 0.0
        self._stall_span = _NO_STALL

    def cut(self) -> None:
        """Close the open interval now instead of at its second's end, so what ran before (a
        test's start: its prompts built, the loop held a few hundred ms) is an interval of its
        own that ends before the first request, not part of the first step's first second."""
        if self._timer is None:
            return
        now = time.perf_counter()
        if now >= self._due:  # the tick is due (late, if the start held the loop): taken now
            self._note(now)
            self._rearm(now)
        if self._lags:
            self._close_interval(now)

    def subscribe(self, listener: Callable[[HealthInterval], None]) -> None:
        """Call ``listener(interval)`` as each interval closes (in the hub: it must not block)."""
        self._listeners.append(listener)

    def unsubscribe(self, listener: Callable[[HealthInterval], None]) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    # -- reading -------------------------------------------------------------------
    def stall_within(self, t0: float, t1: float | None) -> float:
        """Seconds of stall (``perf_counter`` spans) that overlap ``[t0, t1]``."""
        if t1 is None or t1 <= t0:
            return 0.0
        total = 0.0
        starts, ends = self._stall_starts, self._stall_ends
        i = bisect.bisect_right(ends, t0)  # the first stall that ends after t0
        while i < len(starts) and starts[i] < t1:
            # a stall's end is when the timer ran, after the loop was free again: a request sent
            # in that same iteration overlaps it by less than a period, and was not in it
            if not (starts[i] < t0 and ends[i] - t0 < self.period):
                total += min(ends[i], t1) - max(starts[i], t0)
            i += 1
        if self._timer is not None:
            now = time.perf_counter()
            if now - self._due >= self.stall_floor and self._due < t1:  # a stall the timer has not seen yet
                total += min(now, t1) - max(self._due, t0)
        return max(total, 0.0)

    def take_intervals(self) -> list[HealthInterval]:
        """The intervals closed since the last call (a worker ships them with its records)."""
        new, self._unshipped = self._unshipped, []
        return new


_MONITOR = LoopMonitor()


def monitor() -> LoopMonitor:
    """This process's monitor, started (the first client starts it)."""
    _MONITOR.start()
    return _MONITOR


def since(intervals: Sequence[HealthInterval], start: float) -> list[HealthInterval]:
    """The intervals (in time order) that end after ``start`` (wall clock), read from the end."""
    out = []
    for interval in reversed(intervals):
        if interval["end"] <= start:
            break
        out.append(interval)
    return out[::-1]
