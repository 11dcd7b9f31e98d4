"""``report --compare``: each difference's 95 % interval (issue 24 §3), checked against intervals
computed here from the definition (exact binomial sums, no code of the module under test)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from llm_locust.report.differences import Kind, Scope, difference
from llm_locust.results.columns import Columns
from llm_locust.results.summary_model import Stats

Z95 = 1.959963984540054  # the standard normal's 97.5 % point


def _rows(ttft: np.ndarray, tokens: int = 10) -> list[dict]:
    return [
        {
            "request_id": str(i),
            "start_time": 1000.0 + i * 0.01,
            "outcome": "ok",
            "ttft": float(t),
            "tpot": 0.01,
            "e2e": float(t) + 0.09,
            "completion_tokens": tokens,
            "prompt_tokens": 100,
            "stage": 0,
            "warmup": False,
        }
        for i, t in enumerate(ttft)
    ]


def _scope(ttft: np.ndarray, entry: dict) -> Scope:
    return Scope(Stats.of(entry), Columns.from_rows(_rows(ttft)).measured_part())


def _reference_bounds(values: np.ndarray, q: float, level: float) -> tuple[float | None, float | None]:
    """[x_(l), x_(u)] (1-based): l the largest with P(B <= l-1) <= tail, u the smallest with
    P(B <= u-1) >= 1 - tail, B ~ Binomial(n, q), tail = (1 - level) / 2."""
    x, n, tail = np.sort(values), values.size, (1 - level) / 2
    cdf, total = [], 0.0
    for k in range(n + 1):
        total += math.comb(n, k) * q**k * (1 - q) ** (n - k)
        cdf.append(total)
    lows = [r for r in range(1, n + 1) if cdf[r - 1] <= tail]
    highs = [u for u in range(1, n + 1) if cdf[u - 1] >= 1 - tail]
    return (float(x[lows[-1] - 1]) if lows else None), (float(x[highs[0] - 1]) if highs else None)


def test_a_percentile_difference_has_the_bonferroni_order_statistic_interval() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.uniform(0.10, 0.20, 400), rng.uniform(0.10, 0.20, 400) + 0.030
    pa, pb = np.percentile(a * 1000, 95), np.percentile(b * 1000, 95)
    diff = difference(
        "p95_ttft_ms", Kind.PERCENTILE, _scope(a, {"p95_ttft_ms": pa}), _scope(b, {"p95_ttft_ms": pb})
    )
    lo_a, hi_a = _reference_bounds(a * 1000, 0.95, 0.975)
    lo_b, hi_b = _reference_bounds(b * 1000, 0.95, 0.975)
    assert diff.delta == pytest.approx(pb - pa)
    assert diff.lo == pytest.approx(lo_b - hi_a) and diff.hi == pytest.approx(hi_b - lo_a)
    assert diff.lo > 0 and diff.verdict == "B higher"  # 30 ms slower, 400 requests each


def test_the_same_distribution_is_no_significant_difference_and_a_short_p99_is_open() -> None:
    rng = np.random.default_rng(4)
    a, b = rng.uniform(0.10, 0.20, 300), rng.uniform(0.10, 0.20, 300)
    entry = {"p50_ttft_ms": 1.0, "p99_ttft_ms": 1.0}
    same = difference("p50_ttft_ms", Kind.PERCENTILE, _scope(a, entry), _scope(b, entry))
    assert same.lo < 0 < same.hi and same.verdict == "no significant difference"
    # 300 requests cannot bound a P99 from above (0.99^300 = 4.9 % > 1.25 %)
    p99 = difference("p99_ttft_ms", Kind.PERCENTILE, _scope(a, entry), _scope(b, entry))
    assert p99.lo is None and p99.hi is None and p99.verdict == "too few requests to tell"


def test_rates_have_a_compound_poisson_interval_and_counts_none() -> None:
    a, b = np.full(400, 0.1), np.full(900, 0.1)
    ea = {"request_throughput": 4.0, "output_throughput": 40.0, "completed": 400}
    eb = {"request_throughput": 9.0, "output_throughput": 90.0, "completed": 900}
    sa, sb = _scope(a, ea), _scope(b, eb)
    req = difference("request_throughput", Kind.RATE, sa, sb)
    half = Z95 * math.sqrt(4.0**2 / 400 + 9.0**2 / 900)  # Poisson: sd = rate / sqrt(n)
    assert (req.lo, req.hi) == (pytest.approx(5.0 - half), pytest.approx(5.0 + half))
    tokens = difference("output_throughput", Kind.RATE, sa, sb)
    # 10 tokens each: sd = rate * sqrt(n * 100) / (10 n) = rate / sqrt(n), ten times the rate
    assert tokens.hi - tokens.lo == pytest.approx(2 * Z95 * math.sqrt(40.0**2 / 400 + 90.0**2 / 900))
    count = difference("completed", Kind.COUNT, sa, sb)
    assert count.delta == 500 and not count.bounded and count.verdict == ""


def test_intervals_are_deterministic_and_fast_for_1e5_records() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.lognormal(-2.0, 0.5, 100_000), rng.lognormal(-2.0, 0.5, 100_000) * 1.01
    entry = {f"p{q}_{m}_ms": 1.0 for q in (50, 95, 99) for m in ("ttft", "e2el", "tpot")}
    sa, sb = _scope(a, entry), _scope(b, entry)
    began = time.perf_counter()
    first = [difference(k, Kind.PERCENTILE, sa, sb) for k in entry]
    elapsed = time.perf_counter() - began
    assert first == [difference(k, Kind.PERCENTILE, sa, sb) for k in entry]
    assert elapsed < 2.0, elapsed  # nine percentile differences over 2 x 1e5 records
    p99 = first[2]
    assert p99.lo is not None and p99.hi is not None and p99.hi - p99.lo < 40  # bounded, ms


def test_itl_takes_the_requests_as_the_independent_units() -> None:
    rng = np.random.default_rng(6)
    gaps = [rng.uniform(0.005, 0.015, 20) for _ in range(200)]
    rows = _rows(np.full(200, 0.1))
    for row, g in zip(rows, gaps, strict=True):
        row["itl"] = [float(x) for x in g]
    scope = Scope(Stats.of({"p50_itl_ms": 10.0}), Columns.from_rows(rows).measured_part())
    diff = difference("p50_itl_ms", Kind.ITL, scope, scope)
    pooled = np.concatenate(gaps) * 1000
    lo_rank, hi_rank = _reference_bounds(np.arange(200.0), 0.5, 0.975)  # ranks of 200 requests
    lo, hi = (float(np.quantile(pooled, r / 199)) for r in (lo_rank, hi_rank))
    assert (diff.lo, diff.hi) == (pytest.approx(lo - hi), pytest.approx(hi - lo))
    # with the 4,000 gaps as units the interval would be about sqrt(20) times narrower
    half = 2.2414 * 0.5 / math.sqrt(pooled.size)  # normal ranks at 97.5 %, 4,000 gaps
    gap_lo, gap_hi = np.quantile(pooled, [0.5 - half, 0.5 + half])
    assert (hi - lo) > 3 * (gap_hi - gap_lo)
