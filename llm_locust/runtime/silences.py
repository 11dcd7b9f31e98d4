"""A master whose workers stop answering: the test waits for them within Locust's grace, and says so.

Locust's master counts a worker *missing* when three heartbeats (one a second) do not come, and
when the last one goes it stops the test at once; it takes a missing worker back at its next
heartbeat, until it forgets it :data:`GRACE_S` seconds later (``HEARTBEAT_DEAD_INTERNAL``
heartbeat intervals). A worker's own stall (SIGSTOP, a long collector pause, a throttled pod, a
laptop lid) looks the same from the master, and the worker carries on once it runs again
(:mod:`llm_locust.runtime.master_watch`): a 6-s pause of the only worker ended an 18-s run after
6 s, with exit code 0 and nothing said but a list of missing workers in the summary's config.

On a master now:

- while a test runs and no worker answers, the test stays on
  (:func:`~llm_locust.runtime.locust_adapter.keep_test_while_workers_missing`) for up to
  :data:`GRACE_S`: a worker that answers again carries on, and the run lasts as long as asked.
  Past the grace the test stops as a signal would (the drain, the results, the summary). When a
  worker answers after none did, its users are dispatched again (Locust's own re-dispatch, at the
  heartbeat that ends the silence, runs while the worker still counts as missing: it finds none);
- each silence of a worker during a test is a line in the log when it begins and when it ends,
  an entry of the summary's ``workers_silent`` (``worker``, ``index``, ``since``: its last
  heartbeat, ``until``: the heartbeat that ended it, ``null`` if none came before the end; Unix
  times) and a line of the end-of-run text;
- a test that ends while no worker answers (the grace ran out, or the run's time) ran its last
  part without load: it is *interrupted*, "every worker stopped answering", one line saying from
  when and how much of the run had load, and exit code :data:`WORKERS_LOST_EXIT` (unless not one
  request was recorded: exit 7, whose line names the missing workers).
"""

from __future__ import annotations

import locust.runners

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

import gevent

from llm_locust.config.jsontypes import JsonObject
from llm_locust.results.ending import EndCause
from llm_locust.runtime.context import LiveState
from llm_locust.runtime.departures import LOAD_ENDED_EARLY_EXIT
from llm_locust.runtime.locust_adapter import keep_test_while_workers_missing
from llm_locust.runtime.runners import ConfiguredRun, master_runner
from llm_locust.runtime.session import TestResults
from llm_locust.runtime.stopping import interrupt_run

__all__ = ["GRACE_S", "WORKERS_LOST_EXIT", "Silence", "Silences", "install"]

log = logging.getLogger("llm_locust")
#: How long Locust's master keeps a missing worker (and takes it back at a heartbeat): 60 s.
GRACE_S = float(-locust.runners.HEARTBEAT_DEAD_INTERNAL * locust.runners.HEARTBEAT_INTERVAL)
#: The exit code of a test that ended with no worker answering (and some requests recorded).
WORKERS_LOST_EXIT = LOAD_ENDED_EARLY_EXIT
CHECK_S = 0.5
_RUNNING = (locust.runners.STATE_SPAWNING, locust.runners.STATE_RUNNING)


@dataclass
class Silence:
    """A worker that stopped answering, from its last heartbeat ``since`` to the one that ended
    the silence (``until``; ``None``: none yet)."""

    worker: str
    index: int
    since: float
    until: float | None = None

    def to_json(self) -> JsonObject:
        until = None if self.until is None else round(self.until, 3)
        return {"worker": self.worker, "index": self.index, "since": round(self.since, 3), "until": until}


class Silences:
    """The workers' silences during one test, from what the master sees (pure: states and times in)."""

    def __init__(self, grace_s: float = GRACE_S) -> None:
        self.grace_s = grace_s
        self.spells: list[Silence] = []
        self._open: dict[str, Silence] = {}
        self.lost_since: float | None = None  # since when no worker answers
        self.gave_up = False

    def observe(
        self, now: float, workers: Mapping[str, tuple[int, bool]], heard: Mapping[str, float]
    ) -> tuple[list[Silence], list[Silence]]:
        """``workers``: each worker the master knows, ``(index, missing)``; ``heard``: each one's
        last heartbeat. The silences that began and those that ended since the last call."""
        began, ended = [], []
        for worker, (index, missing) in workers.items():
            spell = self._open.get(worker)
            if missing and spell is None:
                spell = self._open[worker] = Silence(worker, index, heard.get(worker, now))
                self.spells.append(spell)
                began.append(spell)
            elif not missing and spell is not None:
                spell.until = heard.get(worker, now)
                del self._open[worker]
                ended.append(spell)
        lost = bool(self._open) and all(missing for _, missing in workers.values())
        if not lost:
            self.lost_since = None
        elif self.lost_since is None:
            self.lost_since = now
        return began, ended

    @property
    def lost(self) -> bool:
        """No worker answers (and one did)."""
        return self.lost_since is not None

    def out_of_grace(self, now: float) -> bool:
        return self.lost_since is not None and now - self.lost_since >= self.grace_s

    def last_lost(self) -> Silence | None:
        """The silence that left the test with no worker answering (the latest to begin)."""
        open_ = [s for s in self.spells if s.until is None]
        return max(open_, key=lambda s: s.since) if open_ else None

    def lost_line(self, start: float, stop: float, planned_s: float | None) -> str:
        """What ended the load, in one line: which worker went last, and from when."""
        last = self.last_lost()
        since = (last.since if last is not None else stop) - start
        total = planned_s if planned_s else stop - start
        who = f"worker {last.index} ({last.worker})" if last is not None else "the workers"
        return (
            f"every worker stopped answering (the last: {who}, silent from {since:.1f} s into the test): "
            f"the load ran {since:.1f} s of {total:.1f} s"
        )

    def to_json(self) -> list[JsonObject]:
        return [s.to_json() for s in self.spells]


