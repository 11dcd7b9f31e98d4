"""One results folder, loaded for the report: its summary, its records and its series.

A folder holds ``summary.json`` and ``requests.jsonl`` (both required) and, with
``--server-metrics``, ``server_metrics.jsonl``. Windows and the drift verdict come from the
summary when it has them at the asked width; a folder written before they existed (or a
different ``--window``) gets them computed here from the records, the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from llm_locust.results.analysis import SERVER_FILE, drift_of, span_of
from llm_locust.results.columns import read_rows
from llm_locust.results.failures import tally_of
from llm_locust.results.server_series import gauge_series, read_server_metrics
from llm_locust.results.summary_model import SCHEMA_VERSION, RunSummary, file_key
from llm_locust.results.timeline import Timeline
from llm_locust.results.timescale import deployment_row, deployment_summary, speedup_of
from llm_locust.results.windows import auto_window, window_series
from llm_locust.results.writer import REQUESTS_FILE, SUMMARY_FILE

__all__ = ["ReportError", "RunData", "load_run"]

#: How many messages per failure class the report's table shows.
REPORT_MESSAGES = 3


class ReportError(ValueError):
    """A folder the report cannot use; the message names it and fits on one line."""


@dataclass
class RunData:
    """Everything the charts and tables read about one run."""

    name: str
    directory: Path
    summary: dict[str, Any]  # the file's keys (deployment time with a sped-up target)
    model: RunSummary  # the same summary, typed (what the readers read)
    timeline: Timeline
    server: list[dict[str, Any]]
    windows: list[dict[str, Any]]
    window_s: float
    t0: float
    t_end: float
    drift: dict[str, Any]
    gpus: float | None = None
    messages: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    #: values the charts derive once per run (stage points and their sorted columns)
    cache: dict[str, Any] = field(default_factory=dict)
    #: the target ran this many times faster than its deployment; every number here is converted
    speedup: float = 1.0

    @property
    def stages(self) -> list[dict[str, Any]]:
        return list(self.summary.get("stages") or [])

    def stage_start(self, stage: dict[str, Any]) -> float:
        """When a stage began, in seconds from the start of the test."""
        span = stage.get("span") or {}
        if span.get("start") is not None:
            return float(span["start"]) - self.t0
        window = stage.get("window") or {}
        if window.get("start") is not None:
            return float(window["start"]) - float(stage.get("warmup_s") or 0.0) - self.t0
        return float(stage.get("start_s") or 0.0)


def _read_json(path: Path, folder: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReportError(
            f"{folder}: no {path.name} (not a results folder, or the run has not ended)"
        ) from None
    except (OSError, ValueError) as exc:
        raise ReportError(f"{folder}: cannot read {path.name}: {exc}") from None
    if not isinstance(data, dict):
        raise ReportError(f"{folder}: {path.name} is not a JSON object")
    return data


def summary_model(summary: dict[str, Any], folder: Path) -> RunSummary:
    """``summary`` read through its model: a file from before ``schema_version`` loads with
    defaults; one whose keys have the wrong type is a :class:`ReportError` of one line naming
    the first key."""
    try:
        return RunSummary.model_validate(summary)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = file_key(first["loc"])
        raise ReportError(
            f"{folder}: {SUMMARY_FILE} does not match its schema ({where}: {first['msg']}; "
            f"{exc.error_count()} problem(s); docs/schemas/summary.v{SCHEMA_VERSION}.json)"
        ) from None


def load_run(
    directory: str | Path, window_s: float | None = None, gpus: float | None = None, name: str | None = None
) -> RunData:
    """Load one results folder; raises :class:`ReportError` for a folder it cannot use."""
    folder = Path(directory)
    if not folder.is_dir():
        raise ReportError(f"{folder}: not a directory")
    summary = _read_json(folder / SUMMARY_FILE, folder)
    summary_model(summary, folder)  # a file its model refuses: one line, before reading the records
    if not (folder / REQUESTS_FILE).exists():
        raise ReportError(f"{folder}: no {REQUESTS_FILE}")
    try:
        rows = list(read_rows(folder / REQUESTS_FILE))
    except (OSError, ValueError) as exc:
        raise ReportError(f"{folder}: cannot read {REQUESTS_FILE}: {exc}") from None
    samples = list(read_server_metrics(folder / SERVER_FILE))
    messages = top_messages(summary, rows)
    speedup = speedup_of(summary)
    if speedup != 1:  # a sped-up simulator: the page in the deployment's time (results/timescale.py)
        summary, rows, samples = _in_deployment_time(summary, rows, samples, speedup)
    timeline = Timeline(rows)
    server = gauge_series(samples)
    t0, t_end = span_of(summary, timeline)
    width = window_s or summary.get("window_s") or auto_window(t_end - t0)
    windows = summary.get("windows")
    if not windows or summary.get("window_s") != width:
        windows = window_series(timeline, t0, t_end, width, server or None)
    drift = summary.get("drift") if summary.get("window_s") == width else None
    if drift is None:
        stages = [dict(s) for s in summary.get("stages") or []]
        start = stages[0]["window"]["start"] if stages and stages[0].get("window") else t0
        drift = drift_of(stages, windows, t0, start, width)
    config_gpus = (summary.get("config") or {}).get("gpus")
    return RunData(
        name=name or folder.resolve().name,
        directory=folder,
        summary=summary,
        model=summary_model(summary, folder),
        timeline=timeline,
        server=server,
        windows=windows,
        window_s=float(width),
        t0=t0,
        t_end=t_end,
        drift=drift,
        gpus=gpus if gpus is not None else config_gpus,
        messages=messages,
        speedup=speedup,
    )


def _in_deployment_time(
    summary: dict[str, Any], rows: list[dict[str, Any]], samples: list[dict[str, Any]], k: float
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """The summary, the records and the server's samples of a run whose target ran ``k`` times
    faster than its deployment, in deployment time (stretched from the run's start)."""
    starts = [float(r["start_time"]) for r in rows if r.get("start_time") is not None]
    origin = float((summary.get("config") or {}).get("start_time") or min(starts, default=0.0))
    return (
        deployment_summary(summary, k, origin),
        [deployment_row(r, k, origin) for r in rows],
        [{**s, "t": origin + (float(s["t"]) - origin) * k} for s in samples],
    )


def top_messages(
    summary: dict[str, Any], rows: list[dict[str, Any]], per_class: int = REPORT_MESSAGES
) -> dict[str, list[tuple[str, int]]]:
    """The most frequent failure messages of each failure class (message, count): the summary's
    ``error_messages`` (:class:`~llm_locust.results.failures.FailureTally`, of the failures its
    ``errors`` counts), or the same tally of the rows for a summary written without them."""
    tallied = summary.get("error_messages")
    if tallied is None:
        tallied = tally_of(rows).to_summary()["error_messages"]
    return {outcome: [(str(m), int(n)) for m, n in top[:per_class]] for outcome, top in tallied.items()}


def quantile_points(values: np.ndarray, points: int = 200) -> list[list[float]]:
    """An empirical CDF as ``[value, fraction]`` pairs at ``points`` evenly spaced fractions
    (the same fractions for every run, so runs compare point by point)."""
    values = values[~np.isnan(values)]
    if values.size == 0:
        return []
    fractions = np.linspace(0.0, 1.0, points)
    return [[float(v), float(f)] for v, f in zip(np.quantile(values, fractions), fractions, strict=True)]
