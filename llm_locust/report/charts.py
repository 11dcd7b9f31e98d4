"""ECharts options for the per-stage and per-request charts of the report (pure).

Each function takes the loaded runs (:class:`~llm_locust.report.data.RunData`, several when
overlaid) and returns an ECharts option (a JSON-able dict) or ``None`` when the runs hold
nothing to draw. The numbers in an option are the run's own: the summary's per-stage
percentiles, intervals computed from the same records (:mod:`llm_locust.results.confidence`),
exact quantiles for the CDFs. The page (:mod:`llm_locust.report.html`) only hands the
options to ECharts; the one function it adds is the error-bar shape of ``custom`` series
(``"renderItem": "errorbar"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from llm_locust.report.data import RunData, quantile_points
from llm_locust.report.traffic import visible_ttft_lines
from llm_locust.results.confidence import quantile_interval
from llm_locust.results.timeline import binned_overlap

__all__ = [
    "COLORS",
    "LATENCY_CHARTS",
    "StagePoint",
    "base_option",
    "cdf_chart",
    "latency_vs_load",
    "lengths_chart",
    "pareto_chart",
    "stage_points",
    "throughput_vs_concurrency",
]

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")
PCT_STYLE = {50: "solid", 95: "dashed", 99: "dotted"}
PCT_COLORS = {50: "#1f77b4", 95: "#ff7f0e", 99: "#d62728"}
VISIBLE_COLOR = "#2ca02c"
VERDICT_COLORS = {
    "fail": "rgba(214,39,40,0.12)",
    "invalid": "rgba(120,120,120,0.18)",
    "inconclusive": "rgba(255,165,0,0.15)",
}
#: summary metric -> (title, record column, SLO metric name)
LATENCY_CHARTS = {
    "ttft": ("Time to first token", "ttft", "ttft"),
    "tpot": ("Time per output token", "tpot", "tpot"),
    "itl": ("Inter-token latency", "itl", "itl"),
    "e2el": ("End-to-end latency", "e2e", "e2e"),
}
MAX_SCATTER = 2000


class StagePoint:
    """One load level of a run: a stage, or the whole run when it had no stages."""

    def __init__(self, run: RunData, entry: dict[str, Any], index: int | None) -> None:
        self.run, self.entry, self.index = run, entry, index
        self.label = str(entry.get("label") or "whole run")
        self.verdict = entry.get("verdict") or (entry.get("slo") or {}).get("verdict")
        self._values: dict[str, np.ndarray] = {}

    def values(self, column: str) -> np.ndarray:
        """The values of ``column`` (``itl``: every gap) the summary's latencies cover
        (``Coverage.LATENCY``), sorted; computed once."""
        if column not in self._values:
            mask = self.run.timeline.timed(self.index)
            if column == "itl":
                values = self.run.timeline.gaps(mask)
            else:
                values = getattr(self.run.timeline, column)[mask]
            self._values[column] = np.sort(values[~np.isnan(values)])
        return self._values[column]

    def in_flight(self) -> float | None:
        law = self.entry.get("littles_law") or {}
        if law.get("mean_in_flight") is not None:
            return float(law["mean_in_flight"])
        span = (self.run.t0, self.run.t_end) if self.index is None else _window(self.entry)
        if span is None or span[1] <= span[0]:
            return None
        t = self.run.timeline
        return float(binned_overlap(t.start, t.end, np.array(span))[0]) / (span[1] - span[0])


def _window(entry: dict[str, Any]) -> tuple[float, float] | None:
    window = entry.get("window") or {}
    return (float(window["start"]), float(window["end"])) if window.get("start") is not None else None


def stage_points(run: RunData) -> list[StagePoint]:
    """The load levels of ``run`` (made once per run, so their values are pulled once)."""
    if "points" not in run.cache:
        stages = run.stages
        if not stages:
            whole = {**run.summary, "label": "whole run", "verdict": _run_verdict(run)}
            run.cache["points"] = [StagePoint(run, whole, None)]
        else:
            run.cache["points"] = [StagePoint(run, s, int(s["index"])) for s in stages]
    return run.cache["points"]


def _run_verdict(run: RunData) -> str | None:
    slo = run.summary.get("slo")
    return None if not slo else slo.get("verdict") or ("pass" if slo.get("passed") else "fail")


def _axis(name: str, kind: str = "value", **extra: Any) -> dict[str, Any]:
    return {"type": kind, "name": name, "nameLocation": "middle", "nameGap": 30, **extra}


def base_option(title: str, x: dict[str, Any], y: dict[str, Any] | list[dict[str, Any]]) -> dict[str, Any]:
    """The frame every report chart shares: title, axis tooltip, legend below, no animation."""
    return {
        "animation": False,
        "title": {"text": title, "left": "center", "textStyle": {"fontSize": 14}},
        "tooltip": {"trigger": "axis"},
        "legend": {"type": "scroll", "bottom": 0},
        "grid": {"left": 70, "right": 40, "top": 40, "bottom": 70},
        "xAxis": x,
        "yAxis": y,
        "series": [],
    }


def _points_base(title: str, x: str, y: str) -> dict[str, Any]:
    """Two value axes, a tooltip per point (each point is a stage)."""
    option = base_option(title, _axis(x), _axis(y))
    option["tooltip"] = {"trigger": "item"}
    return option


def _color(runs: Sequence[RunData], i: int, q: int) -> str:
    return PCT_COLORS[q] if len(runs) == 1 else COLORS[i % len(COLORS)]


def _name(runs: Sequence[RunData], run: RunData, what: str) -> str:
    return what if len(runs) == 1 else f"{run.name} {what}"


def categories(runs: Sequence[RunData]) -> list[str]:
    """The stage labels of every run, in the order they first appear."""
    out: list[str] = []
    for run in runs:
        out += [p.label for p in stage_points(run) if p.label not in out]
    return out


def latency_vs_load(runs: Sequence[RunData], metric: str) -> dict[str, Any] | None:
    """P50/P95/P99 of ``metric`` per stage, 95 % intervals as error bars, SLO lines, verdicts."""
    title, column, slo_metric = LATENCY_CHARTS[metric]
    labels = categories(runs)
    option = base_option(
        f"{title}: P50 / P95 / P99 per stage", _axis("load (stage)", "category", data=labels), _axis("ms")
    )
    for i, run in enumerate(runs):
        points = {p.label: p for p in stage_points(run)}
        for q in (50, 95, 99):
            color = _color(runs, i, q)
            values = [_ms(points[c].entry.get(f"p{q}_{metric}_ms")) if c in points else None for c in labels]
            line = {
                "name": _name(runs, run, f"P{q}"),
                "type": "line",
                "data": values,
                "lineStyle": {"type": PCT_STYLE[q], "color": color},
                "itemStyle": {"color": color},
                "connectNulls": False,
            }
            if q == 95:
                _mark_slo(line, run, slo_metric)
            option["series"].append(line)
            option["series"].append(
                _error_bars(run, points, labels, column, q, color, _name(runs, run, f"P{q}"))
            )
        if metric == "ttft":
            color = VISIBLE_COLOR if len(runs) == 1 else COLORS[i % len(COLORS)]
            option["series"] += visible_ttft_lines(points, labels, _name(runs, run, "visible"), color)
    for run in runs:
        option["series"] += _verdict_bands(runs, run, labels, _top(option["series"]))
    # the intervals and bands go with their lines: one legend entry per line
    option["legend"]["data"] = [s["name"] for s in option["series"] if s["type"] == "line"]
    return option if any(any(v is not None for v in s["data"]) for s in option["series"]) else None


def _ms(value: Any) -> float | None:
    return None if value is None else round(float(value), 3)


def _error_bars(
    run: RunData, points: dict[str, StagePoint], labels: list[str], column: str, q: int, color: str, name: str
) -> dict[str, Any]:
    """95 % order-statistic intervals: ``[x, low, high, flags]`` in ms; flags 1 = no lower
    bound, 2 = no upper bound (too few requests for this percentile)."""
    data = []
    for x, label in enumerate(labels):
        if label not in points:
            continue
        lo, hi = quantile_interval(points[label].values(column), q / 100)
        if lo is None and hi is None:
            continue
        flags = (1 if lo is None else 0) | (2 if hi is None else 0)
        low = lo if lo is not None else hi
        high = hi if hi is not None else lo
        data.append([x, _ms(low * 1000), _ms(high * 1000), flags])  # type: ignore[operator]
    return {
        "name": f"{name} 95 % CI",
        "type": "custom",
        "renderItem": "errorbar",
        "data": data,
        "encode": {"x": 0, "y": [1, 2]},
        "itemStyle": {"color": color},
        "z": 3,
    }


def _mark_slo(series: dict[str, Any], run: RunData, slo_metric: str) -> None:
    lines = []
    for o in (run.summary.get("slo") or {}).get("objectives", []):
        name = o.get("name", "")
        if o.get("kind", "request") == "request" and name.split("_")[0] == slo_metric and o.get("threshold"):
            lines.append({"yAxis": round(o["threshold"] * 1000, 3), "name": o["objective"]})
    if lines:
        series["markLine"] = {
            "symbol": "none",
            "lineStyle": {"color": "#d62728", "type": "dashed", "width": 1.5},
            "label": {"formatter": "SLO {b}", "position": "insideEndTop"},
            "data": lines,
        }


def _top(series: list[dict[str, Any]]) -> float:
    """The highest value drawn (line points and interval ends), for full-height bands."""
    values = [v for s in series if s["type"] == "line" for v in s["data"] if v is not None]
    values += [item[2] for s in series if s["type"] == "custom" for item in s["data"]]
    for s in series:
        values += [line["yAxis"] for line in (s.get("markLine") or {}).get("data", [])]
    return max(values, default=1.0) * 1.05


def _verdict_bands(
    runs: Sequence[RunData], run: RunData, labels: list[str], top: float
) -> list[dict[str, Any]]:
    """A shaded full-height band behind each stage that failed, was inconclusive or invalid."""
    points = {p.label: p for p in stage_points(run)}
    out = []
    for verdict, color in VERDICT_COLORS.items():
        data = [top if label in points and points[label].verdict == verdict else None for label in labels]
        if any(v is not None for v in data):
            out.append(
                {
                    "name": _name(runs, run, f"{verdict} stage"),
                    "type": "bar",
                    "data": data,
                    "barWidth": "90%",
                    "barGap": "-100%",
                    "silent": True,
                    "z": 0,
                    "itemStyle": {"color": color},
                    "label": {"show": True, "position": "insideTop", "formatter": verdict, "color": "#555"},
                    "tooltip": {"show": False},
                }
            )
    return out


def throughput_vs_concurrency(runs: Sequence[RunData]) -> dict[str, Any] | None:
    """Output tok/s and goodput (tok/s meeting the SLO) against the mean requests in flight."""
    option = _points_base(
        "Output tokens/s and goodput against concurrency",
        "mean requests in flight (measured)",
        "output tokens/s",
    )
    for i, run in enumerate(runs):
        color = COLORS[i % len(COLORS)]
        points = [p for p in stage_points(run) if p.in_flight() is not None]
        throughput = [
            [round(p.in_flight() or 0, 3), round(p.entry.get("output_throughput") or 0, 3), p.label]
            for p in points
        ]
        option["series"].append(
            {
                "name": _name(runs, run, "output tok/s"),
                "type": "line",
                "data": throughput,
                "itemStyle": {"color": color},
            }
        )
        good = [
            [round(p.in_flight() or 0, 3), round(p.entry["slo"]["goodput_output_tokens_per_s"], 3), p.label]
            for p in points
            if (p.entry.get("slo") or {}).get("goodput_output_tokens_per_s") is not None
        ]
        if good:
            option["series"].append(
                {
                    "name": _name(runs, run, "goodput tok/s"),
                    "type": "line",
                    "data": good,
                    "lineStyle": {"type": "dashed", "color": color},
                    "itemStyle": {"color": color},
                }
            )
    return option if any(s["data"] for s in option["series"]) else None


def pareto_chart(runs: Sequence[RunData]) -> dict[str, Any] | None:
    """Output tok/s per GPU against tok/s per user (1 / median TPOT), one curve per run."""
    option = _points_base(
        "Throughput per GPU against speed per user",
        "output tokens/s per user (1 / median TPOT)",
        "output tokens/s per GPU",
    )
    for i, run in enumerate(runs):
        if not run.gpus:
            continue
        data = []
        for p in stage_points(run):
            tpot = p.entry.get("median_tpot_ms")
            if tpot:
                data.append(
                    [
                        round(1000.0 / tpot, 3),
                        round((p.entry.get("output_throughput") or 0) / run.gpus, 3),
                        p.label,
                    ]
                )
        if data:
            name = f"{run.name} ({run.gpus:g} GPU)" if len(runs) > 1 else f"{run.gpus:g} GPU"
            option["series"].append(
                {"name": name, "type": "line", "data": data, "itemStyle": {"color": COLORS[i % len(COLORS)]}}
            )
    return option if option["series"] else None


def cdf_chart(runs: Sequence[RunData], metric: str) -> dict[str, Any] | None:
    """Empirical CDF of a latency over the requests the summary's latencies cover."""
    title, column, _ = LATENCY_CHARTS[metric]
    option = base_option(f"{title}: CDF", _axis("ms"), _axis("fraction of requests", min=0, max=1))
    for i, run in enumerate(runs):
        whole = run.cache.setdefault("whole", StagePoint(run, run.summary, None))
        values = whole.values(column) * 1000.0
        data = [[round(v, 3), round(f, 4)] for v, f in quantile_points(values)]
        if data:
            option["series"].append(
                {
                    "name": run.name,
                    "type": "line",
                    "showSymbol": False,
                    "data": data,
                    "itemStyle": {"color": COLORS[i % len(COLORS)]},
                }
            )
    return option if option["series"] else None


