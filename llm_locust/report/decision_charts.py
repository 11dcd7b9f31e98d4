"""ECharts options of the decision page (``capacity.html``), from a :class:`Decision`.

Each function returns an ECharts option (a JSON-able dict) or ``None`` when there is nothing to
draw. Points are a plan's search steps sorted by level (the search visits them out of order);
every number is the model's, in deployment time. Error bars are the ``custom`` series the page
draws (``"renderItem": "errorbar"``: ``[x, low, high, flags]``, flags 2 = no upper bound).

Pure module: no Locust, no network.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from llm_locust.config.demand import DemandKind
from llm_locust.config.jsontypes import JsonValue
from llm_locust.report.charts import COLORS, axis, base_option, errorbars
from llm_locust.report.decision import Decision, PlanView, StepView, Verdict
from llm_locust.report.echarts import Datum, Option, Series, Style
from llm_locust.results.capacity_model import Scaling

__all__ = [
    "UNIT_AXIS",
    "VERDICT_COLOR",
    "capacity_chart",
    "cost_chart",
    "frontier_chart",
    "latency_chart",
    "scaling_chart",
]

VERDICT_COLOR = {
    Verdict.PASS: "#2e7d32",
    Verdict.FAIL: "#c62828",
    Verdict.INCONCLUSIVE: "#ef6c00",
    Verdict.INVALID: "#757575",
}
VERDICT_SYMBOL = {
    Verdict.PASS: "circle",
    Verdict.FAIL: "triangle",
    Verdict.INCONCLUSIVE: "diamond",
    Verdict.INVALID: "emptyCircle",
}
#: the demand's unit -> the capacity axis' name
UNIT_AXIS = {
    DemandKind.CONCURRENCY: "mean requests in flight",
    DemandKind.RATE: "completed requests/s",
    DemandKind.USERS: "users",
}
#: a capacity bar that does not meet the demand, and its legend entry
SHORT, SHORT_COLOR = "capacity short of the demand", "#90a4ae"
_DEMAND_LINE: Style = {"color": "#1565c0", "type": "dotted", "width": 2}


def _r(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(float(value), digits)


def _point(
    step: StepView, x: float | None, y: float | None, line: Verdict | None = None
) -> dict[str, JsonValue]:
    """One step as a data item: its label and verdict in the tooltip, the colour and shape of the
    verdict of ``line`` (an SLO line's own, at this step) or else of the step."""
    shown = step.step.verdict if line is None or step.step.verdict is Verdict.INVALID else line
    what = f"step {step.step.verdict.value}" + (f", this line {line.value}" if line is not None else "")
    return {
        "name": f"{step.step.label} ({what})",
        "value": [_r(x), _r(y)],
        "symbol": VERDICT_SYMBOL[shown],
        "symbolSize": 9,
        "itemStyle": {"color": VERDICT_COLOR[shown]},
    }


def capacity_chart(d: Decision) -> Option | None:
    """Per plan: the bracket from the highest pass (the capacity) to the lowest step not shown to
    pass, and the demand as a line."""
    if not d.plans:
        return None
    names = [p.result.name for p in d.plans]
    unit = UNIT_AXIS[d.demand_kind]
    # the axis holds the demand: ECharts scales to the series only, and a demand line above every
    # bar was not drawn (the new-user trial: capacities 22-24 against a demand of 50)
    top = max([d.demand or 0.0, *(v for p in d.plans for v in (p.result.capacity, p.upper) if v is not None)])
    option = base_option(
        f"Capacity against the demand ({d.demand_text})",
        axis("plan", "category", data=list[JsonValue](names)),
        axis(unit, nameGap=45, min=0, max=_nice(top * 1.1)),
    )
    option["tooltip"] = {"trigger": "item"}
    bars: list[Datum] = [
        {
            "name": p.result.name,
            "value": _r(p.result.capacity),
            "itemStyle": {"color": VERDICT_COLOR[Verdict.PASS] if p.result.meets else SHORT_COLOR},
            "label": {"formatter": "-" if p.result.capacity is None else f"{p.result.capacity:.1f}"},
        }
        for p in d.plans
    ]
    option["series"].append(
        {
            "name": "capacity (highest pass)",
            "type": "bar",
            "barWidth": "40%",
            "itemStyle": {"color": VERDICT_COLOR[Verdict.PASS]},  # the legend's; grey: SHORT
            "data": bars,
            "label": {"show": True, "position": "insideTop", "color": "#fff"},
            "markLine": {
                "symbol": "none",
                "lineStyle": _DEMAND_LINE,
                "label": {"formatter": f"demand {d.demand_text}", "position": "insideStartTop"},
                "data": [{"yAxis": _r(d.demand), "name": "demand"}],
            },
        }
    )
    bracket: list[Datum] = []
    for x, p in enumerate(d.plans):
        if p.result.capacity is not None and p.upper is not None:
            bracket.append([x, _r(p.result.capacity), _r(p.upper), 0])
        elif p.result.capacity is not None:
            bracket.append([x, _r(p.result.capacity), _r(p.result.capacity), 2])  # nothing above it failed
    option["series"].append(errorbars("bracket", bracket, "#37474f"))
    upper: list[Datum] = [
        {
            "name": f"{p.result.name}: {p.upper_verdict.value if p.upper_verdict else ''}",
            "value": [x, _r(p.upper)],
            "itemStyle": {"color": VERDICT_COLOR[p.upper_verdict or Verdict.FAIL]},
        }
        for x, p in enumerate(d.plans)
        if p.upper is not None
    ]
    option["series"].append(
        {
            "name": "lowest not passed",
            "type": "scatter",
            "symbol": "triangle",
            "symbolSize": 11,
            "itemStyle": {"color": VERDICT_COLOR[Verdict.FAIL]},
            "data": upper,
        }
    )
    # the grey bars' legend entry (a series with no data: the bars stay one series, one per plan)
    option["series"].append({"name": SHORT, "type": "bar", "data": [], "itemStyle": {"color": SHORT_COLOR}})
    return option


def _nice(value: float) -> float:
    """``value`` rounded up to 1, 2, 2.5 or 5 times a power of ten (an axis' top)."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(m * power for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * power >= value - 1e-9)


def _x_top(d: Decision) -> float:
    """The latency charts' shared x range: the highest load measured or the demand, rounded up."""
    xs = [s.step.mean_in_flight for p in d.plans for s in p.steps if s.step.mean_in_flight is not None]
    top = max([*xs, d.demand if d.demand_kind is DemandKind.CONCURRENCY else 0.0], default=1.0) * 1.05
    step = 10.0 if top > 20 else 1.0
    return math.ceil(top / step) * step


def latency_chart(d: Decision, plan: PlanView, metric: str) -> Option | None:
    """A plan's TTFT or E2E P95 (``metric``: ttft, e2e) against the measured concurrency, steps
    sorted by level, their 95 % intervals, the SLO threshold, the capacity (and the demand when
    it is a concurrency) as vertical lines; invalid steps apart, not joined."""
    title = {"ttft": "TTFT", "e2e": "E2E"}[metric]
    latencies = ((s, s.ttft if metric == "ttft" else s.e2e) for s in plan.steps)
    rows = [(s, lat) for s, lat in latencies if lat is not None and s.step.mean_in_flight is not None]
    if not rows:
        return None
    option = base_option(
        f"{plan.result.name}: {title} P95 against load",
        axis("mean requests in flight (measured)", min=0, max=_r(_x_top(d), 1)),
        axis("seconds (deployment time)", nameGap=45),
    )
    option["tooltip"] = {"trigger": "item"}
    joined = [(s, lat) for s, lat in rows if s.step.verdict is not Verdict.INVALID]
    line: Series = {
        "name": f"{title} P95",
        "type": "line",
        "data": [_point(s, s.step.mean_in_flight, lat.p95_s, lat.verdict) for s, lat in joined],
        "lineStyle": {"color": "#1f77b4"},
        "itemStyle": {"color": "#1f77b4"},
    }
    marks: list[Mapping[str, JsonValue]] = []
    threshold = next((lat.threshold_s for _, lat in rows if lat.threshold_s is not None), None)
    if threshold is not None:
        marks.append(
            {
                "yAxis": _r(threshold),
                "name": f"SLO {title} P95 <= {threshold:g} s",
                "lineStyle": {"color": "#c62828", "type": "dashed", "width": 1.5},
            }
        )
    cap = next((s for s in plan.steps if s.step.index == plan.capacity_index), None)
    if cap is not None and cap.step.mean_in_flight is not None:
        marks.append(
            {
                "xAxis": _r(cap.step.mean_in_flight),
                "name": f"capacity ({cap.step.label})",
                "lineStyle": {"color": "#2e7d32", "type": "solid", "width": 2},
            }
        )
    if d.demand_kind is DemandKind.CONCURRENCY:
        marks.append({"xAxis": _r(d.demand), "name": f"demand {d.demand_text}", "lineStyle": _DEMAND_LINE})
    if marks:
        line["markLine"] = {
            "symbol": "none",
            "label": {"formatter": "{b}", "position": "insideEndTop"},
            "data": marks,
        }
    option["series"].append(line)
    bars: list[Datum] = [
        [
            _r(s.step.mean_in_flight),
            _r(lat.low_s),
            _r(lat.high_s if lat.high_s is not None else lat.low_s),
            0 if lat.high_s is not None else 2,
        ]
        for s, lat in rows
        if lat.low_s is not None
    ]
    if bars:
        option["series"].append(errorbars(f"{title} P95 95 % interval", bars, "#1f77b4"))
    invalid = [(s, lat) for s, lat in rows if s.step.verdict is Verdict.INVALID]
    if invalid:
        option["series"].append(
            {
                "name": "invalid step (not at its level)",
                "type": "scatter",
                "data": [_point(s, s.step.mean_in_flight, lat.p95_s) for s, lat in invalid],
            }
        )
    option["legend"]["data"] = [s["name"] for s in option["series"] if s["type"] != "custom"]
    return option


def _plan_lines(
    d: Decision,
    title: str,
    x_name: str,
    y_name: str,
    xy: Callable[[PlanView, StepView], tuple[float | None, float | None]],
) -> Option | None:
    """One line per plan through its valid steps sorted by level: ``xy(plan, step) -> (x, y)``."""
    option = base_option(title, axis(x_name), axis(y_name, nameGap=50))
    option["tooltip"] = {"trigger": "item"}
    option["grid"]["left"] = 80
    for i, plan in enumerate(d.plans):
        points: list[Datum] = []
        for s in plan.steps:
            x, y = xy(plan, s)
            if s.step.verdict is not Verdict.INVALID and x is not None and y is not None:
                points.append(_point(s, x, y) | {"itemStyle": {"color": COLORS[i % len(COLORS)]}})
        if points:
            color = COLORS[i % len(COLORS)]
            option["series"].append(
                {
                    "name": plan.result.name,
                    "type": "line",
                    "data": points,
                    "lineStyle": {"color": color},
                    "itemStyle": {"color": color},
                }
            )
    return option if option["series"] else None


def frontier_chart(d: Decision) -> Option | None:
    """Output tokens/s per GPU against output tokens/s per user (1 / median TPOT), per plan."""
    return _plan_lines(
        d,
        "Throughput per GPU against throughput per user",
        "output tokens/s per user (1 / median TPOT)",
        "output tokens/s per GPU",
        lambda _p, s: (s.tokens_per_user, s.output_per_gpu),
    )


def cost_chart(d: Decision) -> Option | None:
    """$ per 1M output tokens (the plan's $/hour over its output tokens/hour) against the load."""
    unit = UNIT_AXIS[d.demand_kind]
    option = _plan_lines(
        d,
        "$ per 1M output tokens against load",
        f"load: {unit} (measured)",
        "$ per 1M output tokens",
        lambda _p, s: (s.load, s.cost_per_million),
    )
    if option is not None:
        option["series"][0]["markLine"] = {
            "symbol": "none",
            "lineStyle": _DEMAND_LINE,
            "label": {"formatter": f"demand {d.demand_text}", "position": "insideEndTop"},
            "data": [{"xAxis": _r(d.demand), "name": "demand"}],
        }
    return option


def scaling_chart(d: Decision) -> Option | None:
    """Scaling efficiency of each pair of plans differing in replicas or GPUs per replica (100 %: linear)."""
    if not d.scaling:
        return None
    what = {"replicas": "replicas", "gpus_per_replica": "GPUs per replica"}
    names = [
        f"{s.plans[1]} vs {s.plans[0]} ({s.resource_ratio:g}x {what.get(s.differs_in, s.differs_in)})"
        for s in d.scaling
    ]
    option = base_option(
        "Scaling efficiency",
        axis("pair of plans", "category", data=list[JsonValue](names)),
        axis("capacity ratio / resource ratio (%)", nameGap=45, min=0),
    )
    option["tooltip"] = {"trigger": "item"}
    option["series"].append(
        {
            "name": "scaling efficiency",
            "type": "bar",
            "barWidth": "35%",
            "data": [_scaling_bar(n, s) for n, s in zip(names, d.scaling, strict=True)],
            "label": {"show": True, "position": "top", "formatter": "{c} %"},
            "itemStyle": {"color": "#5c6bc0"},
            "markLine": {
                "symbol": "none",
                "lineStyle": {"color": "#555", "type": "dashed"},
                "label": {"formatter": "linear (100 %)", "position": "insideEndTop"},
                "data": [{"yAxis": 100, "name": "linear"}],
            },
        }
    )
    ranges: list[Datum] = [
        [x, _r(s.efficiency_range[0] * 100, 1), _r(s.efficiency_range[1] * 100, 1), 0]
        for x, s in enumerate(d.scaling)
        if s.efficiency_range is not None
    ]
    if ranges:  # a capacity only bracketed: the efficiency from both ends of the brackets
        option["series"].append(errorbars("efficiency range (a capacity only bracketed)", ranges, "#37474f"))
    return option


def _scaling_bar(name: str, s: Scaling) -> Datum:
    """A pair's bar: its efficiency, or the low end of its range labelled with the whole range."""
    if s.efficiency_range is None:
        return {"name": name, "value": _r(s.efficiency * 100, 1)}
    low, high = (round(e * 100, 1) for e in s.efficiency_range)
    return {"name": name, "value": low, "label": {"formatter": f"{low:g} to {high:g} %"}}
