"""The end-of-run text of a summary (:class:`~llm_locust.results.summary_model.RunSummary`):
the table in ``vllm bench serve``'s order, the SLO section under its headline
(:mod:`llm_locust.results.headline`), the stage table, and the notes on usage conflicts and
coalesced chunks. It reads the model only; the numbers come from
:mod:`llm_locust.results.summary`.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from collections.abc import Sequence

from llm_locust.config.slo import SloKind
from llm_locust.config.stage_kind import StageKind
from llm_locust.load.search import Verdict
from llm_locust.results.failures import failure_lines
from llm_locust.results.headline import Headline, headline
from llm_locust.results.sessions import session_lines
from llm_locust.results.shown import fixed
from llm_locust.results.stats import PERCENTILES, ZERO_GAP_NOTE_SHARE
from llm_locust.results.summary_blocks import LittlesLaw, Slo, SloLine
from llm_locust.results.summary_model import RunSummary, StageRow, Stats
from llm_locust.results.traffic import traffic_lines

__all__ = [
    "coalesced_chunks_line",
    "format_stage_table",
    "format_table",
    "inconclusive_reason",
    "usage_conflict_line",
]


def format_table(summary: RunSummary, title: str = "llm-locust summary") -> str:
    """A fixed-width table for the end of a headless run."""
    lines = [f"{'=' * 22} {title} {'=' * 22}"]
    row = "{:<40}{:>16}".format
    for label, value, fmt in _headline(summary):
        lines.append(row(label, "-" if value is None else fmt.format(value)))
    for name, label in (
        ("ttft", "Time to first token"),
        ("tpot", "Time per output token (excl. 1st)"),
        ("itl", "Inter-token latency"),
        ("e2el", "End-to-end latency"),
    ):
        lines.append(f"{'-' * 15} {label} (ms) {'-' * 15}")
        for label_, stat in _stat_rows(summary.percentiles or PERCENTILES):
            value = summary.ms(stat, name)
            lines.append(row(f"{label_} {name.upper()}", "-" if value is None else f"{value:.2f}"))
    lines += traffic_lines(summary)
    lines += session_lines(summary)
    errors = summary.errors_by_class if isinstance(summary.errors, list) else summary.errors
    if errors:
        lines.append(f"{'-' * 20} Failures by class {'-' * 20}")
        lines += [row(k, str(v)) for k, v in errors.items()]
    lines += failure_lines(summary)
    if summary.p99_send_lag_ms is not None:
        lines.append(f"{'-' * 20} Open loop {'-' * 20}")
        lines.append(row("Achieved arrival rate (req/s):", _num(summary.achieved_request_rate)))
        lines.append(
            row(
                "Send lag p50 / p99 (ms):",
                f"{_num(summary.p50_send_lag_ms, 1)} / {summary.p99_send_lag_ms:.1f}",
            )
        )
        lines.append(row("Waited for a concurrency slot:", str(summary.waited_for_slot)))
        for name in ("ttft_intended", "e2el_intended"):
            value = summary.ms("p99", name)
            lines.append(row(f"P99 {name.upper()} (ms):", "-" if value is None else f"{value:.2f}"))
    if summary.generator_lagging:
        lines.append(
            "WARNING: the load generator fell behind its schedule (send lag p99 "
            f"{summary.p99_send_lag_ms or 0:.0f} ms): add workers or lower the rate"
        )
    if summary.slo is not None:
        lines += _slo_lines(summary, summary.slo)
    if summary.usage_conflicts:
        lines.append(usage_conflict_line(summary.usage_conflicts))
    coalesced = coalesced_chunks_line(summary)
    if coalesced:
        lines.append(coalesced)
    counted_from = (summary.usage_conflict_counts or {}).get("counted_from")
    conflicting = counted_from.get("chunks", 0) if isinstance(counted_from, dict) else 0
    if summary.token_sources.get("chunks", 0) > (conflicting if isinstance(conflicting, int) else 0):
        lines.append("note: output tokens of some requests were counted from stream chunks (no usage sent)")
    lines.append("=" * (len(title) + 46))
    return "\n".join(lines)


def _slo_lines(summary: RunSummary, slo: Slo) -> list[str]:
    """The SLO section of the end-of-run table: the headline word and why, each objective, goodput."""
    row = "{:<40}{:>16}".format
    judged = headline(summary)
    assert judged is not None
    word, reason = judged
    searched = bool(summary.search)
    if searched:
        scope = "SLO, the capacity search's answer"
    else:
        scope = "SLO over the whole run, stages pooled" if summary.stages else "SLO"
    lines = [f"{'-' * 20} {scope}: {word.upper()} {'-' * 20}"]
    if (reason and word is not Headline.PASS) or searched:
        lines.append(reason)
    if searched:
        lines.append("every search level pooled (not the answer: each step is judged on its own):")
    for line in slo.objectives:
        undecided = " (inconclusive)" if line.verdict is Verdict.INCONCLUSIVE else ""
        shown = f"{_objective_value(line)} {'ok' if line.passed else 'FAIL'}{undecided}"
        lines.append(row(f"{line.objective}", shown))
    lines.append(row("Goodput (req/s):", f"{slo.goodput_rps:.2f}"))
    return lines


def _stat_rows(qs: Sequence[float]) -> list[tuple[str, str]]:
    """The end-of-run table's rows of one latency: mean, median, then each percentile asked for
    (row label, statistic)."""
    rows = [("Mean", "mean"), ("Median", "median")]
    return rows + [(f"P{q:g}", f"p{q:g}") for q in qs if q != 50]


def usage_conflict_line(records: int) -> str:
    """The end-of-run line for ``records`` completed requests whose usage contradicts their stream."""
    whose = "request's" if records == 1 else "requests'"
    return (
        f"note: {records} {whose} usage "
        "contradicts the stream (more tokens than max_tokens, or fewer than content chunks): the totals "
        "count their output as received (content chunks, or the tokenizer), not as the usage claims "
        "(usage_conflict in requests.jsonl)"
    )


def coalesced_chunks_line(summary: Stats) -> str | None:
    """The end-of-run note when more than :data:`ZERO_GAP_NOTE_SHARE` of the ITL gaps are 0 ms."""
    share = summary.itl_zero_gap_share
    if share is None or share <= ZERO_GAP_NOTE_SHARE:
        return None
    return (
        f"note: {share * 100:.0f} % of ITL gaps are 0 ms: several stream events arrived in one read "
        "(the server or the network coalesced them), so the low ITL percentiles are 0; TTFT, TPOT and "
        "E2E are not affected (itl_zero_gap_share in summary.json)"
    )


def _objective_value(line: SloLine) -> str:
    """An SLO line's measured value in its own unit, on its own side of its threshold
    (:func:`~llm_locust.results.shown.fixed`)."""
    measured, name, threshold = line.measured, line.name, line.threshold
    if measured is None:
        return "-"
    percent = name == "success" or name.startswith(("kv_cache_usage", "error_rate", "gpu_mem", "gpu_util"))
    if line.kind == SloKind.SERVER and not percent:
        return f"{measured:g}"
    if percent:
        scale, digits, unit = 100.0, 2, "%" if line.kind != SloKind.DRIFT else " pts/10min"
    elif line.kind == SloKind.DRIFT and name.startswith("waiting"):
        scale, digits, unit = 1.0, 2, "/10min"
    else:
        scale, digits, unit = 1000.0, 1, " ms" if line.kind != SloKind.DRIFT else " ms/10min"
    shown = fixed(measured * scale, digits, None if threshold is None else threshold * scale)
    return f"{'+' if line.kind == SloKind.DRIFT and not shown.startswith('-') else ''}{shown}{unit}"


def format_stage_table(stages: Sequence[StageRow]) -> str:
    """One row per stage: the load it ran at, throughput, latency percentiles, Little's law,
    verdict; then one line per stage that did not run at its level, saying why."""
    head = (
        f"{'stage':<24}{'load':>10}{'ok':>6}{'fail':>6}{'inc':>5}{'req/s':>8}{'out tok/s':>11}"
        f"{'TTFT p50':>10}{'TTFT p95':>10}{'TPOT p50':>10}{'ITL 0ms':>8}{'E2E p95':>10}{'in-flight':>10}"
        f"{'L=λW':>8}"
        f"{'verdict':>14}"
    )
    lines = [head, "-" * len(head)]
    for s in stages:
        law = s.littles_law or LittlesLaw()
        lines.append(
            f"{s.label[:23]:<24}{_load(s):>10}{s.completed:>6}{s.failed:>6}"
            f"{s.incomplete:>5}{s.request_throughput:>8.2f}{s.output_throughput:>11.1f}"
            f"{_ms(s.ms('median', 'ttft')):>10}{_ms(s.ms('p95', 'ttft')):>10}"
            f"{_ms(s.ms('median', 'tpot')):>10}{_share(s.itl_zero_gap_share):>8}"
            f"{_ms(s.ms('p95', 'e2el')):>10}"
            f"{_num(law.mean_in_flight):>10}{_num(law.product):>8}{_verdict(s.verdict):>14}"
        )
    for s in stages:
        if s.invalid_reason:
            lines.append(f"{s.label}: invalid: {s.invalid_reason}")
        elif s.verdict is Verdict.INCONCLUSIVE:
            lines.append(f"{s.label}: inconclusive: {inconclusive_reason(s.slo)}")
    return "\n".join(lines)


def inconclusive_reason(slo: Slo | None) -> str:
    """Why a stage's SLO verdict (``slo``) is inconclusive: its undecided objectives and their notes."""
    parts = []
    for o in slo.objectives if slo is not None else ():
        if o.verdict is Verdict.INCONCLUSIVE:
            note = o.note or "the 95 % interval straddles the threshold"
            parts.append(f"{o.objective}: {note}")
    return "; ".join(parts) or "the 95 % intervals straddle the thresholds"


