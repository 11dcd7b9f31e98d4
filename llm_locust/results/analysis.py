"""What the summary adds once the records are in: time windows, the soak verdict, the SLO
lines judged from series, the honest stage verdicts and vLLM's remaining keys.

:func:`analyse` is called where ``summary.json`` is written (and by ``llm-locust report``
for a folder written before), with every record of the test and the measured ones:

- ``window_s`` and ``windows`` (:mod:`llm_locust.results.windows`), also as ``windows.csv``;
- ``drift``: the soak verdict over the full windows after the first stage's warm-up
  (:mod:`llm_locust.results.drift`);
- SLO lines on server metrics and drift, judged for the run and per stage
  (:mod:`llm_locust.results.slo_series`), with ``passed`` and ``verdict`` recomputed;
- each judged stage's ``verdict``: ``invalid`` stays (the stage did not run at its level),
  otherwise the SLO's ``pass`` / ``fail`` / ``inconclusive`` (:mod:`llm_locust.results.confidence`);
- ``errors_by_class`` (the per-class counts; with ``--save-detailed`` ``errors`` becomes
  vLLM's per-request list) and the keys of :mod:`llm_locust.results.vllm_compat`.

Pure apart from reading ``server_metrics.jsonl`` and writing ``windows.csv`` in the folder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from llm_locust.config.jsontypes import JsonObject, number
from llm_locust.config.slo import SloKind
from llm_locust.load.search import Verdict
from llm_locust.results.drift import combine_verdicts, drift_verdict
from llm_locust.results.series_model import DriftBlock, WindowRow
from llm_locust.results.server_series import Point, gauge_series, read_server_metrics
from llm_locust.results.slo import SloLineResult, SloSpec
from llm_locust.results.slo_series import series_judge
from llm_locust.results.summary_blocks import Slo, SloLine, Window
from llm_locust.results.summary_model import RunSummary
from llm_locust.results.timeline import Timeline
from llm_locust.results.vllm_compat import READS, vllm_keys
from llm_locust.results.windows import auto_window, window_series, windows_csv

__all__ = ["SERVER_FILE", "WINDOWS_FILE", "StageSpan", "analyse", "analyse_timeline", "drift_of", "span_of"]

WINDOWS_FILE = "windows.csv"
SERVER_FILE = "server_metrics.jsonl"


def span_of(start: float | None, stop: float | None, timeline: Timeline) -> tuple[float, float]:
    """(start, end) of the test on the wall clock: the config's ``start`` and ``stop``, widened
    to the records (a request that finished in the drain after the stop still counts)."""
    starts, ends = timeline.start[~np.isnan(timeline.start)], timeline.end[~np.isnan(timeline.end)]
    firsts = [v for v in (start, starts.min() if starts.size else None) if v is not None]
    t0 = float(min(firsts)) if firsts else 0.0
    lasts = [v for v in (stop, ends.max() if ends.size else None) if v is not None]
    return t0, float(max([t0, *lasts]))


def analyse(
    summary: JsonObject,
    rows: Sequence[dict[str, Any]],
    measured: Sequence[dict[str, Any]],
    directory: Path | None = None,
    slo: SloSpec | None = None,
    window_s: float | None = None,
    detailed: bool = False,
) -> JsonObject:
    """Add the keys above to ``summary`` (in place, and returned)."""
    return analyse_timeline(summary, Timeline(rows), lambda: measured, directory, slo, window_s, detailed)


def analyse_timeline(
    summary: JsonObject,
    timeline: Timeline,
    measured: Callable[[], Iterable[dict[str, Any]]],
    directory: Path | None = None,
    slo: SloSpec | None = None,
    window_s: float | None = None,
    detailed: bool = False,
) -> JsonObject:
    """:func:`analyse` on a built ``timeline`` of every record (the end of a run builds it from
    the columns it read); ``measured()`` gives the measured rows, read only for ``detailed``."""
    config = summary.get("config")
    recorded = config if isinstance(config, Mapping) else {}
    t0, t_end = span_of(number(recorded.get("start_time")), number(recorded.get("stop_time")), timeline)
    width = window_s or auto_window(t_end - t0)
    server = gauge_series(read_server_metrics(directory / SERVER_FILE)) if directory is not None else []
    windows = window_series(timeline, t0, t_end, width, server or None)
    summary["window_s"] = width
    summary["windows"] = [w.to_json() for w in windows]
    stages = _stages(summary)
    measured_from = _measured_start(stages, t0)
    drift, per_stage = drift_of([_stage_span(s) for s in stages], windows, t0, measured_from, width)
    summary["drift"] = drift.to_json()
    for stage, block in zip(stages, per_stage, strict=True):
        if block is not None:
            stage["drift"] = block.to_json()
    if slo is not None:
        _judge_series(summary, stages, slo, server, windows, (t0, t_end, width, measured_from))
    _stage_verdicts(stages)
    errors = summary.get("errors")
    summary["errors_by_class"] = dict(errors) if isinstance(errors, dict) else {}
    read, _ = RunSummary.checked({key: summary[key] for key in READS if key in summary})
    summary.update(vllm_keys(measured() if detailed else (), read, detailed, timeline))
    if timeline.binned:
        summary["token_arrivals"] = timeline.token_precision()
    if directory is not None:
        (directory / WINDOWS_FILE).write_text(windows_csv(windows), encoding="utf-8")
    return summary


#: A stage's label and its measured window (wall clock), ``None`` when it has none.
StageSpan = tuple[str, Window | None]


def drift_of(
    stages: Sequence[StageSpan], windows: Sequence[WindowRow], t0: float, measured_from: float, width: float
) -> tuple[DriftBlock, list[DriftBlock | None]]:
    """The soak verdict: over the measured windows of a run with at most one stage, else per
    stage; and each stage's own (``None``: a single stage, or one without a window)."""
    if len(stages) <= 1:
        measured = [w for w in windows if t0 + w.start_s >= measured_from - 1e-6]
        return drift_verdict(measured, width), [None] * len(stages)
    parts: list[tuple[str, DriftBlock]] = []
    per_stage: list[DriftBlock | None] = []
    for label, span in stages:
        if span is None:
            per_stage.append(None)
            continue
        inside = [
            w for w in windows if span.start - 1e-6 <= t0 + w.start_s and t0 + w.end_s <= span.end + 1e-6
        ]
        block = drift_verdict(inside, width)
        per_stage.append(block)
        parts.append((label, block))
    return combine_verdicts(parts), per_stage


