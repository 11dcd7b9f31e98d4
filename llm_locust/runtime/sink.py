"""The back half of the nodes that keep results (the master, the local runner).

Rows arrive (a master's from its inbox, the local runner's from its own front half) and go
through one path: the capacity search's gate (a row is placed in its step, or held until its
step is judged: :meth:`SinkNode.deliver`) -> the record bus -> its sinks: the test's results
(``requests.jsonl``, :class:`~llm_locust.runtime.session.TestResults`), the search, the live
aggregates and the all-failed watch (subscribed at ``init``). At the test's stop: the summary,
the end-of-run text, the exit code, then ``finalized(summary, directory)`` (how the load stops
without losing requests in flight: :mod:`llm_locust.runtime.stopping`).

The load shape runs here, so the plan's start ``t0`` is fixed here (:meth:`SinkNode.start_plan`)
and announced to the workers by the fleet; and the target is checked here before any load
(:mod:`llm_locust.client.preflight`: at ``init`` headless, :meth:`SinkNode.check_target`; at each start
from the web UI's form, :meth:`SinkNode.check_start`).
"""

from __future__ import annotations

from locust.env import Environment

import logging
import sys
import time

import gevent

from llm_locust.client import preflight
from llm_locust.config.build import ConfigError
from llm_locust.config.jsontypes import JsonObject
from llm_locust.config.model import RunConfig
from llm_locust.live.exporter import new_run_id
from llm_locust.load.levels import LevelTracker
from llm_locust.load.plan import OPEN_LOOP_LEAD
from llm_locust.load.search import SearchStages
from llm_locust.load.stages import Stage
from llm_locust.load.stepped import SteppedRates
from llm_locust.report.build import report_after_run
from llm_locust.results.finalize import REFUSED_EXIT, exit_code
from llm_locust.results.report import LOCUST_TABLE_LABEL
from llm_locust.results.search_model import SearchLog
from llm_locust.runtime import stopping
from llm_locust.runtime.bus import Finalized, RecordBus
from llm_locust.runtime.context import RunContext
from llm_locust.runtime.front import Row
from llm_locust.runtime.node import Node, node_of
from llm_locust.runtime.prepare import results_dir, salted
from llm_locust.runtime.request_sources import client_config
from llm_locust.runtime.search import SearchDriver
from llm_locust.runtime.session import TestResults

__all__ = ["SinkNode", "sink_of"]

log = logging.getLogger("llm_locust")


def sink_of(environment: Environment) -> SinkNode:
    """The environment's node where the shape runs (the master, the local runner)."""
    node = node_of(environment)
    if not isinstance(node, SinkNode):
        raise RuntimeError(f"llm-locust: a {node.role.value} keeps no results")
    return node