def lengths_chart(runs: Sequence[RunData], which: str) -> dict[str, Any] | None:
    """Requested against actual token counts per request (``input`` or ``output``)."""
    option = base_option(
        f"{which.capitalize()} tokens: requested against actual",
        _axis(f"requested {which} tokens"),
        _axis(f"actual {which} tokens (server's count when sent)"),
    )
    option["tooltip"] = {"trigger": "item"}
    top = 0.0
    for i, run in enumerate(runs):
        t = run.timeline
        want, got = (
            (t.target_input, t.prompt_tokens) if which == "input" else (t.target_output, t.completion_tokens)
        )
        keep = np.nonzero(t.ok & ~np.isnan(want) & ~np.isnan(got))[0]
        if keep.size > MAX_SCATTER:
            keep = keep[np.linspace(0, keep.size - 1, MAX_SCATTER).astype(int)]
        data = [[float(want[k]), float(got[k])] for k in keep]
        if data:
            top = max(top, *(max(a, b) for a, b in data))
            option["series"].append(
                {
                    "name": run.name,
                    "type": "scatter",
                    "symbolSize": 4,
                    "data": data,
                    "itemStyle": {"color": COLORS[i % len(COLORS)]},
                }
            )
    if not option["series"]:
        return None
    option["series"].append(
        {
            "name": "actual = requested",
            "type": "line",
            "showSymbol": False,
            "data": [[0, 0], [top, top]],
            "lineStyle": {"type": "dashed", "color": "#888"},
        }
    )
    return option
