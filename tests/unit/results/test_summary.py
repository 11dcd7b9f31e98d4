"""The summary: vLLM bench-serve keys, exact percentiles, errors, peak concurrency."""

from __future__ import annotations

import numpy as np
import pytest

from llm_locust.results.summary import summarize
from llm_locust.results.summary_model import RunSummary
from llm_locust.results.summary_text import format_table

VLLM_KEYS = [
    "completed",
    "failed",
    "duration",
    "total_input_tokens",
    "total_output_tokens",
    "request_throughput",
    "output_throughput",
    "total_token_throughput",
    "max_concurrent_requests",
]


def row(i: int, ttft: float, e2e: float, tokens: int, outcome: str = "ok", start: float = 0.0) -> dict:
    itl = [(e2e - ttft) / (tokens - 1)] * (tokens - 1) if tokens > 1 else []
    return {
        "request_id": str(i),
        "start_time": start,
        "outcome": outcome,
        "ttft": ttft,
        "e2e": e2e,
        "tpot": (e2e - ttft) / (tokens - 1) if tokens > 1 else None,
        "itl": itl,
        "prompt_tokens": 100,
        "completion_tokens": tokens,
        "token_source": "usage",
    }


def test_keys_and_exact_percentiles() -> None:
    """Request i of 1..100 (in shuffled order): TTFT i ms, 11 tokens at 2i ms each, E2E 21i ms.
    Every percentile of every metric has its own value, worked out by hand (linear interpolation
    between order statistics, as ``vllm bench serve``): a swapped or mislabelled key fails."""
    order = np.random.default_rng(1).permutation(np.arange(1, 101))
    rows = [
        {**row(int(i), i / 1000, 21 * i / 1000, 11, start=k * 0.1), "itl": [2 * i / 1000] * 10}
        for k, i in enumerate(order)
    ]
    rows.append(row(999, 0.1, 0.2, 2, outcome="http_5xx"))
    s = summarize(rows, duration=50.0)
    for key in VLLM_KEYS:
        assert key in s
    # 1..100: median 50.5, p90 at rank 89.1 -> 90.1, p95 at 94.05 -> 95.05, p99 at 98.01 -> 99.01
    ranks = {"mean": 50.5, "median": 50.5, "p50": 50.5, "p90": 90.1, "p95": 95.05, "p99": 99.01}
    # ITL pools ten gaps of 2i ms per request: the 1,000 gaps' order statistics give 2x the ranks
    scale = {"ttft": 1.0, "tpot": 2.0, "itl": 2.0, "e2el": 21.0}
    for metric, factor in scale.items():
        for stat, value in ranks.items():
            assert s[f"{stat}_{metric}_ms"] == pytest.approx(factor * value, rel=1e-9), (metric, stat)
    assert s["std_ttft_ms"] == pytest.approx(np.sqrt((100**2 - 1) / 12))  # the population std of 1..100
    assert s["completed"] == 100 and s["failed"] == 1
    assert s["errors"] == {"http_5xx": 1}
    assert s["total_output_tokens"] == 100 * 11
    assert s["total_input_tokens"] == 100 * 100
    assert s["output_throughput"] == pytest.approx(1100 / 50.0)


def test_no_successes_gives_none_not_zero() -> None:
    s = summarize([row(0, 0.1, 0.2, 2, outcome="connect")], duration=1.0)
    assert s["completed"] == 0 and s["median_ttft_ms"] is None
    assert "-" in format_table(RunSummary.of(s))


def test_max_concurrency_sweep() -> None:
    rows = [
        {"start_time": 0.0, "e2e": 10.0},
        {"start_time": 1.0, "e2e": 1.0},
        {"start_time": 2.0, "e2e": 1.0},
        {"start_time": 2.5, "e2e": 1.0},
    ]
    assert summarize(rows, 10.0)["max_concurrent_requests"] == 3
    # back to back: one ends exactly when the next starts -> never two in flight
    back_to_back = [{"start_time": 0.0, "e2e": 1.0}, {"start_time": 1.0, "e2e": 1.0}]
    assert summarize(back_to_back, 2.0)["max_concurrent_requests"] == 1


def test_table_mentions_chunk_counted_tokens() -> None:
    r = row(0, 0.1, 0.2, 2)
    r["token_source"] = "chunks"
    assert "counted from stream chunks" in format_table(RunSummary.of(summarize([r], 1.0)))


