"""Metric math on known timestamps: TTFT, TPOT, ITL, E2E, including 0, 1 and 2 tokens."""

from __future__ import annotations

import pytest

from llm_locust.record import RequestRecord
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
