"""The text at the end of a headless run: the answer first, then the detail.

Order: whether the run was interrupted; the capacity sentence (with an SLO and stages); the
per-stage table with its legend and a line per stage that did not run at its level; a capacity
search's probes, the demand's verdict, users against concurrency, the replicas; what
was left out of the statistics and why; the whole-run table; where the files are. Locust's
own table, printed after ours at exit, gets :data:`LOCUST_TABLE_LABEL` in front of it, so
two sets of numbers never disagree without a word.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from typing import Any

from llm_locust.results.capacity import capacity_lines
from llm_locust.results.summary import format_stage_table, format_table
from llm_locust.results.traffic import stage_cache_lines

__all__ = ["LEGEND", "LOCUST_TABLE_LABEL", "end_of_run_text", "exclusions_line"]

LEGEND = (
    "load: peak/target users (closed loop) or sent/target req/s (open loop). inc: requests in flight\n"
    "when the load stopped, not counted as ok or fail. in-flight: time-weighted mean of requests in\n"
    "flight over the stage's measured window, rebuilt from every record overlapping it. L=λW: arrival\n"
    "rate in the window x mean E2E of those arrivals (Little's law); the two agree within about\n"
    "E2E/window in a steady stage. ITL 0ms: share of inter-token gaps of 0 ms (stream events that\n"
    "arrived in one read; such gaps pull the low ITL percentiles to 0). invalid: the stage did not\n"
    "run its planned load (never a pass).\n"
    "inconclusive: a statistic's 95 % interval straddles its threshold, or the stage had too few\n"
    "requests to show it (a P99 needs 368, a P95 72): not a pass; more requests would decide."
)

LOCUST_TABLE_LABEL = (
    "----- Locust's own request statistics follow: every finished request, warm-up and ramp-up "
    "included (incomplete ones not), with response times in rounded buckets (Locust's "
    "approximation). The llm-locust tables above are exact over the measured requests. -----"
)


def exclusions_line(summary: dict[str, Any]) -> str:
    """How many requests the statistics leave out, and why (all still in requests.jsonl)."""
    excluded = summary.get("excluded") or {}
    drain = (summary.get("drain") or {}).get("seconds")
    parts = []
    if excluded.get("warmup"):
        parts.append(f"{excluded['warmup']} warm-up (the first --warmup seconds of a stage)")
    if excluded.get("rampup"):
        parts.append(f"{excluded['rampup']} ramp-up (sent before their stage reached its user count)")
    if excluded.get("outside"):
        parts.append(f"{excluded['outside']} outside the stages' measured windows (a search step settling)")
    if excluded.get("incomplete"):
        bound = f" and the {drain:g} s drain" if drain is not None else ""
        parts.append(f"{excluded['incomplete']} incomplete (in flight when the load stopped{bound})")
    measured = f"{summary.get('completed', 0)} completed and {summary.get('failed', 0)} failed are measured"
    if summary.get("client_stalled"):
        measured += (
            f" (the latencies of {summary['client_stalled']} of them left out: the load generator "
            "itself stalled inside them, client_stall_s)"
        )
    span = summary.get("measured_span") or {}
    if span.get("excluded_s"):
        measured += (
            f"; rates over the {span['seconds']:.1f} s measured of the test's {span['test_seconds']:.1f} s"
        )
    if not parts:
        return f"excluded from the statistics: none; {measured}"
    return f"excluded from the statistics: {'; '.join(parts)}; {measured} (all are in requests.jsonl)"


def _test_seconds(summary: dict[str, Any]) -> float:
    """How long the test ran (start to stop), measured or not."""
    span = summary.get("measured_span") or {}
    return float(span.get("test_seconds", summary.get("duration", 0.0)))


def master_lines(summary: dict[str, Any]) -> list[str]:
    """The master's ingest, when it has workers: one line; a warning first when it fell behind;
    a line per worker that stopped its load on its own."""
    master = summary.get("master")
    if not master:
        return []
    start = (summary.get("config") or {}).get("start_time")
    stopped = [
        f"worker {s['index']} ({s['worker']}) stopped its load early"
        + (f", {s['at'] - start:.1f} s into the run" if start is not None else "")
        + f": {s['why']}; the master is here, so its requests after that are missing"
        for s in summary.get("workers_stopped_early") or []
    ]
    line = (
        f"master: {master['rows']:,} rows in {master['batches']:,} batches, applied up to "
        f"{master['lag_max_s']:.1f} s after the workers sent them "
        f"(about {master['rows_behind_max']:,} rows behind at most)"
    )
    lines = [f"master: {master['warning']}", line] if master.get("fell_behind") else [line]
    return lines + [f"master: {text}" for text in stopped]


def end_of_run_text(summary: dict[str, Any], paths: str | None = None) -> str:
    """Everything printed after a headless run, answer first."""
    lines = []
    if summary.get("interrupted"):
        lines.append(
            f"llm-locust: interrupted by {summary.get('interrupted_by')} after "
            f"{_test_seconds(summary):.1f} s: load stopped, requests in flight drained; "
            "the results cover the run until then"
        )
    if summary.get("capacity"):
        lines.append(f"capacity: {summary['capacity']}")
    if summary.get("client_saturated"):
        lines.append(f"client: {summary['client_saturated']}")
    lines += master_lines(summary)
    if summary.get("stages"):
        lines += [format_stage_table(summary["stages"]), LEGEND, *stage_cache_lines(summary["stages"])]
    drift = summary.get("drift") or {}
    if drift.get("verdict") in ("drifting", "stable", "inconclusive"):
        lines.append(f"soak: {drift['text']}")
    lines += capacity_lines(summary)
    lines.append(exclusions_line(summary))
    lines.append(format_table(summary))
    if paths:
        lines.append(paths)
    return "\n".join(lines)
