"""One test run in one Locust process: options in, records out.

This is the thin layer between Locust's lifecycle events and the rest of the package:

- the command line parsed, then ``init``: the one typed
  :class:`~llm_locust.config.model.RunConfig`, its load plan and (where requests are sent)
  its workload, prepared by :mod:`llm_locust.runtime.prepare` (one line and exit 2 on bad
  input); the :class:`LLMRun` of the process adopts them and wires worker -> master shipping.
- ``test_start``: the configuration again only if the options changed (a test started from
  the web UI's form, checked by :mod:`llm_locust.runtime.form`; a worker takes the master's
  options); resolve the model, build the workload, open the results folder.
- each finished request (:meth:`LLMRun.complete`): Locust stats, then the results sink
  (local runner, master) or the outbox to the master (worker).
- ``test_stop`` / ``quitting``: write ``summary.json`` and print the table (how the load
  stops without losing requests in flight, on a signal too: :mod:`llm_locust.runtime.stopping`).

Which process does what: the local runner and workers send requests; the local runner
and the master own the results. Locust's request statistics get one entry per request
(``LLM E2E``, so the "Aggregated" row and the charts mean requests and their latency),
and two derived rows, ``LLM TTFT`` and ``LLM TPOT``, logged into their own entries
without touching the aggregate (they appear in the table, CSV and HTML report).
"""

from __future__ import annotations

import locust.runners
from locust.env import Environment

import itertools
import logging
import time
from typing import Any

import gevent

from llm_locust.client import ClientConfig
from llm_locust.config.build import ConfigError, config_from_options
from llm_locust.config.model import RequestConfig, RunConfig
from llm_locust.load.levels import LevelTracker
from llm_locust.load.plan import OPEN_LOOP_LEAD, LoadPlan, stage_of
from llm_locust.record import INCOMPLETE, RequestRecord
from llm_locust.report.build import report_after_run
from llm_locust.results.finalize import Finalizer
from llm_locust.results.report import LOCUST_TABLE_LABEL
from llm_locust.results.writer import ResultsWriter
from llm_locust.runtime import distributed, preflight, stopping
from llm_locust.runtime.prepare import PREPARER, Prepared, results_dir, source_of, workload_info
from llm_locust.workload.base import RequestSpec
from llm_locust.workload.tokenizer import counting_tokenizer

__all__ = ["LLMRun", "client_config", "role_of", "run_for"]

log = logging.getLogger("llm_locust")
REQUEST_TYPE = "LLM"
PLAN_MESSAGE = "llm_locust_plan"
#: How often the runner's user count is sampled for the stages' levels (seconds).
LEVEL_SAMPLE_S = 0.1

_RUNS: dict[int, LLMRun] = {}


class LLMRequestError(Exception):
    """The exception Locust sees for a failed request: ``<class>: <message>``."""


def run_for(environment: Environment) -> LLMRun:
    run = _RUNS.get(id(environment))
    if run is None:
        run = _RUNS[id(environment)] = LLMRun(environment)
    return run


def role_of(runner: Any) -> str:
    if isinstance(runner, locust.runners.MasterRunner):
        return "master"
    if isinstance(runner, locust.runners.WorkerRunner):
        return "worker"
    return "local"


