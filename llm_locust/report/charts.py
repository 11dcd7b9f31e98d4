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

from collections.abc import Mapping, Sequence

import numpy as np

from llm_locust.config.jsontypes import JsonValue
from llm_locust.config.slo import SloKind
from llm_locust.report.data import RunData, quantile_points
from llm_locust.report.echarts import Axis, Datum, Option, Series, cells
from llm_locust.report.points import StagePoint
from llm_locust.report.traffic import visible_ttft_lines
from llm_locust.results.confidence import quantile_interval

__all__ = [
    "COLORS",
    "LATENCY_CHARTS",
    "StagePoint",
    "axis",
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


def stage_points(run: RunData) -> list[StagePoint]:
    """The load levels of ``run`` (made once per run, so their values are pulled once)."""
    return run.points


def axis(name: str, kind: str = "value", **extra: JsonValue) -> Axis:
    return {"type": kind, "name": name, "nameLocation": "middle", "nameGap": 30, **extra}


def base_option(title: str, x: Axis, y: Axis | list[Axis]) -> Option:
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


def _points_base(title: str, x: str, y: str) -> Option:
    """Two value axes, a tooltip per point (each point is a stage)."""
    option = base_option(title, axis(x), axis(y))
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


def latency_vs_load(runs: Sequence[RunData], metric: str) -> Option | None:
    """P50/P95/P99 of ``metric`` per stage, 95 % intervals as error bars, SLO lines, verdicts."""
    title, column, slo_metric = LATENCY_CHARTS[metric]
    labels = categories(runs)
    option = base_option(
        f"{title}: P50 / P95 / P99 per stage",
        axis("load (stage)", "category", data=list[JsonValue](labels)),
        axis("ms"),
    )
    for i, run in enumerate(runs):
        points = {p.label: p for p in stage_points(run)}
        for q in (50, 95, 99):
            color = _color(runs, i, q)
            values = [_ms(points[c].row.ms(f"p{q}", metric)) if c in points else None for c in labels]
            line: Series = {
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


def _ms(value: float | None) -> float | None:
    return None if value is None else round(float(value), 3)


def _error_bars(
    run: RunData, points: dict[str, StagePoint], labels: list[str], column: str, q: int, color: str, name: str
) -> Series:
    """95 % order-statistic intervals: ``[x, low, high, flags]`` in ms; flags 1 = no lower
    bound, 2 = no upper bound (too few requests for this percentile)."""
    data: list[Datum] = []
    for x, label in enumerate(labels):
        if label not in points:
            continue
        lo, hi = quantile_interval(points[label].values(column), q / 100)
        low, high = (lo if lo is not None else hi), (hi if hi is not None else lo)
        if low is None or high is None:
            continue
        flags = (1 if lo is None else 0) | (2 if hi is None else 0)
        data.append([x, _ms(low * 1000), _ms(high * 1000), flags])
    return errorbars(f"{name} 95 % CI", data, color)


def errorbars(name: str, data: Sequence[Datum], color: str) -> Series:
    """Error bars: the ``custom`` series the page draws, points ``[x, low, high, flags]``."""
    return {
        "name": name,
        "type": "custom",
        "renderItem": "errorbar",
        "data": data,
        "encode": {"x": 0, "y": [1, 2]},
        "itemStyle": {"color": color},
        "z": 3,
    }


def _mark_slo(series: Series, run: RunData, slo_metric: str) -> None:
    lines: list[Mapping[str, JsonValue]] = []
    for o in run.model.slo.objectives if run.model.slo is not None else ():
        if o.kind == SloKind.REQUEST and o.name.split("_")[0] == slo_metric and o.threshold:
            lines.append({"yAxis": round(o.threshold * 1000, 3), "name": o.objective})
    if lines:
        series["markLine"] = {
            "symbol": "none",
            "lineStyle": {"color": "#d62728", "type": "dashed", "width": 1.5},
            "label": {"formatter": "SLO {b}", "position": "insideEndTop"},
            "data": lines,
        }


def _top(series: list[Series]) -> float:
    """The highest value drawn (line points and interval ends), for full-height bands."""
    values: list[object] = []
    for s in series:
        if s["type"] == "line":
            values += s["data"]
        elif s["type"] == "custom":  # [x, low, high, flags]: the high end
            values += [cells(d)[2] for d in s["data"] if len(cells(d)) > 2]
        values += [line.get("yAxis") for line in s.get("markLine", {}).get("data", ())]
    return max((float(v) for v in values if isinstance(v, float | int)), default=1.0) * 1.05


def _verdict_bands(runs: Sequence[RunData], run: RunData, labels: list[str], top: float) -> list[Series]:
    """A shaded full-height band behind each stage that failed, was inconclusive or invalid."""
    points = {p.label: p for p in stage_points(run)}
    out: list[Series] = []
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


def throughput_vs_concurrency(runs: Sequence[RunData]) -> Option | None:
    """Output tok/s and goodput (tok/s meeting the SLO) against the mean requests in flight."""
    option = _points_base(
        "Output tokens/s and goodput against concurrency",
        "mean requests in flight (measured)",
        "output tokens/s",
    )
    for i, run in enumerate(runs):
        color = COLORS[i % len(COLORS)]
        points = [p for p in stage_points(run) if p.in_flight() is not None]
        throughput: list[Datum] = [
            [round(p.in_flight() or 0, 3), round(p.row.output_throughput, 3), p.label] for p in points
        ]
        option["series"].append(
            {
                "name": _name(runs, run, "output tok/s"),
                "type": "line",
                "data": throughput,
                "itemStyle": {"color": color},
            }
        )
        good: list[Datum] = [
            [round(p.in_flight() or 0, 3), round(goodput, 3), p.label]
            for p in points
            if p.row.slo is not None and (goodput := p.row.slo.goodput_output_tokens_per_s) is not None
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


def pareto_chart(runs: Sequence[RunData]) -> Option | None:
    """Output tok/s per GPU against tok/s per user (1 / median TPOT), one curve per run."""
    option = _points_base(
        "Throughput per GPU against speed per user",
        "output tokens/s per user (1 / median TPOT)",
        "output tokens/s per GPU",
    )
    for i, run in enumerate(runs):
        if not run.gpus:
            continue
        data: list[Datum] = []
        for p in stage_points(run):
            tpot = p.row.ms("median", "tpot")
            if tpot:
                data.append([round(1000.0 / tpot, 3), round(p.row.output_throughput / run.gpus, 3), p.label])
        if data:
            name = f"{run.name} ({run.gpus:g} GPU)" if len(runs) > 1 else f"{run.gpus:g} GPU"
            option["series"].append(
                {"name": name, "type": "line", "data": data, "itemStyle": {"color": COLORS[i % len(COLORS)]}}
            )
    return option if option["series"] else None


def cdf_chart(runs: Sequence[RunData], metric: str) -> Option | None:
    """Empirical CDF of a latency over the requests the summary's latencies cover."""
    title, column, _ = LATENCY_CHARTS[metric]
    option = base_option(f"{title}: CDF", axis("ms"), axis("fraction of requests", min=0, max=1))
    for i, run in enumerate(runs):
        values = run.whole.values(column) * 1000.0
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


def lengths_chart(runs: Sequence[RunData], which: str) -> Option | None:
    """Requested against actual token counts per request (``input`` or ``output``)."""
    option = base_option(
        f"{which.capitalize()} tokens: requested against actual",
        axis(f"requested {which} tokens"),
        axis(f"actual {which} tokens (server's count when sent)"),
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
        pairs = [(float(want[k]), float(got[k])) for k in keep]
        if pairs:
            top = max(top, *(max(a, b) for a, b in pairs))
            option["series"].append(
                {
                    "name": run.name,
                    "type": "scatter",
                    "symbolSize": 4,
                    "data": [[a, b] for a, b in pairs],
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
