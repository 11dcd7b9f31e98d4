"""The "LLM" tab in Locust's own UI: a table of the current quantiles and rates, with a row
linking to the chart page (see :mod:`llm_locust.live.webui`). While a test runs its rows are
over the last 30 s; once it ended, the summary's whole-run values.
"""

from __future__ import annotations

from typing import TypedDict

from llm_locust.live.aggregate import LATENCIES, Recent, Snapshot
from llm_locust.live.result_view import ResultView, result_view
from llm_locust.results.summary_model import RunSummary

__all__ = ["CHARTS_LINK_TEXT", "SATURATED_NOW", "TabRow", "table_rows"]

CHARTS_LINK_TEXT = "Charts: open /llm"
#: The "Client" row while a load process is saturated (the live gauge ``llm_locust_client_saturated``).
SATURATED_NOW = "saturated now: timings unreliable, add workers"
_LABELS = {
    **{"ttft": "TTFT", "ttft_visible": "TTFT visible", "tpot": "TPOT", "itl": "ITL", "e2e": "E2E"},
    **{"time_to_first_tool_call": "First tool call", "time_to_tool_args_complete": "Tool args complete"},
}

_TOOL_LATENCIES = ("time_to_first_tool_call", "time_to_tool_args_complete")

#: A cell: milliseconds, a count, a sentence, or blank (``""``).
Cell = float | int | str


class TabRow(TypedDict):
    """One row of the tab (Locust renders each cell as text)."""

    metric: str
    p50: Cell
    p95: Cell
    p99: Cell
    count: Cell


def table_rows(snap: Snapshot, summary: RunSummary | None, saturated: bool) -> list[TabRow]:
    """Rows of the "LLM" tab: quantiles (ms) per latency, rates, totals, the chart link. While a
    test runs, over the last 30 s; once it ended (``summary``), the summary's whole-run values
    (a window of a stopped load only decays to zeros), and its one completed count."""
    recent = snap["recent"]
    result = result_view(summary)
    rows = _result_rows(result) if result else []
    if not result and saturated:
        rows.append(_row("Client", SATURATED_NOW))
    rows += _whole_run_rows(summary) if summary else _window_rows(recent)
    if result:
        tokens, requests, scope = result["output_throughput"], result["request_throughput"], "whole run"
        completed, failed = result["completed"], result["failed"]
    else:
        tokens, requests, scope = recent["output_tokens_per_s"], recent["requests_per_s"], "last 30s"
        completed, failed = snap["totals"]["completed"], snap["totals"]["failed"]
    rows.append(_row(f"Output tokens/s ({scope})", round(tokens, 1)))
    rows.append(_row(f"Requests/s ({scope})", round(requests, 2)))
    rows.append(_row("Completed | failed", f"{completed} | {failed}"))
    rows.append(_row(CHARTS_LINK_TEXT, ""))
    return rows


def _row(metric: str, count: Cell) -> TabRow:
    """A row with one value (the quantile cells blank)."""
    return {"metric": metric, "p50": "", "p95": "", "p99": "", "count": count}


def _ms(seconds: float | None) -> float | str:
    return "" if seconds is None else round(seconds * 1000.0, 1)


def _window_rows(recent: Recent) -> list[TabRow]:
    """The tab's latency rows while a test runs: the last 30 s of finished requests."""
    rows: list[TabRow] = []
    for name in LATENCIES:
        stats = recent["latency"][name]
        if name in _TOOL_LATENCIES and not stats["count"]:
            continue  # a run without tool calls: no rows for them
        rows.append(
            {
                "metric": f"{_LABELS[name]} (last {recent['window_s']}s, ms)",
                "p50": _ms(stats["p50"]),
                "p95": _ms(stats["p95"]),
                "p99": _ms(stats["p99"]),
                "count": stats["count"],
            }
        )
    return rows


#: The tab's rows after a test: summary name -> label (the summary's keys, ``e2el`` for E2E).
_WHOLE_RUN = {"ttft": "TTFT", "ttft_visible": "TTFT visible", "tpot": "TPOT", "itl": "ITL", "e2el": "E2E"}


def _whole_run_rows(summary: RunSummary) -> list[TabRow]:
    """The tab's latency rows once a test ended: the summary's whole-run percentiles (ms, as
    summary.json); a latency the summary has no value for shows blank, never 0."""
    rows: list[TabRow] = []
    for name, label in _WHOLE_RUN.items():
        values = [summary.ms(f"p{q}", name) for q in (50, 95, 99)]
        if name == "ttft_visible" and not summary.reasoning:
            continue  # not a reasoning model: the same as TTFT
        shown: list[Cell] = ["" if v is None else round(float(v), 1) for v in values]
        rows.append(
            {
                "metric": f"{label} (whole run, ms)",
                "p50": shown[0],
                "p95": shown[1],
                "p99": shown[2],
                "count": "",
            }
        )
    return rows


def _result_rows(result: ResultView) -> list[TabRow]:
    """The tab's first rows once a test has ended: the verdict and the capacity sentence."""
    rows = []
    if result["slo_passed"] is not None:
        verdict = str(result.get("slo_verdict") or ("pass" if result["slo_passed"] else "fail")).upper()
        if result.get("slo_verdict") == "inconclusive":
            verdict += f" (point estimate {'PASS' if result['slo_passed'] else 'FAIL'})"
        if result.get("slo_reason"):
            verdict += f": {result['slo_reason']}"
        rows.append(_row("SLO", verdict))
    if result.get("capacity"):
        rows.append(_row("Capacity", result["capacity"] or ""))
    if result.get("client_saturated"):
        rows.append(_row("Client", result["client_saturated"] or ""))
    return rows