class SilentRun(ConfiguredRun, Protocol):
    """What the watch needs of the master's node."""

    @property
    def tests(self) -> int: ...
    @property
    def results(self) -> TestResults | None: ...
    @property
    def live(self) -> LiveState: ...


def install(node: SilentRun, silences: Callable[[], Silences]) -> None:
    """On a master: watch its workers' heartbeats while a test runs; ``silences()``: the current
    test's (the node makes a new one at each test)."""
    environment = node.environment
    runner = master_runner(environment)
    heard: dict[str, float] = {}
    environment.events.heartbeat_sent.add_listener(
        lambda client_id, timestamp, **_: heard.__setitem__(client_id, timestamp)
    )

    def keep() -> bool:
        if runner.state not in _RUNNING or silences().gave_up:
            return False
        clients = list(runner.clients.values())
        missing = [c for c in clients if c.state == locust.runners.STATE_MISSING]
        return silences().lost or (bool(clients) and len(missing) == len(clients))

    keep_test_while_workers_missing(runner, keep)
    gevent.spawn(_watch, node, silences, heard)


def _watch(node: SilentRun, silences: Callable[[], Silences], heard: Mapping[str, float]) -> None:
    runner = master_runner(node.environment)
    while True:
        gevent.sleep(CHECK_S)
        results, spells = node.results, silences()
        if results is None or not results.running or runner.state not in _RUNNING:
            continue
        now, was_lost = time.time(), spells.lost
        workers = {
            c.id: (runner.get_worker_index(c.id), c.state == locust.runners.STATE_MISSING)
            for c in runner.clients.values()
        }
        began, ended = spells.observe(now, workers, heard)
        for s in began:
            log.warning(
                "llm-locust: worker %d (%s) stopped answering (no heartbeat for %.0f s), %.1f s into "
                "the test",
                s.index,
                s.worker,
                now - s.since,
                s.since - results.start_time,
            )
        for s in ended:
            log.warning(
                "llm-locust: worker %d (%s) answers again after %.1f s of silence: its load carries on",
                s.index,
                s.worker,
                (s.until or now) - s.since,
            )
        if was_lost and not spells.lost:  # Locust's own re-dispatch at the heartbeat found no worker
            gevent.spawn(runner.start, runner.target_user_count, runner.spawn_rate)  # (still "missing")
        if spells.lost and not was_lost:
            log.warning(
                "llm-locust: no worker answers: the test goes on and waits up to %.0f s for one to answer "
                "again (Locust's own grace), then stops",
                spells.grace_s,
            )
        if spells.out_of_grace(now) and not spells.gave_up:
            spells.gave_up = True
            planned = getattr(node.environment.parsed_options, "run_time", None)
            line = spells.lost_line(results.start_time, now, planned)
            log.error("llm-locust: %s; none came back within %.0f s: stopping the test", line, spells.grace_s)
            last = spells.last_lost()
            since = now if last is None else last.since
            interrupt_run(
                node, line, WORKERS_LOST_EXIT, EndCause.WORKERS_SILENT, node.run_config.headless, since
            )


def at_stop(node: SilentRun, spells: Silences, results: TestResults) -> None:
    """The test stopped (before its summary): with no worker answering and requests recorded, the
    run is interrupted (:data:`WORKERS_LOST_EXIT`)."""
    if not spells.lost or results.writer.count == 0:
        return
    stop = results.stop_time if results.stop_time is not None else time.time()
    planned = getattr(node.environment.parsed_options, "run_time", None)
    line = spells.lost_line(results.start_time, stop, planned)
    last = spells.last_lost()
    node.live.interrupt(
        line, WORKERS_LOST_EXIT, EndCause.WORKERS_SILENT, stop if last is None else last.since
    )
