"""One llm-locust extension per Locust environment: the run's state and its lifecycle.

Created at ``init`` (:func:`llm_locust.runtime.hooks.install`) and kept on the environment
(``environment.llm_locust``, :func:`extension_of`), so there is no module-level registry.
It holds what lasts across tests (the prepared configuration, the record bus, the outputs'
wiring, the worker/master channel) and what changes within one (:class:`LiveState`), and
makes a :class:`~llm_locust.runtime.context.RunContext` at each test's start:

- the command line parsed, then ``init``: the one typed configuration, its load plan and
  (where requests are sent) its workload, prepared by :mod:`llm_locust.runtime.prepare`;
- ``test_start``: the configuration again only if the options changed (a test started from the
  web UI's form, a worker given the master's options); resolve the model, build the workload,
  open the results (:class:`~llm_locust.runtime.session.TestResults`) and the bus;
- each finished request: :class:`~llm_locust.runtime.requests.Requests` (Locust stats, the row)
  then the bus (local runner, master) or the outbox to the master (worker);
- ``test_stop`` / ``quitting``: the summary, the end-of-run text, the exit code, then
  ``finalized(summary, directory)`` (how the load stops without losing requests in flight:
  :mod:`llm_locust.runtime.stopping`).

What spans the master and its workers (the plan's start, a rate search's steps, the records
and what they tell of every process) is the :class:`~llm_locust.runtime.fleet.Fleet`'s; the
request streams the users draw from are :class:`~llm_locust.runtime.sources.RequestSources`'.
"""

from __future__ import annotations

import locust.runners
from locust.env import Environment

import logging
import time
from dataclasses import dataclass
from typing import Any

import gevent

from llm_locust.config.build import config_from_options
from llm_locust.config.model import RunConfig
from llm_locust.config.role import Role
from llm_locust.load.plan import OPEN_LOOP_LEAD, LoadPlan
from llm_locust.load.replicas import Balancer
from llm_locust.load.stages import Stage
from llm_locust.load.stepped import SteppedRates
from llm_locust.load.traces import TraceEntry
from llm_locust.preflight import Preflight
from llm_locust.record import RequestRecord
from llm_locust.report.build import report_after_run
from llm_locust.results.finalize import exit_code
from llm_locust.results.report import LOCUST_TABLE_LABEL
from llm_locust.runtime import preflight, stopping
from llm_locust.runtime.bursts import BurstDispatcher
from llm_locust.runtime.bus import Finalized, RecordBus
from llm_locust.runtime.context import RunContext
from llm_locust.runtime.fleet import Fleet
from llm_locust.runtime.fold import IdleFolder
from llm_locust.runtime.prepare import PREPARER, Prepared, results_dir, salted, source_of, workload_info
from llm_locust.runtime.requests import Requests
from llm_locust.runtime.runners import worker_runner
from llm_locust.runtime.search import SearchDriver
from llm_locust.runtime.session import TestResults
from llm_locust.runtime.sources import RequestSources, client_config
from llm_locust.workload.base import RequestSpec
from llm_locust.workload.build import BuiltWorkload
from llm_locust.workload.tokenizer import counting_tokenizer

__all__ = ["ATTRIBUTE", "Extension", "LiveState", "extension_of", "role_of"]

log = logging.getLogger("llm_locust")
ATTRIBUTE = "llm_locust"


def extension_of(environment: Environment) -> Extension:
    """The environment's extension (made at ``init``)."""
    ext = getattr(environment, ATTRIBUTE, None)
    if ext is None:
        raise RuntimeError("llm-locust: no extension on this environment (Locust's init did not run)")
    return ext


def role_of(runner: locust.runners.Runner | None) -> Role:
    if isinstance(runner, locust.runners.MasterRunner):
        return Role.MASTER
    if isinstance(runner, locust.runners.WorkerRunner):
        return Role.WORKER
    return Role.LOCAL


