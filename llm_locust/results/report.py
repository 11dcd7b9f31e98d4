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

from llm_locust.results.capacity import capacity_lines
from llm_locust.results.ending import quit_line
from llm_locust.results.finalize import nothing_recorded, nothing_recorded_line
from llm_locust.results.summary_blocks import Excluded, WorkerSilence
from llm_locust.results.summary_model import RunSummary
from llm_locust.results.summary_text import format_stage_table, format_table
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


def exclusions_line(summary: RunSummary) -> str:
    """How many requests the statistics leave out, and why (all still in requests.jsonl)."""
    excluded = summary.excluded or Excluded()
    drain = (summary.drain or {}).get("seconds")
    parts = []
    if excluded.warmup:
        parts.append(f"{excluded.warmup} warm-up (the first --warmup seconds of a stage)")
    if excluded.rampup:
        parts.append(f"{excluded.rampup} ramp-up (sent before their stage reached its user count)")
    if excluded.outside:
        parts.append(f"{excluded.outside} outside the stages' measured windows (a search step settling)")
    if excluded.incomplete:
        bound = f" and the {drain:g} s drain" if isinstance(drain, int | float) else ""
        parts.append(f"{excluded.incomplete} incomplete (in flight when the load stopped{bound})")
    measured = f"{summary.completed} completed and {summary.failed} failed are measured"
    if summary.client_stalled:
        measured += (
            f" (the latencies of {summary.client_stalled} of them left out: the load generator "
            "itself stalled inside them, client_stall_s)"
        )
    span = summary.measured_span
    if span is not None and span.excluded_s:
        measured += (
            f"; rates over the {span.seconds:.1f} s measured of the test's {_test_seconds(summary):.1f} s"
        )
    if not parts:
        return f"excluded from the statistics: none; {measured}"
    return f"excluded from the statistics: {'; '.join(parts)}; {measured} (all are in requests.jsonl)"


def _test_seconds(summary: RunSummary) -> float:
    """How long the test ran (start to stop), measured or not."""
    span = summary.measured_span
    return summary.duration if span is None or span.test_seconds is None else span.test_seconds


def master_lines(summary: RunSummary) -> list[str]:
    """The master's ingest, when it has workers: one line; a warning first when it fell behind;
    a line per worker that stopped its load on its own, per silence of a worker, and per worker
    that quit."""
    master = summary.master
    if not master:
        return []
    start = summary.config.start_time
    stopped = [
        f"worker {s.index} ({s.worker}) stopped its load early"
        + (
            f", {s.at - start:.1f} s into the run"
            if isinstance(start, int | float) and s.at is not None
            else ""
        )
        + f": {s.why}; the master is here, so its requests after that are missing"
        for s in summary.workers_stopped_early or []
    ]
    stopped += [silence_line(s, start) for s in summary.workers_silent or []]
    stopped += [quit_line(q, start) for q in summary.workers_quit or []]
    if summary.arrivals_not_sent is not None:
        stopped.append(
            f"{summary.arrivals_not_sent:,} planned arrivals not sent: the workers left kept their own "
            "shares of the open-loop schedule (docs/load-models.md)"
        )
    line = (
        f"master: {master.rows:,} rows in {master.batches:,} batches, applied up to "
        f"{master.lag_max_s:.1f} s after the workers sent them "
        f"(about {master.rows_behind_max:,} rows behind at most)"
    )
    lines = [f"master: {master.warning}", line] if master.fell_behind else [line]
    return lines + [f"master: {text}" for text in stopped]


def silence_line(s: WorkerSilence, start: float | None) -> str:
    """A worker's silence (no heartbeat to its master) during the test, in one line."""
    when = f", {s.since - start:.1f} s into the run" if start is not None else ""
    if s.until is None:
        return (
            f"worker {s.index} ({s.worker}) stopped answering{when} and had not answered again when "
            "the test ended: its load stopped there"
        )
    return (
        f"worker {s.index} ({s.worker}) stopped answering{when}, for {s.until - s.since:.1f} s "
        "(its load paused meanwhile), then carried on"
    )


def end_of_run_text(summary: RunSummary, paths: str | None = None) -> str:
    """Everything printed after a headless run, answer first."""
    lines = []
    if summary.interrupted:
        lines.append(
            f"llm-locust: interrupted by {summary.interrupted_by} after "
            f"{_test_seconds(summary):.1f} s: load stopped, requests in flight drained; "
            "the results cover the run until then"
        )
    if nothing_recorded(summary):
        lines.append(f"llm-locust: {nothing_recorded_line(summary)}")
    if summary.capacity:
        lines.append(f"capacity: {summary.capacity}")
    if summary.client_saturated:
        lines.append(f"client: {summary.client_saturated}")
    lines += master_lines(summary)
    if summary.stages:
        lines += [format_stage_table(summary.stages), LEGEND, *stage_cache_lines(summary.stages)]
    if summary.drift is not None and summary.drift.verdict.judged:
        lines.append(f"soak: {summary.drift.text}")
    lines += capacity_lines(summary)
    lines.append(exclusions_line(summary))
    lines.append(format_table(summary))
    if paths:
        lines.append(paths)
    return "\n".join(lines)
