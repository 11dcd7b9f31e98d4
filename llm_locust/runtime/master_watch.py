"""A worker that loses its master stops its load within :data:`MASTER_SILENCE_S` seconds, then exits.

Locust's worker quits only after 60 s without a heartbeat from its master
(``MASTER_HEARTBEAT_TIMEOUT``); until then a worker whose master was killed (SIGKILL, the OOM
killer, a node lost) keeps loading the server, and nobody records what it sends. The master
answers every worker heartbeat (one a second), so a silence of :data:`MASTER_SILENCE_S`
seconds while users run means the master is gone: the worker says so in its log and stops its
users at once, the requests in flight included (there is no one left to record them: no
drain), and tells the master (should it be there after all, its summary lists the worker:
``workers_stopped_early``). If the master stays silent :data:`EXIT_AFTER_S` seconds more, the
worker says so in one line and exits with :data:`ORPHANED_EXIT`.

The silence is counted on the watch's own clock (:class:`MasterWatch`): a worker that was itself
stalled (SIGSTOP, a long collector pause, a throttled pod) heard nothing because it was not
listening, which says nothing of the master. After such a stall the worker checks the master
again: the silence restarts at the resume, so the master has :data:`MASTER_SILENCE_S` seconds
to answer before the worker concludes (once per silence: a loop that is late at every check
still concludes, counting at most :data:`COUNT_CAP_S` per check).

Between tests (no users running) a master may be busy writing a large summary: the worker
waits :data:`IDLE_EXIT_S` seconds of silence (Locust's own ``MASTER_HEARTBEAT_TIMEOUT``) before it
exits, counted from the watch's start when no heartbeat ever came (Locust's own timeout counts
only from a heartbeat: a worker whose master died before its first one waited forever).

A worker forked by its master (``--processes``) knows its master's process: when the process
that forked it is gone (its parent process changed), the worker stops its load and exits at once.
Locust 2.47 never signals its forked workers when the master exits (see
:func:`llm_locust.runtime.locust_adapter.signal_forked_workers_at_exit`), and a master killed
with SIGKILL cannot.

Once the worker decides to exit, its shutdown gets :data:`EXIT_GRACE_S` seconds; a process still
there then (its shutdown waits on something that will not come) says so and exits at once, with
the same code.
"""

from __future__ import annotations

import enum
import logging
import os
import time
from typing import Protocol

import gevent
import gevent.monkey

from llm_locust.runtime.context import LiveState
from llm_locust.runtime.runners import ProcessRun, runner_of

__all__ = [
    "CHECK_S",
    "EXIT_AFTER_S",
    "EXIT_GRACE_S",
    "IDLE_EXIT_S",
    "MASTER_SILENCE_S",
    "ORPHANED_EXIT",
    "MasterWatch",
    "Verdict",
    "WatchedRun",
    "install",
    "stop_now",
]

log = logging.getLogger("llm_locust")
#: Seconds without a heartbeat from the master after which a running worker stops its load.
MASTER_SILENCE_S = 5.0
#: Seconds of further silence after which a worker that stopped its load exits.
EXIT_AFTER_S = 10.0
#: Seconds of silence after which a worker with no users running exits.
IDLE_EXIT_S = 60.0
#: Seconds a worker that decided to exit gets for its shutdown before it exits at once.
EXIT_GRACE_S = 10.0
#: The exit code of a worker whose master is gone.
ORPHANED_EXIT = 5
CHECK_S = 0.5
#: The most one check counts as silence: a longer gap is this worker's own stall.
COUNT_CAP_S = CHECK_S + 1.0
_RUNNING = ("spawning", "running")  # locust.runners.STATE_SPAWNING, STATE_RUNNING (not imported: a
# test of this module must not gevent-patch its process)


class Verdict(enum.Enum):
    ALIVE = "alive"  # the master answers (or nothing to decide)
    STALLED = "stalled"  # this worker was stalled: the master is checked again
    ANSWERED = "answered"  # the master answered after this worker's stall
    BACK = "back"  # the master answered after this worker stopped its load
    LOST = "lost"  # stop the load now
    GONE = "gone"  # exit the process now


