"""ECharts options for the over-time charts of the report: one point per time window (pure).

The x axis is seconds since the start of the test; every chart marks the stage boundaries
(a vertical line where each stage began, labelled with the stage). The values are the
windows of :mod:`llm_locust.results.windows`, overlaid per run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llm_locust.report.charts import COLORS
from llm_locust.report.data import RunData

__all__ = [
    "errors_over_time",
    "in_flight_over_time",
    "latency_over_time",
    "server_over_time",
    "tokens_over_time",
]


def _option(title: str, y: Any, runs: Sequence[RunData]) -> dict[str, Any]:
    return {
        "animation": False,
        "title": {"text": title, "left": "center", "textStyle": {"fontSize": 14}},
        "tooltip": {"trigger": "axis"},
        "legend": {"type": "scroll", "bottom": 0},
        "grid": {"left": 70, "right": 70, "top": 40, "bottom": 80},
        "dataZoom": [{"type": "inside"}],
        "xAxis": {
            "type": "value",
            "name": f"seconds since the start ({runs[0].window_s:g} s windows)",
            "nameLocation": "middle",
            "nameGap": 30,
            "min": 0,
        },
        "yAxis": y,
        "series": [],
    }


def _y(name: str, **extra: Any) -> dict[str, Any]:
    return {"type": "value", "name": name, "nameLocation": "middle", "nameGap": 50, **extra}


def _mid(w: dict[str, Any]) -> float:
    return round((w["start_s"] + w["end_s"]) / 2, 3)


def _points(run: RunData, key: str, scale: float = 1.0) -> list[list[float | None]]:
    return [[_mid(w), None if w.get(key) is None else round(w[key] * scale, 4)] for w in run.windows]


def _name(runs: Sequence[RunData], run: RunData, what: str) -> str:
    return what if len(runs) == 1 else f"{run.name} {what}"


def _stage_lines(series: dict[str, Any], run: RunData) -> None:
    """Vertical lines at the stage boundaries of ``run`` on its first series."""
    lines = [{"xAxis": round(run.stage_start(s), 3), "name": str(s.get("label", ""))} for s in run.stages]
    if lines:
        series["markLine"] = {
            "symbol": "none",
            "silent": True,
            "lineStyle": {"color": "#999", "type": "dotted"},
            "label": {"formatter": "{b}", "position": "insideEndTop", "fontSize": 10},
            "data": lines,
        }


def _line(name: str, data: list[Any], color: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "type": "line",
        "data": data,
        "showSymbol": False,
        "itemStyle": {"color": color},
        **extra,
    }


def latency_over_time(runs: Sequence[RunData]) -> dict[str, Any] | None:
    """P95 TTFT (left axis) and P95 E2E (right axis) per window."""
    option = _option(
        "P95 TTFT and P95 E2E over time", [_y("P95 TTFT (ms)"), _y("P95 E2E (ms)", position="right")], runs
    )
    for i, run in enumerate(runs):
        color = COLORS[i % len(COLORS)]
        ttft = _line(_name(runs, run, "P95 TTFT"), _points(run, "p95_ttft_ms"), color)
        e2e = _line(
            _name(runs, run, "P95 E2E"),
            _points(run, "p95_e2el_ms"),
            color,
            yAxisIndex=1,
            lineStyle={"type": "dashed"},
        )
        _stage_lines(ttft, run)
        option["series"] += [ttft, e2e]
    return option if _has_data(option) else None


def tokens_over_time(runs: Sequence[RunData]) -> dict[str, Any] | None:
    option = _option("Output tokens/s over time", _y("output tokens/s"), runs)
    for i, run in enumerate(runs):
        series = _line(
            _name(runs, run, "output tok/s"), _points(run, "output_tokens_per_s"), COLORS[i % len(COLORS)]
        )
        _stage_lines(series, run)
        option["series"].append(series)
    return option if _has_data(option) else None


def in_flight_over_time(runs: Sequence[RunData]) -> dict[str, Any] | None:
    option = _option(
        "Requests in flight over time (time-weighted mean per window)", _y("requests in flight"), runs
    )
    for i, run in enumerate(runs):
        series = _line(_name(runs, run, "in flight"), _points(run, "in_flight"), COLORS[i % len(COLORS)])
        _stage_lines(series, run)
        option["series"].append(series)
    return option if _has_data(option) else None


def errors_over_time(runs: Sequence[RunData]) -> dict[str, Any] | None:
    """Failed requests per window, stacked by failure class (one stack per run)."""
    option = _option("Errors by class over time", _y("failed requests per window"), runs)
    for i, run in enumerate(runs):
        classes = sorted(
            {k for w in run.windows for k in w.get("requests", {}) if k not in ("ok", "incomplete")}
        )
        for j, name in enumerate(classes):
            data = [[_mid(w), w.get("requests", {}).get(name, 0)] for w in run.windows]
            series = {
                "name": _name(runs, run, name),
                "type": "bar",
                "stack": run.name,
                "data": data,
                "itemStyle": {"color": COLORS[(i + j + 1) % len(COLORS)]},
            }
            if j == 0:
                _stage_lines(series, run)
            option["series"].append(series)
    return option if option["series"] else None


def server_over_time(runs: Sequence[RunData]) -> dict[str, Any] | None:
    """The server's KV-cache usage (%, left) and waiting requests (right), from its metrics."""
    option = _option(
        "Server: KV-cache usage and waiting requests",
        [_y("KV-cache usage (%)", min=0, max=100), _y("waiting requests", position="right")],
        runs,
    )
    for i, run in enumerate(runs):
        if not run.server:
            continue
        color = COLORS[i % len(COLORS)]
        kv = _line(_name(runs, run, "KV-cache usage %"), _points(run, "kv_cache_usage_mean", 100.0), color)
        waiting = _line(
            _name(runs, run, "waiting"),
            _points(run, "waiting_mean"),
            color,
            yAxisIndex=1,
            lineStyle={"type": "dashed"},
        )
        _stage_lines(kv, run)
        option["series"] += [kv, waiting]
    return option if _has_data(option) else None


def _has_data(option: dict[str, Any]) -> bool:
    return any(any(p[1] is not None for p in s["data"]) for s in option["series"])
