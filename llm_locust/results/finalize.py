"""The end of a run: ``summary.json`` and the text printed after a headless run.

The summary is computed from ``requests.jsonl`` read back from disk (see
:mod:`llm_locust.results.writer`), with a ``config`` block that says what was run: target,
model, users, the options used (never the API key), and the load generator's CPU. The
statistics cover the measured records; the others are counted under ``excluded``
(see :mod:`llm_locust.results.stages`).
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

from llm_locust import __version__
from llm_locust.record import RequestRecord
from llm_locust.results.accuracy import input_length_error
from llm_locust.results.analysis import analyse
from llm_locust.results.report import end_of_run_text
from llm_locust.results.slo import evaluate
from llm_locust.results.stages import capacity_verdict, split_rows, stage_summaries
from llm_locust.results.summary import max_concurrency, summarize
from llm_locust.results.validity import MAX_SEND_LAG_MS
from llm_locust.results.writer import ResultsWriter

__all__ = ["SLO_FAILED_EXIT", "Finalizer", "config_block", "options_block"]

log = logging.getLogger("llm_locust")

SLO_FAILED_EXIT = 3
#: Locust's own options worth recording next to ours (``-u``, ``-r``, ``-t`` are in the configuration).
_LOCUST_OPTIONS = (
    "headless",
    "expect_workers",
    "processes",
    "stop_timeout",
    "locustfile",
)


class Finalizer:
    """Collects what the summary needs over a test and writes it once at the end."""

    def __init__(self, run: Any, start_time: float) -> None:
        self.run = run
        self.start_time = start_time
        self.stop_time: float | None = None
        self.peak_users = 0
        self.cpu_warning = False
        self.peak_cpu = 0.0

    def stopped(self, when: float) -> None:
        if self.stop_time is None:
            self.stop_time = when

    def observe_load(self, users: int, cpu: float) -> None:
        self.peak_users = max(self.peak_users, users)
        self.peak_cpu = max(self.peak_cpu, cpu)

    def finish(self, writer: ResultsWriter) -> dict[str, Any]:
        stop = self.stop_time if self.stop_time is not None else time.time()
        rows = list(writer.rows())
        summary = self.summary(rows, stop)
        self._analyse(summary, rows, writer)
        path = writer.write_summary(summary)
        self._set_exit_code(summary)
        if self.run.run_config.headless:
            paths = None if path is None else f"results: {writer.requests_path} and {path}"
            print(end_of_run_text(summary, paths), file=sys.stdout, flush=True)
        self._warn(summary)
        return summary

    def summary(self, rows: list[dict[str, Any]], stop: float) -> dict[str, Any]:
        """The summary of ``rows`` (every record of the test) for a test that stopped at ``stop``."""
        measured, excluded = split_rows(rows)
        summary = summarize(measured, stop - self.start_time)
        summary["incomplete"] = excluded["incomplete"]
        summary["max_concurrent_requests"] = max_concurrency(rows)  # every request was in flight
        summary["excluded"] = excluded
        summary["warmup_requests"] = sum(1 for r in rows if r.get("warmup"))
        summary["rampup_requests"] = sum(1 for r in rows if r.get("rampup"))
        summary["length_accuracy"] = input_length_error([RequestRecord.from_json(r) for r in measured])
        guard = getattr(self.run.workload, "guard", None)
        if guard is not None and guard.message():
            summary["length_policy"] = guard.message()
        slo = self.run.slo
        if slo is not None:
            records = [RequestRecord.from_json(r) for r in measured]
            summary["slo"] = evaluate(slo, records, summary["duration"]).to_json()
        if summary.get("p99_send_lag_ms") is not None:
            summary["generator_lagging"] = summary["p99_send_lag_ms"] > MAX_SEND_LAG_MS
        plan, t0 = self.run.plan, self.run.plan_t0
        if plan is not None and plan.stages is not None and t0 is not None:
            levels = getattr(self.run, "levels", None)
            if levels is not None:
                levels.finish(stop)
            summary["stages"] = stage_summaries(plan, t0, stop, rows, slo, levels)
            summary.update(capacity_verdict(summary["stages"]))
        interrupted = getattr(self.run, "interrupted", None)
        summary["interrupted"] = interrupted is not None
        summary["interrupted_by"] = interrupted
        summary["drain"] = getattr(self.run, "drain", None)
        summary["config"] = config_block(self.run, self)
        return summary

    def _warn(self, summary: dict[str, Any]) -> None:
        if summary.get("generator_lagging"):
            log.warning(
                "llm-locust: the load generator fell behind its arrival schedule "
                "(send lag p99 %.0f ms): results understate the load; add workers",
                summary["p99_send_lag_ms"],
            )
        if self.cpu_warning:
            log.warning(
                "llm-locust: the load generator's CPU saturated (peak %.0f%%): token timestamps "
                "may be late; add workers",
                self.peak_cpu,
            )

    def _analyse(self, summary: dict[str, Any], rows: list[dict[str, Any]], writer: ResultsWriter) -> None:
        """Windows, drift, series SLO lines, honest stage verdicts, vLLM keys (results.analysis),
        then the capacity answer again on those verdicts; never loses the summary."""
        settings = self.run.run_config.results
        try:
            analyse(
                summary,
                rows,
                split_rows(rows)[0],
                writer.directory,
                self.run.slo,
                window_s=settings.window,
                detailed=settings.save_detailed,
            )
        except Exception as exc:  # the summary is written whatever goes wrong here
            log.warning("llm-locust: time windows and drift left out of the summary: %s", exc)
            return
        if summary.get("stages"):
            summary.update(capacity_verdict(summary["stages"]))

    def _set_exit_code(self, summary: dict[str, Any]) -> None:
        """Interrupted: 128 + the signal (130 SIGINT, 143 SIGTERM). Else, with an SLO, the
        verdict: 0 pass, 3 fail."""
        code = getattr(self.run, "interrupt_exit_code", None)
        if code is not None:
            self.run.environment.process_exit_code = code
        elif summary.get("slo") is not None:
            self.run.environment.process_exit_code = 0 if summary["slo"]["passed"] else SLO_FAILED_EXIT


def config_block(run: Any, finalizer: Finalizer) -> dict[str, Any]:
    """What was run, for ``summary.json``. No secrets."""
    options = run.environment.parsed_options
    config = run.config
    block: dict[str, Any] = {
        "llm_locust_version": __version__,
        "target": run.environment.host,
        "model": getattr(config, "model", None),
        "endpoint": getattr(config, "endpoint", None),
        "role": run.role,
        "peak_users": finalizer.peak_users,
        "client_cpu_peak_percent": round(finalizer.peak_cpu, 1),
        "client_cpu_saturated": finalizer.cpu_warning,
        "start_time": finalizer.start_time,
        "stop_time": finalizer.stop_time,
        "plan_t0": getattr(run, "plan_t0", None),
    }
    if run.role == "master":
        block["workers_without_final_batch"] = run.workers_without_final()
    if run.server_info.get("max_model_len"):
        block["max_model_len"] = run.server_info["max_model_len"]
    if run.server_info.get("preflight"):
        # the preflight's own requests: the server counted them, the records do not hold them
        block["preflight_sent"] = run.server_info["preflight"]
    if run.workload is not None:
        block["workload"] = run.workload.describe()
    if run.plan is not None:
        block["load_model"] = run.plan.describe()
    block["options"] = options_block(run.run_config, options)
    return block


def options_block(config: Any, options: Any) -> dict[str, Any]:
    """Every llm-locust option as the run used it (typed, secrets left out, ``Authorization``-like
    header values redacted), plus a few of Locust's own."""
    values = vars(options) if options is not None else {}
    out = config.options()
    out.update({name: values[name] for name in _LOCUST_OPTIONS if name in values})
    return dict(sorted(out.items()))
