"""Stopping a run without losing it: the drain, signals, and the master's workers.

**The drain.** When the load stops (the end of the plan, a step down, an interrupt), users
finish the request they are streaming for up to ``--stop-timeout`` seconds; a request still
running then is killed and recorded ``incomplete`` with the marks it has. Locust's own
default is 0 (kill at once); without the flag llm-locust drains for
``min(--request-timeout, DEFAULT_DRAIN_S)``. Locust declares ``--stop-timeout`` with the
default ``"0"``, so an explicit ``0`` looks the same: :func:`mark_default_stop_timeout`
gives the option a marked zero as its default, so ``--stop-timeout 0`` still means "at once".

**Signals.** Locust installs its SIGTERM handler only after a headless shape run returns
(in ``locust/main.py`` the shape greenlet is joined inside ``start_automatic_run()``, and
``gevent.signal_handler(SIGTERM, ...)`` comes after it), and the default locustfile always
has a shape: a SIGTERM mid-run used to end the process with no summary. A headless local or
master process gets handlers for SIGTERM and SIGINT at ``init`` that note the signal and
then do what Ctrl-C does in Locust's main: a ``KeyboardInterrupt`` in the main greenlet, so
the shape's join returns and Locust quits the runner. The load stops, users drain, the
results are written, and the exit code is 128 + the signal (130 SIGINT, 143 SIGTERM). A
second signal cuts the drain short (what is still running is recorded ``incomplete``).

**The master's workers.** A headless master quits with ``stop(send_stop_to_client=False)``:
its workers hear "quit" only after its ``test_stop``, so their last records would arrive
after the summary, or never. At its ``test_stop`` the master sends :data:`STOP_MESSAGE` to
workers still running users and waits (bounded) for every worker's final batch.

**Shutdowns by Locust's own handler** (a worker, the web UI mode): ``quitting`` stops the
load (with the drain) before anything else, so the results still see every request.
"""

from __future__ import annotations

import locust.runners
import locust.stats
from locust.env import Environment
from locust.rpc import Message

import argparse
import logging
import signal
import time
from typing import Protocol

import gevent
import gevent.hub

from llm_locust.config.jsontypes import JsonObject
from llm_locust.config.model import RunConfig
from llm_locust.config.role import Role
from llm_locust.results.ending import EndCause, WorkerQuit
from llm_locust.results.finalize import REFUSED_EXIT
from llm_locust.runtime.context import LiveState, RunContext
from llm_locust.runtime.departures import LOAD_ENDED_EARLY_EXIT, Departures, early_cause, ended_line
from llm_locust.runtime.locust_adapter import hold_starts, send_stats_now, set_option_default
from llm_locust.runtime.messages import STOP, StopUsers
from llm_locust.runtime.runners import ProcessRun, master_runner, raise_in_main, runner_of
from llm_locust.runtime.session import planned_span

__all__ = [
    "DEFAULT_DRAIN_S",
    "STOP_MESSAGE",
    "StoppingRun",
    "apply_drain",
    "collect_final_batches",
    "install_interrupt_handler",
    "install_signal_handlers",
    "interrupt_run",
    "let_locust_write_csv",
    "mark_default_stop_timeout",
    "mark_early_end",
    "on_stop_message",
    "report_locust_stats",
    "stop_before_quitting",
]

log = logging.getLogger("llm_locust")
DEFAULT_DRAIN_S = 30.0
#: The master waits this much longer than the drain for the workers' final batches.
FINAL_BATCH_MARGIN_S = 10.0
STOP_MESSAGE = STOP  # the master tells its workers to stop (:class:`~llm_locust.runtime.messages.StopUsers`)
_RUNNING = (locust.runners.STATE_SPAWNING, locust.runners.STATE_RUNNING)


class Interrupt(Protocol):
    """Whether the load is stopping; what stopped the run, with its exit code (the first stands)."""

    @property
    def stopping(self) -> bool: ...

    def interrupt(self, reason: str, exit_code: int, cause: EndCause, at: float | None = None) -> None: ...


class Finals(Protocol):
    """The workers whose final batch of records has not arrived (the master's fleet)."""

    def workers_without_final(self) -> list[str]: ...


class StoppingRun(ProcessRun, Protocol):
    """What stopping needs of a node that keeps results (the master, the local runner)."""

    @property
    def results(self) -> object | None: ...
    @property
    def live(self) -> Interrupt: ...
    @property
    def fleet(self) -> Finals: ...


class _DefaultZero(float):
    """Locust's ``--stop-timeout`` default (0 s), marked so it can be told from an explicit 0."""


def mark_default_stop_timeout(parser: argparse.ArgumentParser) -> None:
    """On Locust's parser, make ``--stop-timeout``'s default a marked zero."""
    set_option_default(parser, "--stop-timeout", _DefaultZero(0.0))