class MasterWatch:
    """Whether the master is there, from its heartbeats, on the watch's own clock (pure)."""

    def __init__(
        self,
        silence_s: float = MASTER_SILENCE_S,
        exit_after_s: float = EXIT_AFTER_S,
        idle_s: float = IDLE_EXIT_S,
    ) -> None:
        self.silence_s, self.exit_after_s, self.idle_s = silence_s, exit_after_s, idle_s
        self.silent_s = 0.0  # silence counted since the last heartbeat (or the resume)
        self.stall_s = 0.0  # the last stall of this worker's own, while it is being checked
        self.rechecked = False  # this silence already restarted once after a stall
        self.stopped = False  # the load was stopped for a lost master
        self._last_check: float | None = None
        self._heartbeat: float | None = None

    def check(self, now: float, heartbeat: float | None, running: bool) -> Verdict:
        """One check at ``now`` (seconds, any clock); ``heartbeat``: the last one's time (the
        same clock) or ``None``; ``running``: users run on this worker."""
        gap = 0.0 if self._last_check is None else now - self._last_check
        self._last_check = now
        if heartbeat is None:  # none yet: the silence counts from the watch's start
            heartbeat = self._heartbeat if self._heartbeat is not None else now
        if heartbeat != self._heartbeat:
            fresh = self._heartbeat is not None
            self._heartbeat, self.silent_s, self.rechecked = heartbeat, 0.0, False
            verdict = (
                Verdict.BACK if self.stopped else Verdict.ANSWERED if self.stall_s > 0 else Verdict.ALIVE
            )
            self.stall_s, self.stopped = 0.0, False
            return verdict if fresh else Verdict.ALIVE
        if gap > COUNT_CAP_S and not self.rechecked and not self.stopped:
            self.silent_s, self.rechecked, self.stall_s = 0.0, True, gap
            return Verdict.STALLED
        self.silent_s += min(gap, COUNT_CAP_S)
        if self.stopped:
            return Verdict.GONE if self.silent_s > self.silence_s + self.exit_after_s else Verdict.ALIVE
        if running and self.silent_s > self.silence_s:
            self.stopped = True
            return Verdict.LOST
        if not running and self.silent_s > self.idle_s:
            return Verdict.GONE
        return Verdict.ALIVE


class StoppedEarly(Protocol):
    """How a worker tells its master it stopped its load on its own (the node's fleet)."""

    def tell_stopped_early(self, at: float, why: str) -> None: ...


class WatchedRun(ProcessRun, Protocol):
    """What the watch needs of a worker's node."""

    @property
    def live(self) -> LiveState: ...
    @property
    def fleet(self) -> StoppedEarly: ...


def install(ext: WatchedRun) -> None:
    """On a worker, watch the master's heartbeats for as long as the process runs (a shutdown that
    hangs ends in ``os._exit`` in a worker process started from a command line, not in a test's
    environment without options)."""
    gevent.spawn(_watch, ext, ext.environment.parsed_options is not None)


def _watch(ext: WatchedRun, hard_exit: bool) -> None:
    runner, watch = runner_of(ext.environment), MasterWatch()
    parent = os.getppid() if getattr(ext.environment.parsed_options, "processes", None) else None
    while True:
        gevent.sleep(CHECK_S)
        if parent is not None and os.getppid() != parent:
            log.error(
                "llm-locust: the master process that forked this worker (pid %d) is gone; this worker "
                "stops its load and exits (exit code %d)",
                parent,
                ORPHANED_EXIT,
            )
            if runner.state in _RUNNING:
                stop_now(ext)
            exit_now(ext, hard_exit)
            return
        last = getattr(runner, "last_heartbeat_timestamp", None)
        now = time.time()
        verdict = watch.check(now, last, runner.state in _RUNNING)
        if verdict is Verdict.STALLED:
            log.warning(
                "llm-locust: this worker was itself stalled for %.1f s (its event loop did not run): "
                "checking the master again before concluding anything (up to %.0f s)",
                watch.stall_s,
                MASTER_SILENCE_S,
            )
        elif verdict is Verdict.ANSWERED:
            log.warning("llm-locust: the master answered after this worker's stall: it carries on")
        elif verdict is Verdict.BACK:
            log.warning(
                "llm-locust: the master answered again after this worker stopped its load: the worker "
                "stays stopped until the master starts a test (the summary lists it)"
            )
        elif verdict is Verdict.LOST:
            why = f"no heartbeat from the master for {now - last:.1f} s" if last is not None else ""
            log.error(
                "llm-locust: %s: the master is gone; stopping this worker's load now (requests in flight "
                "are dropped: nothing can record them)",
                why,
            )
            stop_now(ext)
            ext.fleet.tell_stopped_early(now, why)
        elif verdict is Verdict.GONE:
            log.error(
                "llm-locust: no heartbeat from the master for %.0f s: the master is gone; this worker "
                "exits (exit code %d)",
                watch.silent_s if last is None else now - last,
                ORPHANED_EXIT,
            )
            exit_now(ext, hard_exit)
            return


def exit_now(ext: WatchedRun, hard_exit: bool) -> None:
    """Shut the worker down (Locust's own shutdown, exit code :data:`ORPHANED_EXIT`); with
    ``hard_exit``, a process still there :data:`EXIT_GRACE_S` seconds later exits at once."""
    ext.environment.process_exit_code = ORPHANED_EXIT
    if hard_exit:  # an OS thread: it runs whatever the event loop waits on
        gevent.monkey.get_original("_thread", "start_new_thread")(_exit_later, (EXIT_GRACE_S,))
    gevent.spawn(runner_of(ext.environment).quit)


def _exit_later(grace_s: float) -> None:
    gevent.monkey.get_original("time", "sleep")(grace_s)
    line = (
        f"llm-locust: this worker's shutdown did not finish within {grace_s:g} s: it exits now "
        f"(exit code {ORPHANED_EXIT})\n"
    )
    os.write(2, line.encode())
    os._exit(ORPHANED_EXIT)


def stop_now(ext: WatchedRun) -> None:
    """Stop the users at once (no drain) and the test."""
    runner = runner_of(ext.environment)
    ext.live.stop()
    runner.user_greenlets.kill(block=False)
    runner.stop()
