"""The summary: vLLM bench-serve keys, exact percentiles, errors, peak concurrency."""

from __future__ import annotations

import numpy as np
import pytest

from llm_locust.results.summary import format_table, summarize

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
    rng = np.random.default_rng(1)
    ttfts = rng.lognormal(-1, 0.5, 500)
    rows = [row(i, float(t), float(t) + 1.0, 11, start=i * 0.1) for i, t in enumerate(ttfts)]
    rows.append(row(999, 0.1, 0.2, 2, outcome="http_5xx"))
    s = summarize(rows, duration=50.0)
    for key in VLLM_KEYS:
        assert key in s
    for metric in ("ttft", "tpot", "itl", "e2el"):
        for stat in ("mean", "median", "std", "p50", "p90", "p95", "p99"):
            assert f"{stat}_{metric}_ms" in s
    assert s["completed"] == 500 and s["failed"] == 1
    assert s["errors"] == {"http_5xx": 1}
    assert s["p99_ttft_ms"] == pytest.approx(np.percentile(ttfts, 99) * 1000)
    assert s["median_ttft_ms"] == pytest.approx(np.median(ttfts) * 1000)
    assert s["mean_tpot_ms"] == pytest.approx(100.0)
    assert s["total_output_tokens"] == 500 * 11
    assert s["total_input_tokens"] == 500 * 100
    assert s["output_throughput"] == pytest.approx(5500 / 50.0)


def test_no_successes_gives_none_not_zero() -> None:
    s = summarize([row(0, 0.1, 0.2, 2, outcome="connect")], duration=1.0)
    assert s["completed"] == 0 and s["median_ttft_ms"] is None
    assert "-" in format_table(s)


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
    assert "counted from stream chunks" in format_table(summarize([r], 1.0))
