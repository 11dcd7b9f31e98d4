"""The results of one test, on the process that owns them (the local runner or the master).

A :class:`TestResults` is opened at ``test_start`` with the test's run context: it opens
the results folder (``requests.jsonl``, or a spool without ``--results-dir``), writes
``run.json`` (the context, rewritten as stages end with their level samples), samples the
runner's user count and CPU (the stages' levels, the config block's peaks), takes each row
the record bus publishes (marking ramp-up) and each health interval (``health.jsonl``), and
at the end computes ``summary.json`` from the file in one streaming pass
(:func:`~llm_locust.results.finalize.build_summary`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from llm_locust import __version__
from llm_locust.config.jsontypes import JsonObject
from llm_locust.config.redact import strip_credentials
from llm_locust.load.levels import LevelTracker
from llm_locust.results.columns import read_columns
from llm_locust.results.ending import WorkerQuit
from llm_locust.results.failures import FailureTally
from llm_locust.results.finalize import (
    RunFacts,
    add_analysis,
    add_replicas,
    build_summary,
    options_block,
    warnings,
)
from llm_locust.results.rebuild import run_json
from llm_locust.results.report import end_of_run_text
from llm_locust.results.slo import itl_stats_of
from llm_locust.results.summary_model import RunSummary
from llm_locust.results.writer import SUMMARY_FILE, ResultsWriter
from llm_locust.runtime.context import LiveState, RunContext
from llm_locust.runtime.departures import arrivals_not_sent

log = logging.getLogger("llm_locust")

__all__ = ["TestResults"]


class TestResults:
    """Writer, level samples and summary of one test (see the module docstring)."""

    def __init__(
        self,
        context: RunContext,
        directory: Path | None,
        *,
        host: str | None,
        options: JsonObject,
        drain: JsonObject | None,
        length_policy: Callable[[], str | None] = lambda: None,
        health: Callable[[], Sequence[Mapping[str, float | str]]] = lambda: (),
        search: Any = None,
    ) -> None:
        self.context = context
        self.search = search  # the capacity search's driver (runtime.search), if any
        self.writer = ResultsWriter(directory)
        self.host = host
        self.options = options
        self.drain = drain
        self.length_policy = length_policy
        self.health = health  # the load processes' health intervals (client/health.py), read at the end
        self.start_time = context.start_time
        self.stop_time: float | None = None
        self.levels = LevelTracker(context.plan.stages, context.t0) if context.staged else None  # type: ignore[arg-type]
        self.peak_users = 0
        self.peak_cpu = 0.0
        self.cpu_warning = False
        self._stage: int | None = None
        self.summary: RunSummary | None = None
        self.failures = FailureTally()
        self.writer.write_run(run_json(self.facts(self.start_time)))

    # -- while the test runs --------------------------------------------------------
    def take(self, row: JsonObject) -> None:
        """A row from the bus: mark ramp-up (sent before its stage reached its user count) or, in
        a staged run, ``outside`` (sent in no stage: a search step settling), write it."""
        stage, start = row.get("stage"), row.get("start_time")
        if self.levels is not None and isinstance(stage, int) and isinstance(start, (int, float)):
            row["rampup"] = self.levels.ramp_up(stage, start)
        elif self.context.staged and stage is None:
            row["outside"] = True
        self.writer.write(row)
        self.failures.add(row)

    def take_health(self, interval: Mapping[str, float | str]) -> None:
        """A load process's health interval as it is measured (``health.jsonl``)."""
        self.writer.write_health(dict(interval))

    def observe(self, now: float, users: int, cpu: float, cpu_warning: bool) -> None:
        """One sample of the runner's user count and CPU."""
        self.peak_users = max(self.peak_users, users)
        self.peak_cpu = max(self.peak_cpu, cpu)
        self.cpu_warning = self.cpu_warning or cpu_warning
        if self.levels is None:
            return
        self.levels.observe(now, users)
        stage, _ = self.context.stage_at(now)
        index = None if stage is None else stage.index
        if index != self._stage:  # a stage ended: save its level samples with the context
            self._stage = index
            self.writer.write_run(run_json(self.facts(now), self._level_facts(index)))

    def _level_facts(self, before: int | None) -> dict[int, JsonObject]:
        if self.levels is None:
            return {}
        stages = self.context.plan.stages or ()
        return {s.index: self.levels.facts(s.index) for s in stages if before is None or s.index < before}

    def stopped(self, when: float) -> None:
        if self.stop_time is None:
            self.stop_time = when

    @property
    def running(self) -> bool:
        return self.stop_time is None and self.summary is None

    # -- the end --------------------------------------------------------------------
    def facts(self, stop: float, extra: JsonObject | None = None) -> RunFacts:
        context = self.context
        return RunFacts(
            start_time=self.start_time,
            stop_time=stop,
            stages=context.plan.stages if context.staged else None,
            t0=context.t0,
            slo=context.config.slo,
            levels=self.levels,
            drain=self.drain,
            length_policy=self.length_policy(),
            config=self.config_block(extra or {}),
            window_s=context.config.results.window,
            detailed=context.config.results.save_detailed,
            search=self.search,
            peak_users=self.peak_users,
            think_mean_s=context.config.workload.think.mean,
            demand=context.config.load.demand,
            percentiles=context.config.results.percentiles,
        )

    def finish(
        self,
        live: LiveState,
        extra: JsonObject | None = None,
        blocks: JsonObject | None = None,
    ) -> RunSummary:
        """The summary, from ``requests.jsonl`` read back in one pass (with ``blocks`` added, e.g.
        the master's own; ``live``: what interrupted the test, if anything); written, the writer
        closed."""
        stop = self.stop_time if self.stop_time is not None else time.time()
        if self.levels is not None:
            self.levels.finish(stop)
        self.writer.flush()
        facts = self.facts(stop, extra)
        facts.interrupted, facts.interrupt_cause = live.interrupted, live.interrupt_cause
        facts.interrupted_at, facts.planned_s = live.interrupted_at, planned_span(self.context)
        facts.health = self.health()
        cols = read_columns(self.writer.requests_path, itl_stats_of(facts.slo))
        summary = build_summary(cols, facts)
        if context_endpoints(self.context):
            add_replicas(summary, self.writer.requests_path)
        summary.update(self.failures.to_summary())
        summary.update(blocks or {})
        plan, t0 = self.context.plan, self.context.t0  # open loop on a fixed schedule, workers quit:
        arrivals = plan.arrivals if plan.burst is None and plan.search is None else None
        quits = [WorkerQuit.model_validate(q) for q in summary.get("workers_quit") or []]
        if quits and arrivals is not None and t0 is not None:
            summary["arrivals_not_sent"] = arrivals_not_sent(
                arrivals, quits, self.context.workers, t0, stop - t0
            )
        problem = add_analysis(summary, cols, facts, self.writer.directory, self.writer.requests_path)
        if problem is not None:
            log.warning("llm-locust: %s", problem)
        model = self.writer.write_summary(summary)
        self.writer.write_run(run_json(facts, self._level_facts(None)))
        self.writer.close()
        self.summary = model
        return model

    def config_block(self, extra: JsonObject) -> JsonObject:
        """What was run, for ``summary.json`` (and ``run.json``). No secrets."""
        context = self.context
        client = context.client
        block: JsonObject = {
            "llm_locust_version": __version__,
            "target": strip_credentials(self.host or ""),
            "model": getattr(client, "model", None) or context.server.get("model"),
            "endpoint": getattr(client, "endpoint", None) or context.config.request.endpoint,
            "role": context.role,
            "peak_users": self.peak_users,
            "client_cpu_peak_percent": round(self.peak_cpu, 1),
            "client_cpu_saturated": self.cpu_warning,
            "start_time": self.start_time,
            "stop_time": self.stop_time,
            "plan_t0": context.t0,
            **extra,
        }
        if context.server.get("max_model_len"):
            block["max_model_len"] = context.server["max_model_len"]
        if context.server.get("preflight"):
            # the preflight's own requests: the server counted them, the records do not hold them
            block["preflight_sent"] = context.server["preflight"]
        if context.workload is not None:
            block["workload"] = context.workload.describe()
        block["load_model"] = context.plan.describe()
        speedup = context.config.results.target_speedup
        if speedup != 1:  # this folder's numbers are the measured wall clock: say so, and the factor
            block["time_scale"] = {"clock": "wall", "target_speedup": speedup}
        block["options"] = options_block(context.config, self.options)
        return block

    def tell(self, summary: RunSummary, printed: bool) -> None:
        """The test's end, said: the end-of-run text on stdout (when ``printed``: headless) and
        the summary's warnings in the log."""
        if printed:
            directory = self.writer.directory
            written = f"{self.writer.requests_path} and {directory / SUMMARY_FILE}" if directory else None
            print(end_of_run_text(summary, None if written is None else f"results: {written}"), flush=True)
        for line in warnings(summary):
            log.warning("llm-locust: %s", line)


def planned_span(context: RunContext) -> float | None:
    """How long the test was planned to run: its stages' end (a search's: ``-t``), else ``-t``;
    ``None``: until stopped."""
    plan, run_time = context.plan, context.config.load.run_time
    if plan.stages is not None and plan.search is None:
        return plan.stages.total_s
    return run_time or None


def context_endpoints(context: RunContext) -> bool:
    """Does the test spread its requests over ``--endpoints``?"""
    return bool(context.config.request.endpoints)