def test_reasoning_and_prefix_cache_blocks() -> None:
    rows = []
    for i in range(10):
        r = row(i, ttft=0.1 + 0.01 * i, e2e=2.0, tokens=50)
        r.update(ttft_visible=0.5 + 0.01 * i, reasoning_tokens=20 + i, answer_tokens=30 - i)
        r.update(
            reasoning_token_source="usage" if i < 8 else "chunks", first_visible_tokens=3 if i == 0 else 1
        )
        r.update(cached_tokens=64 if i % 2 else 0)
        rows.append(r)
    s = summarize(rows, duration=10.0)
    assert s["p50_ttft_visible_ms"] == pytest.approx(np.percentile([500 + 10 * i for i in range(10)], 50))
    block = s["reasoning"]
    assert block["requests"] == block["with_reasoning"] == 10
    assert block["total_reasoning_tokens"] == sum(20 + i for i in range(10))
    assert block["p50_reasoning_tokens"] == pytest.approx(24.5)
    assert block["sources"] == {"chunks": 2, "usage": 8} and block["first_chunk_batched"] == 1
    assert "reasoning and answer" in block["phases"]["tpot"]
    cache = s["prefix_cache"]
    assert (cache["requests_reporting"], cache["hits"], cache["hit_ratio"]) == (10, 5, 0.5)
    assert cache["token_hit_ratio"] == pytest.approx(5 * 64 / 1000)
    hit_ttft = [100 + 10 * i for i in range(10) if i % 2]
    miss_ttft = [100 + 10 * i for i in range(10) if not i % 2]
    assert s["median_ttft_cache_hit_ms"] == pytest.approx(np.median(hit_ttft))
    assert s["median_ttft_cache_miss_ms"] == pytest.approx(np.median(miss_ttft))
    table = format_table(RunSummary.of(s))
    assert "Time to first visible token" in table and "Reasoning tokens p50 / p99:" in table
    assert "1 first content chunks carried several tokens" in table
    assert "Hit ratio (requests / tokens):" in table and "50.0% / 32.0%" in table


def test_plain_run_has_no_reasoning_or_cache_block() -> None:
    s = summarize([row(i, 0.1, 1.0, 10) for i in range(4)], duration=1.0)
    assert "reasoning" not in s and "prefix_cache" not in s
    assert s["p50_ttft_visible_ms"] is None  # rows without the field (an old requests.jsonl)
    assert "Time to first visible token" not in format_table(RunSummary.of(s))


def test_cancelled_requests_are_neither_completed_nor_failed() -> None:
    rows = [row(i, 0.1, 1.0, 10) for i in range(3)]
    rows += [{**row(9, 0.2, 0.3, 1), "outcome": "cancelled", "message": "cancelled by the client"}]
    s = summarize(rows, duration=1.0)
    assert (s["completed"], s["failed"], s["cancelled"], s["errors"]) == (3, 0, 1, {})
    assert s["p99_ttft_ms"] == pytest.approx(100.0)  # the cancelled request's 200 ms is not in it


def test_cancelled_requests_have_no_failure_messages() -> None:
    from llm_locust.results.failures import FailureTally

    tally = FailureTally()
    tally.add({"outcome": "cancelled", "message": "cancelled by the client"})
    tally.add({"outcome": "http_5xx", "message": "HTTP 500"})
    assert tally.to_summary()["error_messages"] == {"http_5xx": [["HTTP 500", 1]]}


def test_usage_conflicts_are_counted_and_said() -> None:
    """Issue 26 §9: the summary and the end-of-run text were silent about records whose usage
    contradicts the stream. Three of five such records (counted from their 5 chunks each), two
    with a believable usage (12 tokens each); one record without usage."""
    rows = [row(i, 0.1, 0.5, 5) for i in range(3)]
    for r in rows:
        r["token_source"] = "chunks"
        r["usage_conflict"] = "usage reports 50 completion tokens for 5 content chunks and max_tokens 8"
    rows += [row(3 + i, 0.1, 0.5, 12) for i in range(2)]
    s = summarize(rows, 1.0)
    assert s["usage_conflicts"] == 3
    assert s["usage_conflict_counts"]["counted_from"] == {"chunks": 3}
    assert "not the usage" in s["usage_conflict_counts"]["rule"]
    assert s["total_output_tokens"] == 3 * 5 + 2 * 12
    table = format_table(RunSummary.of(s))
    said = [line for line in table.splitlines() if "contradicts" in line]
    assert said == [
        "note: 3 requests' usage contradicts the stream (more tokens than max_tokens, or fewer than content "
        "chunks): the totals count their output as received (content chunks, or the tokenizer), not as the "
        "usage claims (usage_conflict in requests.jsonl)"
    ]
    assert "no usage sent" not in table  # every chunk-counted record had a usage, a wrong one
    plain = {**row(9, 0.1, 0.5, 4), "token_source": "chunks"}
    both = format_table(RunSummary.of(summarize([*rows, plain], 1.0)))
    assert "no usage sent" in both and "3 requests' usage contradicts" in both
    clean = summarize(rows[3:], 1.0)
    assert clean["usage_conflicts"] == 0 and "usage_conflict_counts" not in clean
    assert "contradicts" not in format_table(RunSummary.of(clean))
