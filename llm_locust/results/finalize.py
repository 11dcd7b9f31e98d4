"""The end of a run: ``summary.json`` and the table printed after a headless run.

The summary is computed from ``requests.jsonl`` read back from disk (see
:mod:`llm_locust.results.writer`), with a ``config`` block that says what was run: target,
model, users, the options used (never the API key), and the load generator's CPU.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

from llm_locust import __version__
from llm_locust.config.options import registered_names
from llm_locust.load.stages import littles_law
from llm_locust.record import RequestRecord
from llm_locust.results.accuracy import input_length_error
from llm_locust.results.slo import evaluate, highest_passing_stage
from llm_locust.results.summary import format_stage_table, format_table, summarize
from llm_locust.results.writer import ResultsWriter

__all__ = ["SECRET_OPTIONS", "Finalizer", "config_block"]

log = logging.getLogger("llm_locust")

SLO_FAILED_EXIT = 3
#: A send lag p99 above this means the generator could not keep its schedule.
LAG_WARNING_MS = 50.0
#: Options never written anywhere.
SECRET_OPTIONS = frozenset({"api_key"})
#: Locust's own options worth recording next to ours.
_LOCUST_OPTIONS = (
    "num_users",
    "spawn_rate",
    "run_time",
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
        measured = [r for r in rows if not r.get("warmup")]
        summary = summarize(measured, stop - self.start_time)
        summary["warmup_requests"] = len(rows) - len(measured)
        summary["length_accuracy"] = input_length_error([RequestRecord.from_json(r) for r in measured])
        guard = getattr(self.run.workload, "guard", None)
        if guard is not None and guard.message():
            summary["length_policy"] = guard.message()
        slo = self.run.slo
        if slo is not None:
            summary["slo"] = evaluate(
                slo, [RequestRecord.from_json(r) for r in measured], summary["duration"]
            ).to_json()
        if summary.get("p99_send_lag_ms") is not None:
            summary["generator_lagging"] = summary["p99_send_lag_ms"] > LAG_WARNING_MS
        plan, t0 = self.run.plan, self.run.plan_t0
        if plan is not None and plan.stages is not None and t0 is not None:
            summary["stages"] = stage_summaries(plan, t0, stop, rows, slo)
            summary.update(capacity_verdict(summary["stages"]))
        summary["config"] = config_block(self.run, self)
        path = writer.write_summary(summary)
        self._set_exit_code(summary)
        options = self.run.environment.parsed_options
        if options is not None and getattr(options, "headless", False):
            print(format_table(summary), file=sys.stdout, flush=True)
            if summary.get("stages"):
                print(format_stage_table(summary["stages"]), flush=True)
                if summary.get("capacity"):
                    print(summary["capacity"], flush=True)
            if path is not None:
                print(f"results: {writer.requests_path} and {path}", flush=True)
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
        return summary

    def _set_exit_code(self, summary: dict[str, Any]) -> None:
        """With an SLO, the verdict decides the exit code: 0 pass, 3 fail."""
        if summary.get("slo") is not None:
            self.run.environment.process_exit_code = 0 if summary["slo"]["passed"] else SLO_FAILED_EXIT


def stage_summaries(
    plan: Any, t0: float, stop: float, rows: list[dict[str, Any]], slo: Any
) -> list[dict[str, Any]]:
    """Per stage: the run-level keys over its post-warm-up records, plus its target and window."""
    by_stage: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("stage") is not None and not r.get("warmup"):
            by_stage.setdefault(r["stage"], []).append(r)
    out = []
    for stage in plan.stages:
        start = t0 + stage.start_s + stage.warmup_s
        end = min(t0 + stage.start_s + stage.duration_s, stop)
        if end <= t0 + stage.start_s:
            break  # the run stopped before this stage began
        stage_rows = by_stage.get(stage.index, [])
        window = max(end - start, 1e-9)
        entry = {**stage.to_json(), **summarize(stage_rows, window)}
        entry["window"] = {"start": start, "end": end}
        records = [RequestRecord.from_json(r) for r in stage_rows]
        for rec, row in zip(records, stage_rows, strict=True):
            rec.wall_start = row["start_time"]
        if end > start:
            entry["littles_law"] = littles_law(records, start, end, wall_clock=True)
        if slo is not None:
            entry["slo"] = evaluate(slo, records, window).to_json()
        out.append(entry)
    return out


def capacity_verdict(stages: list[dict[str, Any]]) -> dict[str, Any]:
    """The highest stage (in order, before the first failure) that met the SLO."""
    judged = [(i, s) for i, s in enumerate(stages) if s.get("slo") is not None]
    if not judged:
        return {}
    found = highest_passing_stage(judged, passed=lambda s: s["slo"]["passed"])
    best = None if found is None else stages[found]
    if best is None:
        return {"highest_passing_stage": None, "capacity": "no stage met the SLO"}
    return {
        "highest_passing_stage": best["index"],
        "capacity": f"the system holds {best['label']} within the SLO "
        f"({best['request_throughput']:.2f} req/s, {best['output_throughput']:.0f} output tok/s)",
    }


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
    }
    if run.server_info.get("max_model_len"):
        block["max_model_len"] = run.server_info["max_model_len"]
    if run.server_info.get("preflight"):
        # the preflight's own requests: the server counted them, the records do not hold them
        block["preflight_sent"] = run.server_info["preflight"]
    if run.workload is not None:
        block["workload"] = run.workload.describe()
    if run.plan is not None:
        block["load_model"] = run.plan.describe()
    block["options"] = _options_dict(options)
    return block


def _options_dict(options: Any) -> dict[str, Any]:
    if options is None:
        return {}
    names = set(registered_names()) | set(_LOCUST_OPTIONS)
    out = {}
    for name in sorted(names - SECRET_OPTIONS):
        if hasattr(options, name):
            value = getattr(options, name)
            if name == "header" and value:
                value = [h.split(":", 1)[0] + ":<redacted>" if "auth" in h.lower() else h for h in value]
            out[name] = value
    return out