class LLMRun:
    """The per-process state of a run; see the module docstring for the flow."""

    def __init__(self, environment: Environment) -> None:
        self.environment = environment
        self.role = role_of(environment.runner)
        self.in_flight = 0
        self.run_config: RunConfig = config_from_options(None)  # the defaults, until init adopts one
        self.cli_spawn_rate: float | None = None  # -r as the command line gave it (None: not given)
        self._source: dict[str, Any] | None = None  # the option values run_config came from
        self._form_pending = False
        self._adopted = False
        self.config: ClientConfig | None = None
        self.workload: Any = None
        self.server_info: dict[str, Any] = {}
        self.writer: ResultsWriter | None = None
        self.finalizer: Finalizer | None = None
        self.consumers: list[Any] = []  # live aggregates (exporter, web UI) get every row
        self.current_stage: Any = None  # the load model's Stage, when one runs
        self.target_rate: float | None = None  # open-loop target req/s (whole run)
        self.run_id = ""
        self.plan: LoadPlan | None = None
        self.plan_t0: float | None = None  # wall-clock start of the load plan
        self.plan_workers = 1
        self.slo: Any = None
        self.levels: LevelTracker | None = None  # per-stage user levels (master, local)
        self.drain: dict[str, Any] | None = None  # how long users finish their request at a stop
        self.stopping = False  # the load is stopping: send nothing new
        self.interrupted: str | None = None  # the signal that stopped the run
        self.interrupt_exit_code: int | None = None
        self.last_summary: dict[str, Any] | None = None
        self._stage_workloads: dict[int, Any] = {}
        self.outbox: distributed.Outbox | None = None
        self.inbox: distributed.Inbox | None = None
        self._streams = itertools.count()
        self._request_ids = itertools.count()
        self._trace_counter = itertools.count()
        self._late = 0  # records that arrived after the results were closed
        self._tests = 0
        runner = environment.runner
        if self.role == "worker":
            self.outbox = distributed.Outbox(runner.send_message, in_flight=lambda: self.in_flight)
            runner.register_message(PLAN_MESSAGE, self._on_plan_message)
            runner.register_message(stopping.STOP_MESSAGE, stopping.on_stop_message, concurrent=True)
        elif self.role == "master":
            self.inbox = distributed.Inbox(self._deliver)
            runner.register_message(distributed.MESSAGE_TYPE, self._on_worker_message)

    # -- configuration ---------------------------------------------------------------
    def adopt(self, prepared: Prepared, *, from_form: bool = False) -> None:
        """Run with a prepared (validated) configuration, its plan and its workload."""
        if not self._adopted:  # the command line's configuration
            self._adopted, self.cli_spawn_rate = True, prepared.config.load.spawn_rate
        self.run_config, self.plan, self.slo = prepared.config, prepared.plan, prepared.config.slo
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

    def _workload_info(self, client: ClientConfig) -> dict[str, Any]:
        return workload_info(self.run_config, client.host, client.model, self.server_info)

    # -- lifecycle -------------------------------------------------------------------
    def on_test_start(self) -> None:
        run_config = self._current_config()
        self._tests += 1
        self.stopping = False
        self.config = None  # set once the start succeeded: users of a failed start send nothing
        config = client_config(run_config.request, self.environment.host or run_config.host)
        self._stage_workloads.clear()
        self.server_info = preflight.server_info(self, config)  # never a null model
        if self.role != "master":
            self.workload = PREPARER.workloads.build(run_config.workload, self._workload_info(config))
            config.tokenizer = counting_tokenizer(self.workload)  # counts when usage is absent
        self.config = config
        if self.role == "worker":
            assert self.outbox is not None
            self.outbox.start()
            return
        if self.inbox is not None:
            self.inbox.reset()
        self.writer = ResultsWriter(self._results_dir(self._tests))
        self.finalizer = Finalizer(self, time.time())
        staged = self.plan is not None and self.plan.stages is not None and self.plan_t0 is not None
        self.levels = LevelTracker(self.plan.stages, self.plan_t0) if staged else None  # type: ignore[union-attr,arg-type]
        gevent.spawn(self._watch_load, self.finalizer)

    def _watch_load(self, finalizer: Finalizer) -> None:
        """Sample users (for the stages' levels and the config block) and client CPU."""
        runner = self.environment.runner
        levels = self.levels
        while self.finalizer is finalizer and finalizer.stop_time is None:
            if self.role == "master":
                cpu = max((c.cpu_usage for c in runner.clients.values()), default=0.0)
            else:
                cpu = runner.current_cpu_usage
            users = runner.user_count
            finalizer.observe_load(users, cpu)
            if levels is not None:
                levels.observe(time.time(), users)
            finalizer.cpu_warning = (
                finalizer.cpu_warning
                or runner.cpu_warning_emitted
                or (self.role == "master" and runner.worker_cpu_warning_emitted)
            )
            gevent.sleep(LEVEL_SAMPLE_S)

    def on_test_stop(self) -> None:
        if self.outbox is not None:
            self.outbox.stop()
        if self.finalizer is not None:
            self.finalizer.stopped(time.time())
            if self.role == "master":
                stopping.collect_final_batches(self)  # bounded by the drain
            self.finalize()

    def on_quitting(self) -> None:
        self.finalize()
        options = self.environment.parsed_options
        locust_prints_table = not getattr(options, "json_file", None)  # right after this event
        if self.role != "worker" and self.run_config.headless and locust_prints_table:
            logging.getLogger("locust.stats_logger").info(LOCUST_TABLE_LABEL)  # the table's stream

    def finalize(self) -> None:
        if self.finalizer is not None and self.writer is not None:
            self.last_summary = self.finalizer.finish(self.writer)
            self.writer.close()
            self.finalizer = None
            if self.writer.directory is not None:
                report_after_run(self.writer.directory)

    def _results_dir(self, test: int) -> Any:
        return results_dir(self.run_config, test)

    # -- the load plan -------------------------------------------------------------
    def start_plan(self, lead_in: float) -> None:
        """A new shape test: fix the plan's start, tell the workers.

        Called at the shape's first tick, which comes before ``test_start``; the plan is the
        configuration's (built once when it was adopted, with the spawn rate the user gave:
        ``None`` when Locust's default stands in, so each stage reaches its level in about a
        second). Open-loop plans start ``OPEN_LOOP_LEAD`` later, once every dispatcher has
        been spawned.
        """
        assert self.plan is not None
        lead = OPEN_LOOP_LEAD if self.plan.open_loop else 0.0
        t0 = time.time() - lead_in + lead
        self.current_stage = None
        self.plan_t0 = t0
        self.plan_workers = self.worker_count()
        if self.plan is not None and self.plan.arrival is not None:
            self.target_rate = self.plan.stages[0].target if self.plan.stages else None
        if self.role == "master":
            data = {"t0": t0, "workers": self.plan_workers}
            self.environment.runner.send_message(PLAN_MESSAGE, data)

    def _on_plan_message(self, environment: Environment, msg: Any, **_: Any) -> None:
        self.plan_t0 = msg.data["t0"]
        self.plan_workers = int(msg.data["workers"])

    def worker_count(self) -> int:
        runner = self.environment.runner
        return max(int(getattr(runner, "worker_count", 1)), 1) if self.role == "master" else 1

    def worker_slot(self) -> int:
        """This process's index among the workers that share the open-loop schedule."""
        return max(getattr(self.environment.runner, "worker_index", 0), 0) % max(self.plan_workers, 1)

    def stage_now(self) -> Any:
        if self.plan is None or self.plan_t0 is None:
            return None
        return stage_of(self.plan, self.plan_t0, time.time())[0]

    def workload_for(self, stage: Any) -> Any:
        """The workload of a stage: the run's, or a matrix cell's own."""
        if stage is None or not stage.overrides():
            return self.workload
        if stage.index not in self._stage_workloads:
            cell = self.run_config.workload.with_cell(stage.overrides())
            assert self.config is not None  # set at the test's start
            self._stage_workloads[stage.index] = PREPARER.workloads.build(
                cell, self._workload_info(self.config)
            )
        return self._stage_workloads[stage.index]

    def trace_spec(self, entry: Any) -> RequestSpec:
        """A request with a trace row's input and output lengths."""
        return self.workload.spec_for_lengths(
            int(entry.input_tokens), int(entry.output_tokens), self.worker_slot(), next(self._trace_counter)
        )

    # -- requests --------------------------------------------------------------------
    def new_source(self, stage: Any = None) -> Any:
        """A request stream for a new user; its index keeps the stream reproducible."""
        worker_index = max(getattr(self.environment.runner, "worker_index", 0), 0)
        return self.workload_for(stage).source(worker_index * 1_000_000 + next(self._streams))

    def new_record(self, spec: RequestSpec) -> RequestRecord:
        assert self.config is not None
        return RequestRecord(
            request_id=f"{self.environment.runner.client_id if self.role == 'worker' else 'local'}"
            f"-{next(self._request_ids)}",
            wall_start=0.0,
            t_sent=0.0,
            endpoint=self.config.endpoint,
            target_input_tokens=spec.target_input_tokens,
            target_output_tokens=spec.target_output_tokens,
            session_id=spec.session_id,
            turn=spec.turn,
            extra=dict(spec.info) if spec.info else {},
        )

    def send(self, client: Any, body: dict[str, Any], record: RequestRecord, keep_text: bool = False) -> str:
        """Send one request and hand its record on, also when the user is killed mid-request
        (the client marks it ``incomplete``; the kill then goes on unwinding the user)."""
        self.in_flight += 1
        try:
            text = client.send(body, record, keep_text=keep_text)
        except BaseException:
            if record.outcome == INCOMPLETE:
                self.complete(record)
            raise
        finally:
            self.in_flight -= 1
        self.complete(record)
        return text

    def complete(self, record: RequestRecord) -> None:
        """A request finished: Locust stats first (not for an incomplete one, which is neither a
        success nor a failure), then on to the results."""
        if record.outcome != INCOMPLETE:
            self._log_stats(record)
        if self.plan is not None and self.plan.stages is not None and self.plan_t0 is not None:
            stage, record.warmup = stage_of(self.plan, self.plan_t0, record.wall_start)
            record.stage = None if stage is None else stage.index
        row = record.to_json()
        if self.outbox is not None:
            self.outbox.add(row)
        else:
            self._deliver(row)

    def _deliver(self, row: dict[str, Any]) -> None:
        """Mark ramp-up, write the record, then feed the live aggregates the very same rows."""
        if self.writer is None or self.writer.closed:
            self._late += 1
            if self._late == 1:
                log.warning("llm-locust: a record arrived after the results were closed; dropped (counted)")
            return
        if self.levels is not None and row.get("stage") is not None:
            row["rampup"] = self.levels.ramp_up(row["stage"], row["start_time"])
        self.writer.write(row)
        for consumer in self.consumers:
            consumer(row)

    def _log_stats(self, record: RequestRecord) -> None:
        stats = self.environment.stats
        e2e_ms = (record.e2e or 0.0) * 1000.0
        if not record.ok:
            self.environment.events.request.fire(
                request_type=REQUEST_TYPE,
                name="E2E",
                response_time=e2e_ms,
                response_length=0,
                exception=LLMRequestError(f"{record.outcome}: {record.message}"),
                context={},
            )
            return
        self.environment.events.request.fire(
            request_type=REQUEST_TYPE,
            name="E2E",
            response_time=e2e_ms,
            response_length=record.completion_tokens or 0,
            exception=None,
            context={},
        )
        stats.get("TTFT", REQUEST_TYPE).log(record.ttft * 1000.0, 0)  # type: ignore[operator]
        if record.tpot is not None:
            stats.get("TPOT", REQUEST_TYPE).log(record.tpot * 1000.0, 0)

    # -- distributed -----------------------------------------------------------------
    def _on_worker_message(self, environment: Environment, msg: Any, **_: Any) -> None:
        assert self.inbox is not None
        self.inbox.handle(msg.node_id, msg.data)
        stopped = self.finalizer is not None and self.finalizer.stop_time is not None
        if msg.data.get("final") and stopped and not self.workers_without_final():
            self.finalize()

    def workers_without_final(self) -> list[str]:
        """Connected workers whose final batch of records has not arrived."""
        if self.inbox is None:
            return []
        runner = self.environment.runner
        alive = {c.id for c in runner.clients.values() if c.state != locust.runners.STATE_MISSING}
        return sorted(alive - self.inbox.finals)

    def total_in_flight(self) -> int:
        return self.inbox.total_in_flight() if self.inbox is not None else self.in_flight


def client_config(request: RequestConfig, host: str) -> ClientConfig:
    """The HTTP client's settings: the request part of the configuration and the target."""
    if not host:
        raise ConfigError("--host: no target given (e.g. --host http://127.0.0.1:8000)")
    return ClientConfig(
        host=host,
        model=request.model,
        endpoint=request.endpoint,
        api_key=request.api_key_value(),
        temperature=request.temperature,
        extra_body=dict(request.extra_body),
        headers=dict(request.headers),
        request_timeout=request.request_timeout,
        ca_cert=request.ca_cert,
        insecure=request.insecure,
    )
