"""Exact run statistics from request records, in ``vllm bench serve``'s vocabulary.

The input is the records' columns (:mod:`llm_locust.results.columns`, or rows of
``requests.jsonl``, pulled into columns first), so the same function summarizes a run, one
stage of it, or a ``requests.jsonl`` read back from disk. Percentiles are exact over the
records (numpy's linear interpolation, as ``vllm bench serve`` uses), never Locust's rounded
response-time buckets; per-chunk ITL past a budget comes from a histogram whose error
``itl_precision`` states (:mod:`llm_locust.results.stats`).

Pure module: no Locust, no network.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from llm_locust.load.search import Verdict
from llm_locust.results.columns import Columns, Part
from llm_locust.results.concurrency import peak_in_flight
from llm_locust.results.failures import failure_lines
from llm_locust.results.headline import Headline, headline
from llm_locust.results.inclusion import Coverage, covered
from llm_locust.results.sessions import session_lines
from llm_locust.results.stats import (
    PERCENTILES,
    ZERO_GAP_NOTE_SHARE,
    latency_stats,
    percentiles,
)
from llm_locust.results.summary_blocks import LittlesLaw, Slo, SloLine
from llm_locust.results.summary_model import RunSummary, StageRow, Stats
from llm_locust.results.traffic import traffic_lines

__all__ = [
    "CONFLICT_RULE",
    "SUMMARY_NAMES",
    "coalesced_chunks_line",
    "format_stage_table",
    "format_table",
    "inconclusive_reason",
    "open_loop_stats",
    "part_of",
    "summarize",
    "usage_conflict_line",
]

#: Which count the totals take for a request whose usage contradicts its stream.
CONFLICT_RULE = (
    "output tokens as received (the content chunks, or the run's tokenizer over the streamed text), "
    "not the usage the server claimed: the chunks are measured, the usage is only the server's word, "
    "and a usage over max_tokens or under the chunk count cannot be right"
)
#: Record latency -> its name in the summary's keys (vLLM's: ``e2el`` for E2E).
SUMMARY_NAMES = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2e": "e2el"}


def part_of(rows: Part | Columns | Iterable[Mapping[str, Any]]) -> Part:
    """A :class:`Part` of every row: rows (dicts) are pulled into columns first."""
    if isinstance(rows, Part):
        return rows
    cols = rows if isinstance(rows, Columns) else Columns.from_rows(rows)
    return cols.part()


def summarize(
    rows: Part | Columns | Iterable[Mapping[str, Any]], duration: float, qs: Sequence[float] = ()
) -> dict[str, Any]:
    """The run-level summary over ``rows``; ``duration`` is the wall time they span (s). TTFT, TPOT,
    ITL and E2E have the percentiles ``qs`` (``--percentiles``) besides :data:`PERCENTILES`."""
    every_q = sorted({*PERCENTILES, *qs})
    part = part_of(rows)
    cols, mask = part.cols, part.mask
    counted, ok = part.covered(Coverage.REQUESTS), part.covered(Coverage.COMPLETED)
    failed = counted & ~cols.ok & ~cols.cancelled
    completed, incomplete = int(ok.sum()), int((mask & cols.incomplete).sum())
    cancelled = int((counted & cols.cancelled).sum())
    duration = max(duration, 1e-9)
    prompt = np.where(np.isnan(cols.prompt[ok]), np.nan_to_num(cols.target_in[ok]), cols.prompt[ok])
    input_tokens = int(prompt.sum())
    output_tokens = int(np.nan_to_num(cols.completion[ok]).sum())
    itl = part.itl()
    timed = part.covered(Coverage.LATENCY)
    out: dict[str, Any] = {
        "completed": completed,
        "failed": int(failed.sum()),
        "incomplete": incomplete,
        "cancelled": cancelled,
        "duration": duration,
        "total_input_tokens": input_tokens,
        "total_output_tokens": output_tokens,
        "request_throughput": completed / duration,
        "output_throughput": output_tokens / duration,
        "total_token_throughput": (input_tokens + output_tokens) / duration,
        "max_concurrent_requests": peak_in_flight(cols.start[mask], cols.e2e[mask]),
    }
    for field, name in SUMMARY_NAMES.items():
        if field == "itl":
            out.update(itl.latency_stats(name, every_q))
        else:
            out.update(latency_stats(name, _known(getattr(cols, field)[timed]), every_q))
    out["itl_precision"] = itl.precision()
    out["itl_zero_gap_share"] = itl.zero_share()  # coalesced events: coalesced_chunks_line
    out.update(_traffic(part, ok, timed))
    if (sessions := cols.sessions.block(cols, counted, ok, timed, duration)) is not None:
        out["sessions"] = sessions  # agent loops, conversations: results/sessions.py
    out["errors"] = dict(sorted(Counter(cols.outcome_of(failed)).items()))
    sources = np.asarray(cols.token_source_names, dtype=object)
    out["token_sources"] = dict(sorted(Counter(sources[cols.token_source[ok]].tolist()).items()))
    conflicting = ok & cols.usage_conflict
    out["usage_conflicts"] = int(conflicting.sum())  # counted as received: protocol/counts.py
    if out["usage_conflicts"]:
        by_source = Counter(sources[cols.token_source[conflicting]].tolist())
        out["usage_conflict_counts"] = {
            "counted_from": dict(sorted(by_source.items())),
            "rule": CONFLICT_RULE,
        }
    out["tpot_undefined"] = int(np.isnan(cols.tpot[ok]).sum())
    out["client_stalled"] = int((ok & ~timed).sum())  # completed, latencies left out
    if (~np.isnan(cols.lag[mask])).any():
        out.update(open_loop_stats(part, duration))
    return out


def records_block(cols: Columns) -> dict[str, Any]:
    """Every record of the test, as a series counts them (``Coverage.SERIES``: warm-up, ramp-up
    and incomplete ones too): requests by outcome, the tokens of the successful ones, and how
    many latencies count (``Coverage.SERIES_LATENCY``). The live view (``/llm/stats``'s totals)
    and the exporter's counters (``metrics_final.prom``) count exactly these."""
    every = covered(Coverage.SERIES, cols)
    ok = every & cols.ok
    prompt = np.where(np.isnan(cols.prompt[ok]), np.nan_to_num(cols.target_in[ok]), cols.prompt[ok])
    by_outcome = dict(sorted(Counter(cols.outcome_of(every)).items()))
    traffic = cols.traffic
    return {
        "requests": by_outcome,
        "total": int(every.sum()),
        "completed": int(ok.sum()),
        "failed": int((every & ~cols.ok & ~cols.incomplete & ~cols.cancelled).sum()),
        "incomplete": int((every & cols.incomplete).sum()),
        "cancelled": int((every & cols.cancelled).sum()),
        "prompt_tokens": int(prompt.sum()),
        "generation_tokens": int(np.nan_to_num(cols.completion[ok]).sum()),
        "reasoning_tokens": int(np.nan_to_num(traffic.reasoning[ok[traffic.split_at]]).sum()),
        "cached_tokens": int(traffic.cached[ok[traffic.cached_at]].sum()),
        "timed": int(covered(Coverage.SERIES_LATENCY, cols).sum()),
    }


def _traffic(part: Part, ok: np.ndarray, timed: np.ndarray) -> dict[str, Any]:
    """Visible TTFT, cache-hit and burst TTFT keys (over the ``timed`` rows, as TTFT), and the
    reasoning, prefix-cache and burst blocks (over the successful rows ``ok``; each only when a
    record has something to say; :mod:`llm_locust.results.traffic`)."""
    cols, traffic = part.cols, part.cols.traffic
    out: dict[str, Any] = {}
    for name, seconds in traffic.latencies(cols, timed).items():
        out.update(latency_stats(name, seconds))
    blocks = {
        "reasoning": traffic.reasoning_block(ok),
        "tools": traffic.tools_block(ok),
        "prefix_cache": traffic.cache_block(cols, ok),
        "bursts": traffic.burst_block(cols, part.mask),
    }
    out.update({key: block for key, block in blocks.items() if block is not None})
    return out


def open_loop_stats(part: Part, duration: float) -> dict[str, Any]:
    """Achieved arrival rate, send lag, and latency seen from the intended send time.

    Latency "from intended" adds the send lag: it is what a user who arrived on schedule
    waited, including any time the load generator (or a concurrency ceiling) held the
    request back. Other tools report only the latency from the actual send.
    """
    cols, mask = part.cols, part.mask
    lags = _known(cols.lag[mask])
    sends = _known(cols.start[mask])
    span = float(sends.max() - sends.min()) if sends.size > 1 else 0.0
    out: dict[str, Any] = {
        # arrivals per second between the first and the last send: not diluted by the
        # time before the first arrival or by the drain after the last
        "achieved_request_rate": (sends.size - 1) / span if span > 0 else None,
        "waited_for_slot": int(cols.waited[mask].sum()),
    }
    if lags.size:
        p50, p99 = percentiles(lags * 1000.0, (50, 99))
        out.update(
            {"p50_send_lag_ms": p50, "p99_send_lag_ms": p99, "max_send_lag_ms": float(lags.max() * 1000.0)}
        )
    timed = part.covered(Coverage.LATENCY)
    lag = np.nan_to_num(cols.lag[timed])
    out.update(latency_stats("ttft_intended", _known(cols.ttft[timed] + lag)))
    out.update(latency_stats("e2el_intended", _known(cols.e2e[timed] + lag)))
    return out


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
    """An SLO line's measured value in its own unit."""
    measured, name = line.measured, line.name
    if measured is None:
        return "-"
    percent = name == "success" or name.startswith(("kv_cache_usage", "error_rate", "gpu_mem", "gpu_util"))
    if line.kind == "drift":
        return (
            f"{measured * 100:+.2f} pts/10min"
            if percent
            else (
                f"{measured:+.2f}/10min" if name.startswith("waiting") else f"{measured * 1000:+.1f} ms/10min"
            )
        )
    if percent:
        return f"{measured * 100:.2f}%"
    if line.kind == "server":
        return f"{measured:g}"
    return f"{measured * 1000:.1f} ms"


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
    if stage.kind == "users":
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


def _known(values: np.ndarray) -> np.ndarray:
    """The defined values of a column (``nan`` is undefined)."""
    known: np.ndarray = values[~np.isnan(values)]
    return known