def _stages(summary: JsonObject) -> list[JsonObject]:
    stages = summary.get("stages")
    return [s for s in stages if isinstance(s, dict)] if isinstance(stages, list) else []


def _stage_span(stage: JsonObject) -> StageSpan:
    """A stage row's label (its index when it has none) and measured window."""
    label = stage.get("label", stage.get("index"))
    window = stage.get("window")
    return str(label), Window.model_validate(window) if isinstance(window, dict) and window else None


def _measured_start(stages: Sequence[JsonObject], t0: float) -> float:
    span = _stage_span(stages[0])[1] if stages else None
    return t0 if span is None else span.start


def _judge_series(
    summary: JsonObject,
    stages: Sequence[JsonObject],
    slo: SloSpec,
    server: list[Point],
    windows: Sequence[WindowRow],
    span: tuple[float, float, float, float],
) -> None:
    """The SLO lines on server metrics and drift, judged over the run and over each stage."""
    t0, t_end, width, measured_from = span
    lines = [line for line in slo.lines if line.kind is not SloKind.REQUEST]
    if not lines:
        return
    for block, start, end in [
        (summary, measured_from, t_end),
        *((s, w.start, w.end) for s in stages if (w := _stage_span(s)[1]) is not None),
    ]:
        result = block.get("slo")
        if isinstance(result, dict):
            judge = series_judge(server, windows, t0, start, end, width)
            block["slo"] = _replace(Slo.model_validate(result), [judge(line) for line in lines]).to_json()


def _replace(result: Slo, judged: list[SloLineResult]) -> Slo:
    """Put the judged series lines in place of their unjudged entries; recompute the verdicts."""
    by_name = {j.line.name: SloLine.model_validate(j.to_json()) for j in judged}
    objectives = [by_name.get(o.name, o) for o in result.objectives]
    verdicts = {o.verdict for o in objectives}
    verdict = (
        Verdict.FAIL
        if Verdict.FAIL in verdicts
        else Verdict.PASS
        if verdicts == {Verdict.PASS}
        else Verdict.INCONCLUSIVE
    )
    return result.model_copy(
        update={
            "objectives": objectives,
            "passed": bool(objectives) and all(o.passed for o in objectives),
            "verdict": verdict,
        }
    )


def _stage_verdicts(stages: Sequence[JsonObject]) -> None:
    for stage in stages:
        slo = stage.get("slo")
        if stage.get("verdict") == "invalid" or not isinstance(slo, dict):
            continue
        stage["verdict"] = slo.get("verdict")
