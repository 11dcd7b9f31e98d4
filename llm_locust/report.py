"""The end of a run: ``summary.json`` and the table printed after a headless run.

The summary is computed from ``requests.jsonl`` read back from disk (see
:mod:`llm_locust.results`), with a ``config`` block that says what was run: target,
model, users, the options used (never the API key), and the load generator's CPU.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

from llm_locust import __version__
from llm_locust.options import registered_names
from llm_locust.results import ResultsWriter
from llm_locust.summary import format_table, summarize

__all__ = ["SECRET_OPTIONS", "Finalizer", "config_block"]

log = logging.getLogger("llm_locust")

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
        summary = summarize(writer.rows(), stop - self.start_time)
        summary["config"] = config_block(self.run, self)
        path = writer.write_summary(summary)
        options = self.run.environment.parsed_options
        if options is not None and getattr(options, "headless", False):
            print(format_table(summary), file=sys.stdout, flush=True)
            if path is not None:
                print(f"results: {writer.requests_path} and {path}", flush=True)
        if self.cpu_warning:
            log.warning(
                "llm-locust: the load generator's CPU saturated (peak %.0f%%): token timestamps "
                "may be late; add workers",
                self.peak_cpu,
            )
        return summary


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
    if run.workload is not None:
        block["workload"] = run.workload.describe()
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
