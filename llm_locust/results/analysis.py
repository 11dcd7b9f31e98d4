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

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from llm_locust.results.drift import combine_verdicts, drift_verdict
from llm_locust.results.server_series import gauge_series, read_server_metrics
from llm_locust.results.slo import SloLineResult, SloSpec
from llm_locust.results.slo_series import series_judge
from llm_locust.results.timeline import Timeline
from llm_locust.results.vllm_compat import vllm_keys
from llm_locust.results.windows import auto_window, window_series, windows_csv

__all__ = ["SERVER_FILE", "WINDOWS_FILE", "analyse", "analyse_timeline", "drift_of", "span_of"]

WINDOWS_FILE = "windows.csv"
SERVER_FILE = "server_metrics.jsonl"


def span_of(summary: dict[str, Any], timeline: Timeline) -> tuple[float, float]:
    """(start, end) of the test on the wall clock: the config's start and stop, widened to
    the records (a request that finished in the drain after the stop still counts)."""
    config = summary.get("config") or {}
    starts, ends = timeline.start[~np.isnan(timeline.start)], timeline.end[~np.isnan(timeline.end)]
    firsts = [v for v in (config.get("start_time"), starts.min() if starts.size else None) if v is not None]
    t0 = float(min(firsts)) if firsts else 0.0
    lasts = [v for v in (config.get("stop_time"), ends.max() if ends.size else None) if v is not None]
    return t0, float(max([t0, *lasts]))


def analyse(
    summary: dict[str, Any],
    rows: Sequence[dict[str, Any]],
    measured: Sequence[dict[str, Any]],
    directory: Path | None = None,
    slo: SloSpec | None = None,
    window_s: float | None = None,
    detailed: bool = False,
) -> dict[str, Any]:
    """Add the keys above to ``summary`` (in place, and returned)."""
    return analyse_timeline(summary, Timeline(rows), lambda: measured, directory, slo, window_s, detailed)


def analyse_timeline(
    summary: dict[str, Any],
    timeline: Timeline,
    measured: Callable[[], Iterable[dict[str, Any]]],
    directory: Path | None = None,
    slo: SloSpec | None = None,
    window_s: float | None = None,
    detailed: bool = False,
) -> dict[str, Any]:
    """:func:`analyse` on a built ``timeline`` of every record (the end of a run builds it from
    the columns it read); ``measured()`` gives the measured rows, read only for ``detailed``."""
    t0, t_end = span_of(summary, timeline)
    width = window_s or auto_window(t_end - t0)
    server = gauge_series(read_server_metrics(directory / SERVER_FILE)) if directory is not None else []
    windows = window_series(timeline, t0, t_end, width, server or None)
    summary["window_s"] = width
    summary["windows"] = windows
    measured_from = _measured_start(summary, t0)
    summary["drift"] = drift_of(summary.get("stages") or [], windows, t0, measured_from, width)
    if slo is not None:
        _judge_series(summary, slo, server, windows, t0, t_end, width, measured_from)
    _stage_verdicts(summary.get("stages") or [])
    errors = summary.get("errors")
    summary["errors_by_class"] = dict(errors) if isinstance(errors, dict) else {}
    summary.update(vllm_keys(measured() if detailed else (), summary, detailed, timeline))
    if timeline.binned:
        summary["token_arrivals"] = timeline.token_precision()
    if directory is not None:
        (directory / WINDOWS_FILE).write_text(windows_csv(windows), encoding="utf-8")
    return summary


def drift_of(
    stages: list[dict[str, Any]], windows: list[dict[str, Any]], t0: float, measured_from: float, width: float
) -> dict[str, Any]:
    """The soak verdict: over the measured windows of a run with at most one stage, else per
    stage (each stage also gets its own ``drift``)."""
    if len(stages) <= 1:
        return drift_verdict([w for w in windows if t0 + w["start_s"] >= measured_from - 1e-6], width)
    parts = []
    for stage in stages:
        span = stage.get("window")
        if not span:
            continue
        inside = [
            w
            for w in windows
            if span["start"] - 1e-6 <= t0 + w["start_s"] and t0 + w["end_s"] <= span["end"] + 1e-6
        ]
        stage["drift"] = drift_verdict(inside, width)
        parts.append((str(stage.get("label", stage.get("index"))), stage["drift"]))
    return combine_verdicts(parts)


def _measured_start(summary: dict[str, Any], t0: float) -> float:
    stages = summary.get("stages") or []
    if stages and stages[0].get("window"):
        return float(stages[0]["window"]["start"])
    return t0


def _judge_series(
    summary: dict[str, Any],
    slo: SloSpec,
    server: list[dict[str, Any]],
    windows: list[dict[str, Any]],
    t0: float,
    t_end: float,
    width: float,
    measured_from: float,
) -> None:
    lines = [line for line in slo.lines if line.kind != "request"]
    if not lines:
        return
    if summary.get("slo") is not None:
        judge = series_judge(server, windows, t0, measured_from, t_end, width)
        _replace(summary["slo"], [judge(line) for line in lines])
    for stage in summary.get("stages") or []:
        span = stage.get("window")
        if stage.get("slo") is not None and span:
            judge = series_judge(server, windows, t0, span["start"], span["end"], width)
            _replace(stage["slo"], [judge(line) for line in lines])


def _replace(result: dict[str, Any], judged: list[SloLineResult]) -> None:
    """Put the judged series lines in place of their unjudged entries; recompute the verdicts."""
    by_name = {j.line.name: j.to_json() for j in judged}
    result["objectives"] = [by_name.get(o["name"], o) for o in result["objectives"]]
    result["passed"] = bool(result["objectives"]) and all(o["passed"] for o in result["objectives"])
    verdicts = {o.get("verdict") for o in result["objectives"]}
    result["verdict"] = "fail" if "fail" in verdicts else "pass" if verdicts == {"pass"} else "inconclusive"


def _stage_verdicts(stages: list[dict[str, Any]]) -> None:
    for stage in stages:
        if stage.get("verdict") == "invalid" or stage.get("slo") is None:
            continue
        stage["verdict"] = stage["slo"].get("verdict")
