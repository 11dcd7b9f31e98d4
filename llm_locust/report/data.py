"""One results folder, loaded for the report: its summary, its records and its series.

A folder holds ``summary.json`` and ``requests.jsonl`` (both required) and, with
``--server-metrics``, ``server_metrics.jsonl``. Windows and the drift verdict come from the
summary when it has them at the asked width; a folder written before they existed (or a
different ``--window``) gets them computed here from the records, the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
from pydantic import ValidationError

from llm_locust.config.jsontypes import JsonObject
from llm_locust.report.points import StagePoint
from llm_locust.results.analysis import SERVER_FILE, drift_of, span_of
from llm_locust.results.columns import Columns, read_columns, read_rows
from llm_locust.results.failures import tally_of
from llm_locust.results.series_model import DriftBlock, WindowRow
from llm_locust.results.server_series import gauge_series, read_server_metrics
from llm_locust.results.summary_model import SCHEMA_VERSION, RunSummary, StageRow, file_key
from llm_locust.results.timeline import Timeline
from llm_locust.results.timescale import deployment_row, deployment_summary
from llm_locust.results.windows import auto_window, window_series
from llm_locust.results.writer import REQUESTS_FILE, SUMMARY_FILE

__all__ = ["ReportError", "RunData", "load_run"]

#: How many messages per failure class the report's table shows.
REPORT_MESSAGES = 3


class ReportError(ValueError):
    """A folder the report cannot use; the message names it and fits on one line."""


@dataclass
class RunData:
    """Everything the charts and tables read about one run: the summary as its model, and its
    records as the columns the summary is computed from (in deployment time with a sped-up
    target)."""

    name: str
    directory: Path
    model: RunSummary
    columns: Columns
    timeline: Timeline
    server: list[dict[str, float]]
    windows: list[WindowRow]
    window_s: float
    t0: float
    t_end: float
    drift: DriftBlock
    gpus: float | None = None
    messages: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    #: the target ran this many times faster than its deployment; every number here is converted
    speedup: float = 1.0

    @property
    def stages(self) -> list[StageRow]:
        return list(self.model.stages or ())

    @cached_property
    def points(self) -> list[StagePoint]:
        """The load levels: each stage, or the whole run when it had none (pulled once)."""
        if not self.model.stages:
            return [self.whole]
        return [StagePoint(s, self.timeline, s.index, (self.t0, self.t_end)) for s in self.model.stages]

    @cached_property
    def whole(self) -> StagePoint:
        """The whole run as one level (what the CDFs draw)."""
        return StagePoint(self.model, self.timeline, None, (self.t0, self.t_end))

    def stage_start(self, stage: StageRow) -> float:
        """When a stage began, in seconds from the start of the test."""
        if stage.span is not None:
            return stage.span.start - self.t0
        if stage.window is not None:
            return stage.window.start - (stage.warmup_s or 0.0) - self.t0
        return stage.start_s or 0.0


def _read_json(path: Path, folder: Path) -> JsonObject:
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


def summary_model(summary: JsonObject, folder: Path) -> RunSummary:
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
    """Load one results folder; raises :class:`ReportError` for a folder it cannot use.

    The records are read once, row by row, into the columns the summary is computed from
    (:func:`~llm_locust.results.columns.read_columns`; a sped-up target's converted to
    deployment time on the way), never kept as rows."""
    folder = Path(directory)
    if not folder.is_dir():
        raise ReportError(f"{folder}: not a directory")
    summary = _read_json(folder / SUMMARY_FILE, folder)
    model = summary_model(summary, folder)  # a file its model refuses: one line, before the records
    requests = folder / REQUESTS_FILE
    if not requests.exists():
        raise ReportError(f"{folder}: no {REQUESTS_FILE}")
    speedup = model.config.speedup
    samples = read_server_metrics(folder / SERVER_FILE)
    try:
        if speedup != 1:  # a sped-up simulator: the page in the deployment's time (results/timescale.py)
            origin = _origin(model, requests)
            summary = deployment_summary(summary, speedup, origin)
            rows = (deployment_row(r, speedup, origin) for r in read_rows(requests))
            samples = [{**s, "t": origin + (float(s["t"]) - origin) * speedup} for s in samples]
            cols = Columns.from_rows(rows)
        else:
            cols = read_columns(requests)
    except (OSError, ValueError) as exc:
        raise ReportError(f"{folder}: cannot read {REQUESTS_FILE}: {exc}") from None
    if speedup != 1:
        model = summary_model(summary, folder)
    timeline = Timeline.from_columns(cols)
    server = gauge_series(samples)
    t0, t_end = span_of(model.config.start_time, model.config.stop_time, timeline)
    width = window_s or model.window_s or auto_window(t_end - t0)
    windows = model.windows if model.window_s == width else None
    if not windows:
        windows = window_series(timeline, t0, t_end, width, server or None)
    drift = model.drift if model.window_s == width else None
    if drift is None:
        stages = [(s.label, s.window) for s in model.stages or ()]
        start = model.stages[0].window.start if model.stages and model.stages[0].window else t0
        drift = drift_of(stages, windows, t0, start, width)[0]
    return RunData(
        name=name or folder.resolve().name,
        directory=folder,
        model=model,
        columns=cols,
        timeline=timeline,
        server=server,
        windows=windows,
        window_s=float(width),
        t0=t0,
        t_end=t_end,
        drift=drift,
        gpus=gpus if gpus is not None else model.config.gpus,
        messages=top_messages(model, requests),
        speedup=speedup,
    )


def _origin(summary: RunSummary, requests: Path) -> float:
    """Where deployment time is stretched from: the run's start (the first send of a file that
    does not say it)."""
    if summary.config.start_time is not None:
        return summary.config.start_time
    starts = (r.get("start_time") for r in read_rows(requests))
    return min((float(t) for t in starts if isinstance(t, int | float)), default=0.0)


def top_messages(
    summary: RunSummary, requests: Path, per_class: int = REPORT_MESSAGES
) -> dict[str, list[tuple[str, int]]]:
    """The most frequent failure messages of each failure class (message, count): the summary's
    ``error_messages`` (:class:`~llm_locust.results.failures.FailureTally`, of the failures its
    ``errors`` counts), or the same tally of the records (read again, row by row) for a summary
    written without them."""
    if "error_messages" in summary.model_fields_set:
        tallied = {k: [(str(m), n) for m, n, *_ in v] for k, v in summary.error_messages.items()}
    else:
        counted = tally_of(read_rows(requests)).messages
        tallied = {k: [(str(m), n) for m, n in c.most_common()] for k, c in sorted(counted.items())}
    return {
        outcome: [(m, int(n)) for m, n in top[:per_class] if isinstance(n, int | float)]
        for outcome, top in tallied.items()
    }


def quantile_points(values: np.ndarray, points: int = 200) -> list[list[float]]:
    """An empirical CDF as ``[value, fraction]`` pairs at ``points`` evenly spaced fractions
    (the same fractions for every run, so runs compare point by point)."""
    values = values[~np.isnan(values)]
    if values.size == 0:
        return []
    fractions = np.linspace(0.0, 1.0, points)
    return [[float(v), float(f)] for v, f in zip(np.quantile(values, fractions), fractions, strict=True)]
