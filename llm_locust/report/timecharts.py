"""ECharts options for the over-time charts of the report: one point per time window (pure).

The x axis is seconds since the start of the test; every chart marks the stage boundaries
(a vertical line where each stage began, labelled with the stage). The values are the
windows of :mod:`llm_locust.results.windows`, overlaid per run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from llm_locust.config.jsontypes import JsonValue
from llm_locust.record import NOT_FAILED
from llm_locust.report.charts import COLORS, base_option
from llm_locust.report.data import RunData
from llm_locust.report.echarts import Axis, Datum, Option, Series, cells

__all__ = [
    "errors_over_time",
    "gpu_over_time",
    "in_flight_over_time",
    "latency_over_time",
    "server_over_time",
    "tokens_over_time",
]


def _option(title: str, y: Axis | list[Axis], runs: Sequence[RunData]) -> Option:
    x: Axis = {"type": "value", "name": f"seconds since the start ({runs[0].window_s:g} s windows)", "min": 0}
    option = base_option(title, {**x, "nameLocation": "middle", "nameGap": 30}, y)
    option["grid"] = {"left": 70, "right": 70, "top": 40, "bottom": 80}
    option["dataZoom"] = [{"type": "inside"}]
    return option


def _y(name: str, **extra: JsonValue) -> Axis:
    return {"type": "value", "name": name, "nameLocation": "middle", "nameGap": 50, **extra}


def _points(run: RunData, key: str, scale: float = 1.0) -> list[Datum]:
    """Series ``key`` of ``run``'s windows (``p95_ttft_ms``, ``in_flight``...) at their mid-times."""
    return [
        [round(w.mid_s, 3), None if (v := w.number(key)) is None else round(v * scale, 4)]
        for w in run.windows
    ]


def _name(runs: Sequence[RunData], run: RunData, what: str) -> str:
    return what if len(runs) == 1 else f"{run.name} {what}"


def _stage_lines(series: Series, run: RunData) -> None:
    """Vertical lines at the stage boundaries of ``run`` on its first series."""
    lines: list[Mapping[str, JsonValue]] = [
        {"xAxis": round(run.stage_start(s), 3), "name": s.label} for s in run.stages
    ]
    if lines:
        series["markLine"] = {
            "symbol": "none",
            "silent": True,
            "lineStyle": {"color": "#999", "type": "dotted"},
            "label": {"formatter": "{b}", "position": "insideEndTop", "fontSize": 10},
            "data": lines,
        }


def _line(name: str, data: list[Datum], color: str) -> Series:
    return {"name": name, "type": "line", "data": data, "showSymbol": False, "itemStyle": {"color": color}}


def _two_axes(
    option: Option,
    runs: Sequence[RunData],
    left: tuple[str, str, float],
    right: tuple[str, str, float],
) -> Option | None:
    """Per run, ``left`` (name, window key, scale) on the left axis and ``right`` dashed on
    the right one, in the run's colour."""
    for i, run in enumerate(runs):
        color = COLORS[i % len(COLORS)]
        first = _line(_name(runs, run, left[0]), _points(run, left[1], left[2]), color)
        second = _line(_name(runs, run, right[0]), _points(run, right[1], right[2]), color)
        second["yAxisIndex"], second["lineStyle"] = 1, {"type": "dashed"}
        _stage_lines(first, run)
        option["series"] += [first, second]
    return option if _has_data(option) else None


def latency_over_time(runs: Sequence[RunData]) -> Option | None:
    """P95 TTFT (left axis) and P95 E2E (right axis) per window."""
    option = _option(
        "P95 TTFT and P95 E2E over time", [_y("P95 TTFT (ms)"), _y("P95 E2E (ms)", position="right")], runs
    )
    return _two_axes(option, runs, ("P95 TTFT", "p95_ttft_ms", 1.0), ("P95 E2E", "p95_e2el_ms", 1.0))


def tokens_over_time(runs: Sequence[RunData]) -> Option | None:
    option = _option("Output tokens/s over time", _y("output tokens/s"), runs)
    for i, run in enumerate(runs):
        series = _line(
            _name(runs, run, "output tok/s"), _points(run, "output_tokens_per_s"), COLORS[i % len(COLORS)]
        )
        _stage_lines(series, run)
        option["series"].append(series)
    return option if _has_data(option) else None


def in_flight_over_time(runs: Sequence[RunData]) -> Option | None:
    option = _option(
        "Requests in flight over time (time-weighted mean per window)", _y("requests in flight"), runs
    )
    for i, run in enumerate(runs):
        series = _line(_name(runs, run, "in flight"), _points(run, "in_flight"), COLORS[i % len(COLORS)])
        _stage_lines(series, run)
        option["series"].append(series)
    return option if _has_data(option) else None


def errors_over_time(runs: Sequence[RunData]) -> Option | None:
    """Failed requests per window, stacked by failure class (one stack per run)."""
    option = _option("Errors by class over time", _y("failed requests per window"), runs)
    for i, run in enumerate(runs):
        classes = sorted({k for w in run.windows for k in w.requests if k not in NOT_FAILED})
        for j, name in enumerate(classes):
            data: list[Datum] = [[round(w.mid_s, 3), w.requests.get(name, 0)] for w in run.windows]
            series: Series = {
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


def server_over_time(runs: Sequence[RunData]) -> Option | None:
    """The server's KV-cache usage (%, left) and waiting requests (right), from its metrics."""
    y = [_y("KV-cache usage (%)", min=0, max=100), _y("waiting requests", position="right")]
    option = _option("Server: KV-cache usage and waiting requests", y, runs)
    scraped = [run for run in runs if run.server]
    if not scraped:
        return None
    return _two_axes(
        option, scraped, ("KV-cache usage %", "kv_cache_usage_mean", 100.0), ("waiting", "waiting_mean", 1.0)
    )


def gpu_over_time(runs: Sequence[RunData]) -> Option | None:
    """GPU memory of the fullest GPU (%, left) and utilisation of the busiest (%, right), from a
    DCGM exporter among ``--server-metrics``; ``None`` without GPU series."""
    y = [
        _y("GPU memory used (%)", min=0, max=100),
        _y("GPU utilisation (%)", position="right", min=0, max=100),
    ]
    option = _option("Server: GPU memory and utilisation (DCGM)", y, runs)
    scraped = [run for run in runs if any(p.get("gpu_mem") is not None for p in run.server)]
    if not scraped:
        return None
    return _two_axes(
        option,
        scraped,
        ("GPU memory max %", "gpu_mem_max", 100.0),
        ("GPU utilisation %", "gpu_util_mean", 100.0),
    )


def _has_data(option: Option) -> bool:
    return any(
        any(cells(p)[1:2] != (None,) and len(cells(p)) > 1 for p in s["data"]) for s in option["series"]
    )
