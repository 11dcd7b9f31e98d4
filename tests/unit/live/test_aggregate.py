"""LiveAggregate: exact totals, exact le buckets, a sliding window, bounded memory."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from llm_locust.live import catalog as metrics
from llm_locust.live.aggregate import LiveAggregate
from llm_locust.live.history import History, history_point
from llm_locust.results.summary import summarize


class Clock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def ok_row(ttft: float = 0.1, tpot: float = 0.01, n: int = 10, **extra: object) -> dict:
    itl = [tpot] * (n - 1)
    row = {
        "outcome": "ok",
        "ttft": ttft,
        "tpot": tpot if n >= 2 else None,
        "e2e": ttft + tpot * (n - 1),
        "itl": itl,
        "prompt_tokens": 100,
        "completion_tokens": n,
        "start_time": 0.0,
    }
    row.update(extra)
    return row


def failed_row(outcome: str = "http_5xx") -> dict:
    return {"outcome": outcome, "ttft": None, "tpot": None, "e2e": 0.01, "itl": [], "completion_tokens": None}


def random_rows(n: int, seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        if rng.random() < 0.1:
            rows.append(failed_row(rng.choice(["http_5xx", "timeout"])))
            continue
        row = ok_row(rng.uniform(0.01, 0.5), rng.uniform(0.005, 0.05), rng.randint(1, 40))
        if rng.random() < 0.2:  # no usage block: the summary falls back to the target
            row["prompt_tokens"] = None
            row["target_input_tokens"] = 77
        rows.append(row)
    return rows


def test_totals_equal_the_summary() -> None:
    rows = random_rows(500)
    agg = LiveAggregate()
    for row in rows:
        agg.add(row)
    s = summarize(rows, 10.0)
    assert agg.completed == s["completed"] and agg.failed == s["failed"]
    assert agg.generation_tokens == s["total_output_tokens"]
    assert agg.prompt_tokens == s["total_input_tokens"]
    assert agg.errors() == s["errors"]
    assert agg.buckets["itl"].count == sum(len(r["itl"]) for r in rows if r["outcome"] == "ok")
    assert agg.buckets["tpot"].count == s["completed"] - s["tpot_undefined"]
    # without an SLO every successful request is good
    assert agg.slo_good_requests == agg.completed
    assert agg.slo_good_generation_tokens == agg.generation_tokens


def test_le_buckets_are_exact_including_an_slo_threshold_edge() -> None:
    threshold = 0.3  # not a catalog edge for TTFT
    assert threshold not in metrics.TIME_TO_FIRST_TOKEN_BUCKETS
    agg = LiveAggregate(thresholds={"ttft": [threshold]})
    values = [0.1, 0.2999, 0.3, 0.3, 0.30001, 0.5, 3.0]
    for v in values:
        agg.add(ok_row(ttft=v))
    hist = agg.buckets["ttft"]
    assert threshold in hist.edges
    cumulative = dict(zip(hist.edges, hist.cumulative(), strict=False))
    assert cumulative[threshold] == 4  # le is inclusive: both 0.3 count
    assert cumulative[0.1] == 1 and cumulative[0.25] == 1 and cumulative[0.5] == 6
    assert hist.cumulative()[-1] == len(values)
    for edge in hist.edges:
        assert cumulative[edge] == sum(1 for v in values if v <= edge)


def test_slo_predicate_counts_good_requests_and_tokens() -> None:
    agg = LiveAggregate(slo_good=lambda r: r["ttft"] <= 0.2)
    agg.add(ok_row(ttft=0.1, n=5))
    agg.add(ok_row(ttft=0.3, n=7))
    agg.add(failed_row())
    assert (agg.slo_good_requests, agg.slo_good_generation_tokens) == (1, 5)


def test_unknown_threshold_name_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown"):
        LiveAggregate(thresholds={"latency": [1.0]})


def test_window_rates_and_expiry() -> None:
    clock = Clock(1000.0)
    agg = LiveAggregate(window_s=10, clock=clock)
    for i in range(100):  # 10 s of 10 requests/s, 10 tokens each
        clock.t = 1000.0 + i / 10
        agg.add(ok_row(ttft=0.2 if i < 50 else 0.4, n=10))
    agg.add(failed_row("timeout"))
    recent = agg.recent()
    assert recent["span_s"] == pytest.approx(9.9)
    assert recent["output_tokens_per_s"] == pytest.approx(1000 / 9.9)
    assert recent["errors"] == {"timeout": 1}
    assert recent["latency"]["ttft"]["count"] == 100
    clock.t = 1015.0  # the first half has left the window
    recent = agg.recent()
    assert recent["latency"]["ttft"]["count"] == 40  # seconds 1006..1009
    assert recent["latency"]["ttft"]["p50"] == pytest.approx(0.4, rel=0.02)
    assert recent["errors"] == {"timeout": 1}
    clock.t = 1100.0
    recent = agg.recent()
    assert recent["latency"]["ttft"]["count"] == 0 and recent["output_tokens_per_s"] == 0
    assert recent["latency"]["ttft"]["p50"] is None
    assert agg.overall["ttft"].count == 100  # the whole-run view keeps everything


def test_snapshot_is_json_and_quantiles_are_close() -> None:
    rows = random_rows(300, seed=7)
    agg = LiveAggregate()
    for row in rows:
        agg.add(row)
    snap = json.loads(json.dumps(agg.snapshot()))
    s = summarize(rows, 1.0)
    assert snap["totals"]["completed"] == s["completed"]
    for name, key in (("ttft", "ttft"), ("tpot", "tpot"), ("itl", "itl"), ("e2e", "e2el")):
        assert snap["latency"][name]["p50"] * 1000 == pytest.approx(s[f"median_{key}_ms"], rel=0.01)
        assert snap["latency"][name]["p99"] * 1000 == pytest.approx(s[f"p99_{key}_ms"], rel=0.01)
        assert snap["recent"]["latency"][name]["p95"] * 1000 == pytest.approx(s[f"p95_{key}_ms"], rel=0.025)
    point = json.loads(json.dumps(history_point(snap, {"users": 3})))
    assert point["users"] == 3 and len(point["ttft"]) == 3


def _state_size(agg: LiveAggregate) -> tuple[int, ...]:
    slots = agg.window._slots
    return (
        agg.window.size,
        sum(h.num_buckets for h in agg.overall.values()),
        sum(h.counts.size for h in agg.buckets.values()),
        sum(h.num_buckets for s in slots for h in s.hists.values()),
        len(agg.requests),
    )


def test_memory_does_not_grow_with_requests() -> None:
    clock = Clock()
    agg = LiveAggregate(window_s=5, clock=clock)
    sizes = []
    for n in (100, 10_000):
        for row in random_rows(n, seed=n):
            clock.t += 0.01
            agg.add(row)
        sizes.append(_state_size(agg))
    assert sizes[0] == sizes[1]
    # per-second error counts hold at most one entry per failure class per slot
    assert sum(len(s.errors) for s in agg.window._slots) <= 2 * agg.window.size
    assert agg.overall["itl"].count > 50_000


def test_history_is_bounded_and_incremental() -> None:
    history = History(maxlen=5)
    for t in range(12):
        history.append({"t": float(t)})
    assert len(history) == 5 and history.maxlen == 5
    assert [p["t"] for p in history.since()] == [7, 8, 9, 10, 11]
    assert [p["t"] for p in history.since(9.0)] == [10, 11]


def test_non_finite_and_missing_values_are_skipped() -> None:
    agg = LiveAggregate()
    agg.add({"outcome": "ok", "ttft": None, "e2e": float("nan"), "itl": None, "completion_tokens": 3})
    assert agg.completed == 1 and agg.generation_tokens == 3
    assert all(h.count == 0 for h in agg.buckets.values())
    assert np.isfinite(agg.recent()["output_tokens_per_s"])


def test_incomplete_requests_are_counted_apart_from_failures() -> None:
    """In flight when the load stopped: the live totals agree with the summary (issue 8 §2)."""
    agg = LiveAggregate(clock=Clock())
    cut = {**ok_row(), "outcome": "incomplete", "tpot": None}
    rows = [ok_row(), failed_row(), cut]
    for row in rows:
        agg.add(row)
    snap = agg.snapshot()
    summary = summarize(rows, 1.0)
    assert (snap["totals"]["completed"], snap["totals"]["failed"], snap["totals"]["incomplete"]) == (1, 1, 1)
    assert (summary["completed"], summary["failed"], summary["incomplete"]) == (1, 1, 1)
    assert snap["errors"] == summary["errors"] == {"http_5xx": 1}
    assert snap["recent"]["errors"] == {"http_5xx": 1}
    assert snap["latency"]["ttft"]["count"] == 1  # no latency from a cut request


def test_a_request_the_client_stalled_inside_counts_without_its_latencies() -> None:
    rows = random_rows(200)
    for row in rows[::10]:
        row["client_stall_s"] = 1.5
    agg = LiveAggregate()
    for row in rows:
        agg.add(row)
    s = summarize(rows, 10.0)
    assert agg.completed == s["completed"] and agg.generation_tokens == s["total_output_tokens"]
    timed = [r for r in rows if r["outcome"] == "ok" and not r.get("client_stall_s")]
    assert s["client_stalled"] == s["completed"] - len(timed) > 0
    assert agg.buckets["ttft"].count == len(timed) == agg.overall["e2e"].count
    assert agg.buckets["itl"].count == sum(len(r["itl"]) for r in timed)