class SinkNode(Node):
    """Rows into this process's results; see the module docstring."""

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        self.run_id = new_run_id()  # the live outputs' run label
        self.bus = RecordBus()
        self.finalized: Finalized = Finalized("finalized")
        self.results: TestResults | None = None  # the current test's
        self.search: SearchDriver | None = None  # the capacity search of the current test
        self.bus.subscribe(self._to_results)
        self.bus.subscribe(self._to_search)

    # -- rows ------------------------------------------------------------------------
    def deliver(self, row: Row) -> None:
        """A row for this process's results: a search first places it in its steps, or holds it
        until its step is judged; then the bus."""
        if self.search is not None and not self.search.place(row):
            self.search.hold(row)
            return
        self.bus.publish(row)

    def _to_results(self, row: Row) -> None:
        if self.results is not None:
            self.results.take(row)

    def _to_search(self, row: Row) -> None:
        if self.search is not None:
            self.search.observe(row)

    def _drain_rows(self) -> None:
        """Every finished request's row of this process onto the bus now (the local runner's)."""

    # -- the target, before any load ----------------------------------------------------
    def check_target(self) -> None:
        """At ``init``, headless (or ``--autostart``): check the target now; a refusal is one line
        on stderr and exit code 2."""
        options, request = self.environment.parsed_options, self.run_config.request
        if options is None or not (options.headless or getattr(options, "autostart", False)):
            return
        if request.skip_preflight:
            return
        try:
            config = client_config(request, self.environment.host or self.run_config.host)
        except ConfigError:
            return  # reported by the run's own option checks
        result = self.preflight_result = preflight.run_preflight(config, request.endpoints)
        if not result.ok:
            sys.stderr.write(f"llm-locust: error: {result.cause}\n")
            sys.stderr.flush()
            raise SystemExit(2)

    def check_start(self, host: str) -> str | None:
        """A start from the web UI's form (its values adopted): the target it names, checked; the
        one-line refusal, or ``None``."""
        request = self.run_config.request
        if request.skip_preflight:
            return None
        try:
            config = client_config(request, host)
        except ConfigError as exc:
            return str(exc)
        result = self.preflight_result = preflight.run_preflight(config, request.endpoints)
        if result.ok:
            return None
        log.error("llm-locust: preflight: %s", result.cause)
        return f"preflight: {result.cause}"

    # -- a test ----------------------------------------------------------------------
    def _test_config(self, config: RunConfig) -> RunConfig:
        """The test's prompt salt (workers take their master's), until its stop."""
        return salted(config, self.environment.parsed_options)

    def _open_results(self, context: RunContext) -> None:
        options = self.environment.parsed_options
        guard = getattr(self.workload, "guard", None)
        self.results = TestResults(
            context,
            results_dir(context.config, context.test),
            host=self.environment.host,
            options=vars(options) if options is not None else {},
            drain=self.drain,
            length_policy=lambda: guard.message() if guard is not None else None,
            health=self.fleet.health_intervals,
            search=self.search,
        )
        self.bus.open()
        self.fleet.record_health(self.results, context.start_time)
        gevent.spawn(self.fleet.watch_load, self.results, lambda: self.results)

    def _start_cut_short(self, context: RunContext, seconds: float) -> None:
        log.warning(
            "llm-locust: the test stopped %.1f s into its start, while its workload was being built "
            "(--tokenizer server asks the server to count each prompt): no user was started; give "
            "the test more time (-t)",
            seconds,
        )
        self._open_results(context)

    def on_test_stop(self) -> None:
        if self.environment.parsed_options is not None:  # the next test draws anew
            self.environment.parsed_options.prompt_salt = self.run_config.workload.prompt_salt
        self._drain_rows()
        if self.results is not None and self.results.running:
            self.results.stopped(time.time())
            self._await_workers()
            self.finalize()

    def _await_workers(self) -> None:
        """At the stop, before the summary: the workers' last records (the master's)."""

    def _summary_extra(self) -> JsonObject:
        return {}

    def on_quitting(self) -> None:
        self.finalize()
        stopping.let_locust_write_csv(self.environment)
        options = self.environment.parsed_options
        locust_prints_table = not getattr(options, "json_file", None)  # right after this event
        if self.run_config.headless and locust_prints_table:
            logging.getLogger("locust.stats_logger").info(LOCUST_TABLE_LABEL)  # the table's stream

    def finalize(self) -> None:
        """The current test's summary, once: written, printed, the exit code, ``finalized``."""
        results = self.results
        if results is None or results.summary is not None:
            return
        self._drain_rows()
        if self.search is not None:
            self.search.finish()  # rows held for a step's decision go to the results now
        self.bus.close()
        self.fleet.stop_health()
        summary = results.finish(self.live, self._summary_extra(), self.fleet.summary_blocks())
        code = exit_code(summary, self.live.interrupt_exit_code)
        self.live.clear_interrupt()  # the next test (the web UI's) starts uninterrupted
        if code is not None and self.environment.process_exit_code != REFUSED_EXIT:  # a refusal stands
            self.environment.process_exit_code = code
        results.tell(summary, printed=self.run_config.headless)
        directory = results.writer.directory
        self.finalized.fire(summary, directory)
        if directory is not None:
            report_after_run(directory)  # report.html; a failure is one logged line

    # -- the load plan (the shape runs here) -------------------------------------------
    def start_plan(self, lead_in: float) -> float:
        """A new shape test: fix the plan's start ``t0`` (returned), tell the workers.

        Called at the shape's first tick, which comes before ``test_start``; the plan is the
        configuration's (built once when it was adopted, with the spawn rate the user gave:
        ``None`` when Locust's default stands in, so each stage reaches its level in about a
        second). Open-loop plans start ``OPEN_LOOP_LEAD`` later, once every dispatcher has
        been spawned.
        """
        search, context, results = self.search, self.context, self.results
        running = results is not None and results.running
        if search is not None and running and context is not None and context.t0 == search.t0:
            # Locust restarted the shape's clock inside the test that has begun (a master does,
            # after its first tick): the search, its steps and its t0 go on
            return search.t0
        lead = OPEN_LOOP_LEAD if self.plan.open_loop else 0.0
        t0 = time.time() - lead_in + lead
        self.live.stage = None
        self.live.pending_t0, self.live.pending_workers = t0, self.fleet.worker_count()
        self.live.pending_end = self.plan.schedule_end
        self.fleet.announce_plan_start(t0, self.live.pending_workers, self.live.pending_end)
        self.search = None
        if self.plan.search is not None:  # a capacity search: its first step, and the driver
            assert isinstance(self.plan.stages, SearchStages)
            self.plan.stages.reset()
            if isinstance(self.plan.arrivals, SteppedRates):
                self.plan.arrivals.reset(t0)
            self.search = SearchDriver(self, self.plan.search, t0)
        return t0

    def enter_stage(self, stage: Stage) -> bool:
        """The shape moved to ``stage``; whether it is a new one."""
        if stage is self.live.stage:
            return False
        self.live.stage = stage
        return True

    # -- the capacity search's view of the test ----------------------------------------
    @property
    def levels(self) -> LevelTracker | None:
        """The current test's level samples (``None`` before its results open)."""
        return None if self.results is None else self.results.levels

    def write_search(self, log: SearchLog) -> None:
        """``search.json`` of the running test; the first step begins before its results open, when
        ``results`` is still none or the previous test's (finished: its summary is written)."""
        if self.results is not None and self.results.summary is None:
            self.results.writer.write_search(log)
