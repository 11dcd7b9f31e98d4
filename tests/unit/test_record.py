"""Metric math on known timestamps: TTFT, TPOT, ITL, E2E, including 0, 1 and 2 tokens."""

from __future__ import annotations

import itertools
import json
import random

import pytest

from llm_locust.record import RequestRecord, json_line, rounded_gaps
from tests.records import record_from_row


def record(chunks: list[float], end: float, tokens: int | None, sent: float = 10.0) -> RequestRecord:
    r = RequestRecord(request_id="r", wall_start=1000.0, t_sent=sent, t_end=end, chunk_times=chunks)
    r.t_first_token = chunks[0] if chunks else None
    r.completion_tokens = tokens
    return r


def test_metrics_from_known_marks() -> None:
    r = record([10.2, 10.22, 10.25, 10.26], end=10.3, tokens=4)
    assert r.ttft == pytest.approx(0.2)
    assert r.e2e == pytest.approx(0.3)
    assert r.tpot == pytest.approx((0.3 - 0.2) / 3)
    assert r.itl == pytest.approx([0.02, 0.03, 0.01])


def test_tpot_uses_token_count_not_chunk_count() -> None:
    r = record([10.1, 10.2], end=10.2, tokens=11)  # a server that packs 5 tokens per chunk
    assert r.tpot == pytest.approx(0.1 / 10)


def test_zero_tokens_has_no_ttft_or_tpot() -> None:
    r = record([], end=10.5, tokens=0)
    assert r.ttft is None and r.tpot is None and r.itl == []
    assert r.e2e == pytest.approx(0.5)


def test_one_token_tpot_undefined() -> None:
    r = record([10.1], end=10.15, tokens=1)
    assert r.ttft == pytest.approx(0.1)
    assert r.tpot is None
    assert r.itl == []


def test_two_tokens() -> None:
    r = record([10.1, 10.13], end=10.14, tokens=2)
    assert r.tpot == pytest.approx(0.04)
    assert r.itl == pytest.approx([0.03])


def test_json_round_trip_keeps_metrics() -> None:
    r = record([10.2, 10.22, 10.25], end=10.3, tokens=3)
    r.t_intended = 9.9
    back = record_from_row(r.to_json())
    assert back.ttft == pytest.approx(r.ttft)
    assert back.e2e == pytest.approx(r.e2e)
    assert back.tpot == pytest.approx(r.tpot)
    assert back.itl == pytest.approx(r.itl, abs=1e-6)
    assert back.send_lag == pytest.approx(0.1)


def _marks(rng: random.Random, n: int, start: float) -> list[float]:
    """Marks with every kind of gap: ~10 ms, exact zeros, near-ties of the 6th decimal, long ones.

    Near a zero start the marks' own rounding is tiny, so a gap of k + 0.5 microseconds
    stays within 1e-11 of the tie: where ``rint(x * 1e6)`` and ``round(x, 6)`` part.
    """
    t = start
    times = [t]
    for _ in range(n - 1):
        kind = rng.random()
        if kind < 0.3:
            gap = rng.uniform(0.0, 0.05)
        elif kind < 0.5:
            gap = (rng.randint(0, 10 if start == 0.0 else 10**6) + 0.5) / 1e6  # the tie of round(x, 6)
        elif kind < 0.6:
            gap = 0.0
        elif kind < 0.7:
            gap = rng.uniform(0.0, 3600.0)
        else:
            gap = rng.expovariate(100.0)
        t += gap
        times.append(t)
    return times


@pytest.mark.parametrize("n", [1, 2, 47, 48, 200, 1024, 5000])
def test_rounded_gaps_are_exactly_round_of_each_gap(n: int) -> None:
    """The bulk path gives the very floats ``round(b - a, 6)`` gives, ties included."""
    rng = random.Random(n)
    for trial in range(40):
        times = _marks(rng, n, 0.0 if trial % 2 else rng.uniform(0.0, 1e5))
        expected = [round(b - a, 6) for a, b in itertools.pairwise(times)]
        got = rounded_gaps(times)
        assert got == expected
        assert all(type(g) is float for g in got)


def test_json_line_reads_back_as_the_row() -> None:
    record = RequestRecord(request_id="r-1", wall_start=1_700_000_000.25, t_sent=5.0, status=200)
    record.chunk_times = [5.1 + 0.0101 * i for i in range(300)]
    record.t_end, record.completion_tokens, record.token_source = 8.2, 300, "usage"
    record.extra = {"prompt": "ü 日本 \u2028", "big": 2**70, "nested": {"k": [1, 2.5e-7]}}
    row = record.to_json()
    line = json_line(row)
    assert line.endswith("\n") and line.count("\n") == 1
    assert json.loads(line) == row