def apply_drain(environment: Environment, request_timeout: float) -> JsonObject:
    """Fix the drain at ``init``: ``--stop-timeout`` if given, else the default; returns
    ``{"seconds", "source"}`` for the summary."""
    options = environment.parsed_options
    value = getattr(options, "stop_timeout", None)
    if value is not None and not isinstance(value, _DefaultZero):
        return {"seconds": float(value), "source": "--stop-timeout"}
    seconds = min(float(request_timeout), DEFAULT_DRAIN_S)
    if options is not None:
        options.stop_timeout = seconds
    environment.stop_timeout = seconds
    return {"seconds": seconds, "source": f"default: min(--request-timeout, {DEFAULT_DRAIN_S:g} s)"}


# -- signals ---------------------------------------------------------------------------


def install_signal_handlers(run: StoppingRun) -> None:
    """SIGTERM and SIGINT on a headless local or master process (see the module docstring);
    a worker stops when its master tells it to, and SIGINT elsewhere is
    :func:`install_interrupt_handler`'s."""
    if not getattr(run.environment.parsed_options, "headless", False):
        install_interrupt_handler()
        return
    for sig in (signal.SIGTERM, signal.SIGINT):
        gevent.signal_handler(sig, _on_signal, run, sig)


def install_interrupt_handler() -> gevent.hub.signal:
    """SIGINT on a process without the headless handlers (a worker, a web UI's process): what
    Python's own handler does, a ``KeyboardInterrupt`` for Locust's main to catch, but raised in
    the main greenlet. Python's handler raises it in whichever greenlet runs when the signal
    comes: in a user taking gevent's lock (the tokenizer calibrator's) the lock stayed taken, the
    other users waited on it for the stop timeout (30 s) and a worker told to stop by Ctrl-C ran
    on (1 of 5 workers under load, 2026-12-02). The handler is returned (``cancel()``)."""
    return gevent.signal_handler(signal.SIGINT, lambda: raise_in_main(KeyboardInterrupt()))


def _on_signal(run: StoppingRun, sig: int) -> None:
    name = signal.Signals(sig).name
    runner = runner_of(run.environment)
    if run.live.stopping:  # already stopping (the plan ended, or a first signal): cut the drain short
        run.live.interrupt(name, 128 + sig, EndCause.SIGNAL)
        log.warning("llm-locust: %s while stopping: requests still in flight are recorded incomplete", name)
        skip_drain(run)
    elif runner.shape_greenlet is not None:  # the shape runs: stop it as Ctrl-C does
        run.live.interrupt(name, 128 + sig, EndCause.SIGNAL)
        log.warning(
            "llm-locust: %s: stopping the load, draining requests in flight (up to %g s), writing the "
            "results; %s again to skip the drain",
            name,
            run.environment.stop_timeout,
            name,
        )
        raise_in_main(KeyboardInterrupt())
    elif run.results is None:  # no test has started (e.g. the master waits for its workers)
        log.warning(
            "llm-locust: %s before the test started: no load sent, nothing to save; exiting (exit code %d)",
            name,
            128 + sig,
        )
        hold_starts(runner)  # workers ready from now on (Locust's main would start the test): no start
        runner.quit()  # its workers hear "quit"; it waits 0.5 s, then stops listening
        if run.role == Role.MASTER:  # those that became ready meanwhile too
            runner.send_message("quit")
        raise_in_main(SystemExit(128 + sig))
    elif sig == signal.SIGINT:  # after the test: what Python's own SIGINT handler would do
        raise_in_main(KeyboardInterrupt())


class Interruptible(ProcessRun, Protocol):
    """What :func:`interrupt_run` needs: the run's live state."""

    @property
    def live(self) -> Interrupt: ...


def interrupt_run(
    run: Interruptible, reason: str, exit_code: int, cause: EndCause, headless: bool, at: float | None = None
) -> None:
    """Stop the test as a signal would (the drain, the results, exit code ``exit_code``; ``cause``
    at ``at``, now if not given); from the web UI (not ``headless``) the test stops and the UI stays."""
    runner = runner_of(run.environment)
    if not headless:
        gevent.spawn(runner.stop)
        return
    run.live.interrupt(reason, exit_code, cause, at)
    if runner.shape_greenlet is not None:
        raise_in_main(KeyboardInterrupt())  # as Ctrl-C does: the shape's join returns, Locust quits
    else:
        gevent.spawn(runner.quit)


def skip_drain(run: StoppingRun) -> None:
    """Kill the users now; the requests they were streaming are recorded incomplete."""
    runner = runner_of(run.environment)
    if run.role == Role.MASTER:
        runner.send_message(STOP_MESSAGE, StopUsers(now=True).to_data())
    else:
        runner.user_greenlets.kill(block=False)


# -- workers ---------------------------------------------------------------------------


