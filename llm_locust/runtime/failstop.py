"""A run whose every request fails stops: one message, exit code :data:`FAILING_EXIT`.

Preflight refuses a target that cannot serve before any load; this is for one that stops
serving during the run (the server died, the key was revoked). :class:`FailureWatch` is a sink
on the record bus of the process that owns the results (the local runner, the master): when
no request has succeeded for :data:`ALL_FAILED_S` seconds while requests kept failing (the
first failure after the last success is that old, and the newest record is a failure), it
logs one line (how long, how many, the most frequent class and message) and stops the test
as a signal would: the load stops, users drain, the results and the summary are written
(``interrupted_by: "every request failed"``), and a headless run exits with
:data:`FAILING_EXIT`. From the web UI the test stops and the UI stays.

A capacity search is not stopped by it while it runs a level above every level that passed: a
step where every request failed is a failing step, judged as one, and the search goes on below
it (a single-slot server that cuts every stream at 2 concurrent has a capacity of 1). It stops
the search when the failures come at a level that passed before (the server broke) or at the
lowest level the search may try (:meth:`llm_locust.runtime.search.SearchDriver.failstop_applies`).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from typing import Protocol

from llm_locust.config.jsontypes import JsonObject
from llm_locust.record import CANCELLED, INCOMPLETE, OK
from llm_locust.results.ending import EndCause
from llm_locust.runtime.bus import RecordBus
from llm_locust.runtime.runners import ConfiguredRun
from llm_locust.runtime.stopping import Interrupt, interrupt_run

__all__ = ["ALL_FAILED_S", "FAILING_EXIT", "FAILING_REASON", "FailstopRun", "FailureWatch", "install"]

log = logging.getLogger("llm_locust")
ALL_FAILED_S = 10.0
FAILING_EXIT = 4
FAILING_REASON = "every request failed"


class FailstopRun(ConfiguredRun, Protocol):
    """What the all-failed stop needs of a node that keeps results: its rows and its test."""

    @property
    def tests(self) -> int: ...
    @property
    def bus(self) -> RecordBus: ...
    @property
    def live(self) -> Interrupt: ...


class FailureWatch:
    """Calls ``stop(line)`` once when every request has failed for ``window`` seconds."""

    def __init__(
        self,
        stop: Callable[[str], None],
        window: float = ALL_FAILED_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stop, self.window, self.clock = stop, window, clock
        self.first_failure: float | None = None
        self.failures: Counter[tuple[str, str]] = Counter()
        self.fired = False

    def reset(self) -> None:
        self.first_failure, self.fired = None, False
        self.failures.clear()

    def observe(self, row: JsonObject) -> None:
        outcome = row.get("outcome", OK)
        if outcome in (INCOMPLETE, CANCELLED):  # neither a success nor a failure of the server
            return
        if outcome == OK:
            self.first_failure = None
            self.failures.clear()
            return
        now = self.clock()
        if self.first_failure is None:
            self.first_failure = now
        self.failures[(str(outcome), str(row.get("message") or ""))] += 1
        if not self.fired and now - self.first_failure >= self.window:
            self.fired = True
            self.stop(self.describe(now))

    def describe(self, now: float) -> str:
        (outcome, message), count = self.failures.most_common(1)[0]
        total = sum(self.failures.values())
        since = now - (self.first_failure if self.first_failure is not None else now)
        return (
            f"every request has failed for {since:.0f} s ({total} requests; most often {outcome}: "
            f"{message or '(no message)'} x{count}): stopping the run (exit code {FAILING_EXIT})"
        )


def install(ext: FailstopRun) -> None:
    """On the local runner or the master: watch every row of each test."""
    watch = FailureWatch(lambda line: _stop(ext, line))
    tests = [ext.tests]

    def observe(row: JsonObject) -> None:
        if ext.tests != tests[0]:  # a new test: a new watch
            tests[0] = ext.tests
            watch.reset()
        search = getattr(ext, "search", None)
        if search is not None and not search.failstop_applies():
            watch.reset()  # a search step's failures are its verdict; the clock starts where they stop it
            return
        watch.observe(row)

    ext.bus.subscribe(observe)


def _stop(ext: FailstopRun, line: str) -> None:
    log.error("llm-locust: %s", line)
    interrupt_run(ext, FAILING_REASON, FAILING_EXIT, EndCause.EVERY_REQUEST_FAILED, ext.run_config.headless)
