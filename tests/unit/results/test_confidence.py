"""Confidence intervals and the pass / fail / inconclusive rule (results.confidence, slo)."""

from __future__ import annotations

import numpy as np
import pytest

from llm_locust.load.search import Verdict
from llm_locust.record import RequestRecord
from llm_locust.results.confidence import (
    mean_interval,
    min_samples,
    quantile_interval,
    t_quantile,
    verdict,
    wilson_interval,
)
from llm_locust.results.slo import evaluate, parse_slo


def _records(ttfts: np.ndarray) -> list[RequestRecord]:
    out = []
    for i, ttft in enumerate(ttfts):
        out.append(
            RequestRecord(
                request_id=str(i),
                wall_start=float(i),
                t_sent=0.0,
                t_first_token=float(ttft),
                t_end=float(ttft) + 1.0,
                chunk_times=[float(ttft), float(ttft) + 1.0],
                completion_tokens=10,
            )
        )
    return out


def test_minimum_samples_per_percentile() -> None:
    # q^n <= 2.5 %: the smallest sample whose largest value can bound the quantile from above
    assert [min_samples(q) for q in (0.5, 0.9, 0.95, 0.99)] == [6, 36, 72, 368]
    assert 0.99**368 <= 0.025 < 0.99**367


def test_p99_over_40_requests_is_inconclusive_then_decided_with_enough() -> None:
    rng = np.random.default_rng(7)
    spec = parse_slo("ttft_p99<=2s")
    small = evaluate(spec, _records(rng.uniform(0.1, 0.5, 40)), 10.0)
    assert small.passed  # the point estimate is far below 2 s ...
    assert small.lines[0].interval[1] is None  # ... but 40 requests cannot bound a P99 from above
    assert small.lines[0].verdict == "inconclusive" and small.verdict == "inconclusive"
    assert small.to_json()["verdict"] == "inconclusive"
    enough = evaluate(spec, _records(rng.uniform(0.1, 0.5, 1000)), 10.0)
    assert enough.lines[0].verdict == "pass" and enough.verdict == "pass"
    lo, hi = enough.lines[0].interval
    assert lo <= enough.lines[0].measured <= hi <= 0.5
    slow = evaluate(spec, _records(rng.uniform(2.5, 3.0, 1000)), 10.0)
    assert slow.lines[0].verdict == "fail" and slow.verdict == "fail"


def test_small_sample_can_still_fail() -> None:
    # 40 requests all over the threshold: the lower bound of the P99 already misses it
    result = evaluate(parse_slo("ttft_p99<=1s"), _records(np.full(40, 3.0)), 10.0)
    assert result.lines[0].verdict == "fail"


def test_straddling_interval_is_inconclusive() -> None:
    values = np.linspace(0.0, 2.0, 1001)  # the P50 is 1.0 s, its interval about 0.94 .. 1.06 s
    lo, hi = quantile_interval(values, 0.5)
    assert lo < 1.0 < hi and hi - lo < 0.15
    assert verdict("<=", 1.0, (lo, hi)) == "inconclusive"
    assert verdict("<=", 1.2, (lo, hi)) == "pass" and verdict("<=", 0.8, (lo, hi)) == "fail"
    # the judged kinds are the one enum's members, not strings that spell them
    assert (
        verdict("<=", 1.2, (lo, hi)) is Verdict.PASS and verdict("<=", 1.0, (lo, hi)) is Verdict.INCONCLUSIVE
    )


def test_quantile_interval_covers_at_least_95_percent() -> None:
    rng = np.random.default_rng(11)
    for n, q in ((30, 0.5), (200, 0.95), (800, 0.99)):
        truth = -np.log(1 - q)  # exponential(1)
        hits = 0
        for _ in range(400):
            lo, hi = quantile_interval(rng.exponential(1.0, n), q)
            hits += (lo is None or lo <= truth) and hi is not None and truth <= hi
        assert hits / 400 >= 0.93, (n, q, hits)


def test_t_quantile_against_the_table() -> None:
    for df, expected in ((1, 12.706), (2, 4.303), (3, 3.182), (5, 2.571), (10, 2.228), (30, 2.042)):
        assert t_quantile(0.975, df) == pytest.approx(expected, rel=2e-3)


def test_mean_and_success_intervals() -> None:
    lo, hi = mean_interval([1.0, 2.0, 3.0, 4.0])
    assert lo == pytest.approx(2.5 - 3.182 * np.std([1, 2, 3, 4], ddof=1) / 2, rel=5e-3)
    assert hi == pytest.approx(5.0 - lo)
    assert mean_interval([1.0]) == (None, None)
    lo, hi = wilson_interval(40, 40)
    assert 0.91 < lo < 0.92 and hi == pytest.approx(1.0)
    # success>=99% over 40 successes: 100 % observed, but not shown to be >= 99 %
    result = evaluate(parse_slo("success>=99%"), _records(np.full(40, 0.1)), 1.0)
    assert result.passed and result.lines[0].verdict == "inconclusive"


def test_capacity_search_goes_past_inconclusive_stages_and_stops_at_a_failure() -> None:
    from llm_locust.results.stages import capacity_verdict

    def stage(index: int, verdict: str, note: str = "") -> dict:
        objective = {"objective": "ttft_p95<=1s", "verdict": verdict, "note": note}
        return {
            "index": index,
            "label": f"users={2**index}",
            "verdict": verdict,
            "request_throughput": float(index),
            "output_throughput": 10.0 * index,
            "slo": {"objectives": [objective]},
        }

    few = "10 values cannot bound a P95 from above (it needs at least 72)"
    stages = [stage(0, "inconclusive", few), stage(1, "pass"), stage(2, "inconclusive", few)]
    stages.append(stage(3, "fail"))
    stages.append(stage(4, "pass"))  # a lucky pass above a failure never counts
    verdict = capacity_verdict(stages)
    assert verdict["highest_passing_stage"] == 1
    assert verdict["capacity"].startswith("the system holds users=2 within the SLO")
    assert "; users=4 is inconclusive (ttft_p95<=1s: 10 values cannot bound" in verdict["capacity"]
    none = capacity_verdict([stage(0, "inconclusive", few), stage(1, "fail")])
    assert none["highest_passing_stage"] is None
    assert none["capacity"].startswith("no stage met the SLO; users=1")