def on_stop_message(environment: Environment, msg: Message, **_: object) -> None:
    """Worker side of :data:`STOP_MESSAGE`: stop the users (with the drain), or now."""
    runner = runner_of(environment)
    if StopUsers.from_data(msg.data).now:
        runner.user_greenlets.kill(block=False)
    elif runner.state in _RUNNING:
        runner.stop()  # drains, then test_stop ships the final batch


def collect_final_batches(run: StoppingRun) -> None:
    """Master, at ``test_stop``: make the workers stop and wait for their last records."""
    runner = master_runner(run.environment)
    if any(c.state in _RUNNING or c.user_count > 0 for c in runner.clients.values()):
        runner.send_message(STOP_MESSAGE, StopUsers(now=False).to_data())
    deadline = time.monotonic() + run.environment.stop_timeout + FINAL_BATCH_MARGIN_S
    while run.fleet.workers_without_final() and time.monotonic() < deadline:
        gevent.sleep(0.1)
    missing = run.fleet.workers_without_final()
    if missing:
        log.warning("llm-locust: no final records from worker(s) %s after the drain", missing)


class EndingResults(Protocol):
    """The current test's results, as the early-end check reads them."""

    @property
    def running(self) -> bool: ...
    @property
    def start_time(self) -> float: ...
    @property
    def context(self) -> RunContext: ...


class Departed(Protocol):
    """The master's fleet: its workers now, and those that quit."""

    @property
    def departures(self) -> Departures: ...

    def workers(self) -> dict[str, tuple[int, bool]]: ...

    def note_departures(self, start: float) -> list[WorkerQuit]: ...


class EndingRun(ProcessRun, Protocol):
    """What :func:`mark_early_end` needs of the master's node."""

    @property
    def run_config(self) -> RunConfig: ...
    @property
    def results(self) -> EndingResults | None: ...
    @property
    def live(self) -> LiveState: ...
    @property
    def fleet(self) -> Departed: ...


def mark_early_end(run: EndingRun) -> None:
    """Master, at ``test_stopping``: a test whose load ends before its plan's end for a reason other
    than the user's own stop is interrupted (:mod:`llm_locust.runtime.departures`): one line in the
    log, the summary marked, exit code :data:`~llm_locust.runtime.departures.LOAD_ENDED_EARLY_EXIT`."""
    results, environment = run.results, run.environment
    if results is None or not results.running or run.live.stopping:
        return
    runner = master_runner(environment)
    now = time.time()
    run.fleet.note_departures(results.start_time)  # the quit that stops the test: Locust's handler, now
    workers = run.fleet.workers()
    answering = sum(1 for _, missing in workers.values() if not missing)
    shape = runner.shape_greenlet
    cause = early_cause(
        interrupted=run.live.interrupted is not None or environment.process_exit_code == REFUSED_EXIT,
        by_plan=shape is not None and shape is gevent.getcurrent(),  # the shape's own stop: its plan ended
        shape_running=shape is not None,
        headless=run.run_config.headless,
        answering=answering,
        last_quit=run.fleet.departures.last_quit,
    )
    if cause is None:
        return
    quits = run.fleet.departures.quits
    last = quits[-1] if cause is EndCause.WORKERS_QUIT and quits else None
    at = last.at if last is not None else now
    line = ended_line(cause, last, results.start_time, at, planned_span(results.context), answering)
    log.error(
        "llm-locust: the load ended early: %s; stopping the test (exit code %d)", line, LOAD_ENDED_EARLY_EXIT
    )
    run.live.interrupt(line, LOAD_ENDED_EARLY_EXIT, cause, at)


def stop_before_quitting(environment: Environment) -> None:
    """A process shut down mid-test by Locust's own handler: stop the load (drain) first."""
    runner = environment.runner
    if runner is not None and runner.state in _RUNNING:
        runner.stop()


# -- Locust's own statistics at the end ------------------------------------------------


def report_locust_stats(runner: locust.runners.Runner | None) -> None:
    """Worker, at ``test_stop`` (after the drain): send Locust's statistics to the master now.

    A worker reports every ``WORKER_REPORT_INTERVAL`` (3 s) and once more only when told to
    quit, after the master has written its CSV: the requests finished in the last seconds
    would be missing from the master's Locust statistics. Sent before the final batch of
    records, so the master has them when it ends the test.
    """
    send_stats_now(runner)  # Locust's own report (the "stats" message)


def let_locust_write_csv(environment: Environment) -> None:
    """At ``quitting``, with ``--csv``: wait for one more pass of Locust's CSV writer.

    The writer rewrites the ``_stats.csv`` files every ``CSV_STATS_INTERVAL_SEC`` (1 s) and
    only closes them at shutdown, so the requests finished in the last second (a drain ends
    just before ``quitting``) were missing from the CSV while Locust's printed table had them.
    """
    options = environment.parsed_options
    if getattr(options, "csv_prefix", None):
        gevent.sleep(locust.stats.CSV_STATS_INTERVAL_SEC + 0.2)