def _load(stage: StageRow) -> str:
    """What ran against what was planned: peak/target users, or sent/target req/s."""
    if stage.kind is StageKind.USERS:
        peak = stage.peak_users
        return f"{'-' if peak is None else peak}/{int(stage.target)}"
    sent = stage.sent_rate
    return f"{'-' if sent is None else f'{sent:.2g}'}/{stage.target:g}/s"


def _verdict(verdict: Verdict | None) -> str:
    return "" if verdict is None else "FAIL" if verdict is Verdict.FAIL else verdict.value


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _headline(s: RunSummary) -> list[tuple[str, float | None, str]]:
    """The first rows of the end-of-run table: (label, value, format)."""
    return [
        ("Successful requests:", s.completed, "{}"),
        ("Failed requests:", s.failed, "{}"),
        ("Incomplete (in flight at the stop):", s.incomplete, "{}"),
        ("Cancelled by the client:", s.cancelled, "{}"),
        ("Duration (s):", s.duration, "{:.2f}"),
        ("Total input tokens:", s.total_input_tokens, "{}"),
        ("Total generated tokens:", s.total_output_tokens, "{}"),
        ("Request throughput (req/s):", s.request_throughput, "{:.2f}"),
        ("Output token throughput (tok/s):", s.output_throughput, "{:.2f}"),
        ("Total token throughput (tok/s):", s.total_token_throughput, "{:.2f}"),
        ("Peak concurrent requests:", s.max_concurrent_requests, "{}"),
    ]