@dataclass
class LiveState:
    """What changes while a test runs; changed by the runtime only."""

    stage: Stage | None = None  # the stage the shape is in (master, local)
    stopping: bool = False  # the load is stopping: send nothing new
    interrupted: str | None = None  # the signal that stopped the run
    interrupt_exit_code: int | None = None
    pending_t0: float | None = None  # the next test's plan start (the shape, or the master)
    pending_workers: int = 1


class Extension:
    """The per-environment state of llm-locust; see the module docstring."""

    def __init__(self, environment: Environment) -> None:
        self.environment = environment
        self.role = role_of(environment.runner)
        self.run_config: RunConfig = config_from_options(None)  # the defaults, until init adopts one
        self.plan: LoadPlan = LoadPlan()
        self.workload: BuiltWorkload | None = None
        self.cli_spawn_rate: float | None = None  # -r as the command line gave it (None: not given)
        self.cli_options: dict[str, Any] = {}  # llm-locust's option values as the command line gave them
        self.drain: dict[str, Any] | None = None
        self.run_id = ""
        self.live = LiveState()
        self.context: RunContext | None = None  # the current test's; None before the first start
        self.bursts: BurstDispatcher | None = None
        self.results: TestResults | None = None  # the current test's (local, master)
        self.last_summary: dict[str, Any] | None = None
        self.preflight_result: Preflight | None = None  # the last preflight check (headless or the web UI's)
        self.bus = RecordBus()
        self.finalized: Finalized = Finalized("finalized")
        self.tests = 0
        self.search: SearchDriver | None = None  # the capacity search (master, local)
        self._source: dict[str, Any] | None = None  # the option values run_config came from
        self._form_pending = False
        self._adopted = False
        self.sources = RequestSources(lambda: self.context)
        node = worker_runner(environment).client_id if self.role == Role.WORKER else "local"
        self.folder = IdleFolder()  # finished requests' rows, handed on in the loop's idle time
        self.requests = Requests(environment, self._deliver, node, later=self.folder.submit)
        self.fleet = Fleet(
            environment,
            self.role,
            self.requests,
            lambda: self.plan,
            self._plan_start,
            self.deliver,
            self._final_batch,
        )
        self.outbox, self.inbox = self.fleet.outbox, self.fleet.inbox
        if self.role != Role.WORKER:
            self.bus.subscribe(self._to_results)
            self.bus.subscribe(self._to_search)

    # -- configuration ---------------------------------------------------------------
    def adopt(self, prepared: Prepared, *, from_form: bool = False) -> None:
        """Run with a prepared (validated) configuration, its plan and its workload."""
        if not self._adopted:  # the command line's configuration
            self._adopted, self.cli_spawn_rate = True, prepared.config.load.spawn_rate
            self.cli_options = source_of(self.environment.parsed_options, ours_only=True)
        self.run_config, self.plan = prepared.config, prepared.plan
        if prepared.workload is not None:
            self.workload = prepared.workload
        self._form_pending = from_form
        self._source = None if from_form else source_of(self.environment.parsed_options, ours_only=True)

    def configure(self, config: RunConfig, *, from_form: bool = False, workload: bool = True) -> None:
        """Adopt ``config`` (the web UI's form, a master's options); raises one of ``CONFIG_ERRORS``."""
        source = source_of(self.environment.parsed_options)
        self.adopt(PREPARER.adopt(config, self.role, source, workload=workload), from_form=from_form)

    def _current_config(self) -> RunConfig:
        """The configuration for a test starting now (rebuilt only if the options changed)."""
        source = source_of(self.environment.parsed_options, ours_only=True)
        if self._form_pending:  # the form's values, already validated and adopted
            self._form_pending, self._source = False, source
        elif source != self._source:  # e.g. a worker given the master's options
            self.configure(config_from_options(self.environment.parsed_options), workload=False)
            self._source = source
        return self.run_config

    # -- lifecycle -------------------------------------------------------------------
    def on_test_start(self) -> None:
        run_config = self._current_config()
        if self.role != Role.WORKER:  # the test's prompt salt (workers take their master's), until its stop
            run_config = salted(run_config, self.environment.parsed_options)
        self.tests += 1
        self.live.stopping = False
        self.context = None  # set once the start succeeded: users of a failed start send nothing
        self.sources.reset()
        client = client_config(run_config.request, self.environment.host or run_config.host)
        server = preflight.server_info(self, client)  # never a null model
        workload = None
        if self.role != Role.MASTER:
            workload = self.workload = PREPARER.workloads.build(
                run_config.workload, workload_info(run_config, client.host, client.model, server)
            )
            client.tokenizer = counting_tokenizer(workload)  # counts when usage is absent
        runner = self.environment.runner
        self.context = RunContext(
            config=run_config,
            role=self.role,
            plan=self.plan,
            client=client,
            workload=workload,
            t0=self.live.pending_t0 if self.plan.stages is not None else None,
            workers=max(self.live.pending_workers, 1),
            slot=max(getattr(runner, "worker_index", 0), 0) % max(self.live.pending_workers, 1),
            worker_index=max(getattr(runner, "worker_index", 0), 0),
            server=server,
            test=self.tests,
            start_time=time.time(),
        )
        if self.role != Role.MASTER and self.plan.burst is not None:  # --burst: waves on top of the load
            live = self.live
            self.bursts = BurstDispatcher(self.context, self, lambda: (live.pending_t0, live.pending_workers))
        if self.role == Role.WORKER:
            assert self.outbox is not None
            self.outbox.start()
            return
        if self.inbox is not None:
            self.inbox.reset()
        self._open_results(self.context)

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
            health=self.health_intervals,
            search=self.search,
        )
        self.bus.open()
        self.fleet.record_health(self.results, context.start_time)
        gevent.spawn(self.fleet.watch_load, self.results, lambda: self.results)

    def on_test_stop(self) -> None:
        if self.role != Role.WORKER and self.environment.parsed_options is not None:  # the next draws anew
            self.environment.parsed_options.prompt_salt = self.run_config.workload.prompt_salt
        if self.bursts is not None:  # before the outbox stops: its records go to the master too
            self.bursts.finish(float(self.environment.stop_timeout or 0))
            self.bursts = None
        self.folder.drain()  # every finished request's row, before the final batch or the summary
        if self.outbox is not None:
            stopping.report_locust_stats(self.environment.runner)  # before the final batch
            self.outbox.stop()
        if self.results is not None and self.results.running:
            self.results.stopped(time.time())
            if self.role == Role.MASTER:
                stopping.collect_final_batches(self)  # bounded by the drain
            self.finalize()

    def on_quitting(self) -> None:
        self.finalize()
        if self.role != Role.WORKER:
            stopping.let_locust_write_csv(self.environment)
        options = self.environment.parsed_options
        locust_prints_table = not getattr(options, "json_file", None)  # right after this event
        if self.role != Role.WORKER and self.run_config.headless and locust_prints_table:
            logging.getLogger("locust.stats_logger").info(LOCUST_TABLE_LABEL)  # the table's stream

    def finalize(self) -> None:
        """The current test's summary, once: written, printed, the exit code, ``finalized``."""
        results = self.results
        if results is None or results.summary is not None:
            return
        self.folder.drain()
        if self.search is not None:
            self.search.finish()  # rows held for a step's decision go to the results now
        self.bus.close()
        self.fleet.stop_health()
        master = self.role == Role.MASTER
        extra = {"workers_without_final_batch": self.workers_without_final()} if master else {}
        summary = results.finish(self.live.interrupted, extra, self.fleet.summary_blocks())
        self.last_summary = summary
        code = exit_code(summary, self.live.interrupt_exit_code)
        if code is not None:
            self.environment.process_exit_code = code
        results.tell(summary, printed=self.run_config.headless)
        directory = results.writer.directory
        self.finalized.fire(summary, directory)
        if directory is not None:
            report_after_run(directory)  # report.html; a failure is one logged line

    # -- the load plan ---------------------------------------------------------------
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
        self.live.pending_t0, self.live.pending_workers = t0, self.worker_count()
        self.fleet.announce_plan_start(t0, self.live.pending_workers)
        self.search = None
        if self.plan.search is not None:  # a capacity search: its first step, and the driver
            self.plan.stages.reset()  # type: ignore[union-attr]
            if isinstance(self.plan.arrivals, SteppedRates):
                self.plan.arrivals.reset(t0)
            self.search = SearchDriver(self, self.plan.search, t0)
        return t0

    def _plan_start(self, t0: float, workers: int) -> None:
        self.live.pending_t0, self.live.pending_workers = t0, workers

    def balancer(self) -> Balancer | None:
        """This process's choice of replica among ``--endpoints`` (``None``: the one ``--host``)."""
        start = max(getattr(self.environment.runner, "worker_index", 0), 0)
        return self.sources.balancer(self.run_config.request, start)

    # -- the capacity search -----------------------------------------------------------
    @property
    def levels(self) -> Any:
        """The current test's level samples (``None`` before its results open)."""
        return None if self.results is None else self.results.levels

    def write_search(self, log: dict[str, Any]) -> None:
        """``search.json`` of the running test; the first step begins before its results open, when
        ``results`` is still none or the previous test's (finished: its summary is written)."""
        if self.results is not None and self.results.summary is None:
            self.results.writer.write_search(log)

    def announce_rate_steps(self, steps: list[Any], stopped_at: float | None) -> None:
        self.fleet.announce_rate_steps(steps, stopped_at)

    def in_flight_before(self, when: float) -> int | None:
        return self.fleet.in_flight_before(when)

    def deliver(self, row: dict[str, Any]) -> None:
        """A row for this process's results (local runner, master): a search first places it in
        its steps, or holds it until its step is judged; then the bus."""
        if self.search is not None and not self.search.place(row):
            self.search.hold(row)
            return
        self.bus.publish(row)

    def _to_search(self, row: dict[str, Any]) -> None:
        if self.search is not None:
            self.search.observe(row)

    def worker_count(self) -> int:
        return self.fleet.worker_count()

    def stage_now(self) -> Stage | None:
        """The stage running now (from the context's clock on workers, the shape's elsewhere)."""
        context = self.context
        return None if context is None else context.stage_at(time.time())[0]

    def trace_spec(self, entry: TraceEntry) -> RequestSpec:
        return self.sources.trace_spec(entry)

    def new_source(self, stage: Stage | None = None) -> Any:
        return self.sources.new_source(stage)

    # -- requests (the user and the open-loop dispatcher) ---------------------------
    @property
    def stopping(self) -> bool:
        """The load is stopping: send nothing new."""
        return self.live.stopping

    def new_record(self, spec: RequestSpec) -> RequestRecord:
        assert self.context is not None
        return self.requests.new_record(self.context, spec)

    def send(self, client: Any, body: dict[str, Any], record: RequestRecord, keep_text: bool = False) -> str:
        """Send one request of the current test (see :meth:`Requests.send`)."""
        assert self.context is not None
        return self.requests.send(self.context, client, body, record, keep_text=keep_text)

    def enter_stage(self, stage: Stage) -> bool:
        """The shape moved to ``stage``; whether it is a new one."""
        if stage is self.live.stage:
            return False
        self.live.stage = stage
        return True

    # -- rows ------------------------------------------------------------------------
    def _deliver(self, row: dict[str, Any]) -> None:
        """A finished request's row: on a worker to the outbox, else onto the bus."""
        if self.outbox is not None:
            self.outbox.add(row)
        else:
            self.deliver(row)

    def _to_results(self, row: dict[str, Any]) -> None:
        if self.results is not None:
            self.results.take(row)

    # -- distributed -----------------------------------------------------------------
    def _final_batch(self) -> None:
        """A worker's final batch arrived: the summary once the test stopped and none is missing."""
        stopped = self.results is not None and self.results.stop_time is not None
        if stopped and not self.fleet.workers_without_final():
            self.finalize()

    def workers_without_final(self) -> list[str]:
        return self.fleet.workers_without_final()

    def health_intervals(self, start: float | None = None) -> list[dict[str, Any]]:
        return self.fleet.health_intervals(start)

    def total_in_flight(self) -> int:
        return self.fleet.total_in_flight()
