"""Judging the SLO lines that come from series: the server's metrics and the soak drift.

:func:`series_judge` returns the ``series`` argument of :func:`llm_locust.results.slo.evaluate`
for one span (the run, or a stage's measured window):

- server terms (``kv_cache_usage_max``, ``waiting_p95``, ``preemptions`` ...) from the scrapes
  of ``server_metrics.jsonl`` inside the span. The scrapes are what the server reported, so
  the verdict is exact (pass or fail); with no scrape in the span the line is not shown to
  hold (fails, inconclusive, and says that it needs ``--server-metrics``).
- drift terms (``ttft_p95_drift`` ...) from the full time windows inside the span: the
  slope per 10 minutes and its 95 % interval (:mod:`llm_locust.results.drift`); pass when
  the whole interval is under the threshold, fail when it is all above, else inconclusive.
  ``measured`` is the slope, in the threshold's unit (seconds, a fraction or a count per
  10 minutes).

Pure module.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from llm_locust.config.slo import SloKind
from llm_locust.load.search import Verdict
from llm_locust.results.confidence import verdict
from llm_locust.results.drift import MIN_SPAN_S, MIN_WINDOWS, fit_trend
from llm_locust.results.series_model import WindowRow
from llm_locust.results.server_series import Point, counter_increase, series_values, source_names
from llm_locust.results.slo import SeriesJudge, SloLine, SloLineResult, statistic

__all__ = ["drift_key", "series_judge"]


def drift_key(metric: str) -> tuple[str, float]:
    """(window key, factor from the window's unit to the threshold's) of a drift metric."""
    if metric == "error_rate":
        return "error_rate", 1.0
    if metric in ("kv_cache_usage", "waiting"):
        return f"{metric}_mean", 1.0
    name, q = metric.split("_")  # ttft_p95 -> p95_ttft_ms (ms -> s)
    return f"{q}_{'e2el' if name == 'e2e' else name}_ms", 0.001


def series_judge(
    server: Sequence[Point] | None,
    windows: Sequence[WindowRow] | None,
    t0: float,
    start: float,
    end: float,
    window_s: float,
) -> SeriesJudge:
    """Judge series lines over ``[start, end]`` (wall clock); ``windows`` start at ``t0``."""

    def judge(line: SloLine) -> SloLineResult:
        if line.kind is SloKind.SERVER:
            return _server_line(line, server or (), start, end)
        inside = [
            w
            for w in windows or ()
            if t0 + w.start_s >= start - 1e-6
            and t0 + w.end_s <= end + 1e-6
            and w.end_s - w.start_s >= window_s * 0.999
        ]
        return _drift_line(line, inside)

    return judge


def _server_line(line: SloLine, server: Sequence[Point], start: float, end: float) -> SloLineResult:
    scrapes = [p for p in server if start <= p["t"] <= end]
    if line.metric == "preemptions":
        measured = counter_increase(server, "preemptions", start, end)
    else:
        values = series_values(server, line.metric, start, end)
        measured = statistic(values, line.stat or "mean") if values else None
    if measured is None:
        if not server:
            why = "no server metrics in the results (needs --server-metrics)"
        elif not scrapes:
            why = "no scrape of the server's metrics in this span"
        else:
            names = ", ".join(source_names(line.metric))
            why = f"the server's metrics have no {line.metric} series ({names})"
        return SloLineResult(line, None, False, len(scrapes), note=why)
    passed = line.holds(measured)
    return SloLineResult(
        line, measured, passed, len(scrapes), (measured, measured), Verdict.PASS if passed else Verdict.FAIL
    )


def _drift_line(line: SloLine, windows: Sequence[WindowRow]) -> SloLineResult:
    key, factor = drift_key(line.metric)
    mid = np.array([w.mid_s for w in windows], dtype=float)
    y = np.array([np.nan if (v := w.number(key)) is None else v * factor for w in windows], dtype=float)
    trend = fit_trend(mid, y)
    if trend is None:
        why = f"needs {MIN_WINDOWS} full windows with a value over at least {MIN_SPAN_S:g} s"
        return SloLineResult(line, None, False, len(windows), note=why)
    interval = (trend.lower, trend.upper)
    return SloLineResult(
        line,
        trend.slope,
        line.holds(trend.slope),
        trend.n,
        interval,
        verdict(line.op, line.threshold, interval),
    )
