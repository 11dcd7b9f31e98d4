"""Exact run statistics from request records, in ``vllm bench serve``'s vocabulary.

The input is the records' columns (:mod:`llm_locust.results.columns`, or rows of
``requests.jsonl``, pulled into columns first), so the same function summarizes a run, one
stage of it, or a ``requests.jsonl`` read back from disk. Percentiles are exact over the
records (numpy's linear interpolation, as ``vllm bench serve`` uses), never Locust's rounded
response-time buckets; per-chunk ITL past a budget comes from a histogram whose error
``itl_precision`` states (:mod:`llm_locust.results.stats`). The end-of-run text of a summary
is :mod:`llm_locust.results.summary_text`.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from llm_locust.results.columns import Columns, Part
from llm_locust.results.concurrency import peak_in_flight
from llm_locust.results.inclusion import Coverage, covered
from llm_locust.results.stats import PERCENTILES, latency_stats, percentiles

__all__ = [
    "CONFLICT_RULE",
    "SUMMARY_NAMES",
    "open_loop_stats",
    "part_of",
    "records_block",
    "summarize",
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


def _known(values: np.ndarray) -> np.ndarray:
    """The defined values of a column (``nan`` is undefined)."""
    known: np.ndarray = values[~np.isnan(values)]
    return known
