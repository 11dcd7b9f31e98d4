"""Time windows over records placed on the wall clock (results.timeline, results.windows)."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from llm_locust.results.timeline import Timeline
from llm_locust.results.windows import auto_window, parse_window, window_series, windows_csv

T0 = 1_000_000.0


def _row(start: float, ttft: float, e2e: float, tokens: int, outcome: str = "ok") -> dict:
    gaps = [(e2e - ttft) / (tokens - 1)] * (tokens - 1) if outcome == "ok" else []
    return {
        "start_time": T0 + start,
        "outcome": outcome,
        "ttft": ttft if outcome == "ok" else None,
        "tpot": (e2e - ttft) / (tokens - 1) if outcome == "ok" else None,
        "e2e": e2e,
        "itl": gaps,
        "completion_tokens": tokens if outcome == "ok" else None,
    }


def test_requests_land_in_the_window_they_ended_in() -> None:
    rows = [_row(0.0, 0.1, 1.0, 11), _row(0.5, 0.2, 2.0, 11), _row(9.0, 0.1, 0.5, 11, "http_5xx")]
    rows += [_row(12.0, 0.3, 1.0, 11)]
    windows = window_series(Timeline(rows), T0, T0 + 20.0, 10.0)
    assert [w.start_s for w in windows] == [0.0, 10.0]
    first, second = windows
    assert first.requests == {"ok": 2, "http_5xx": 1} and first.error_rate == pytest.approx(1 / 3)
    assert second.requests == {"ok": 1} and second.failed == 0
    assert first.p50_ttft_ms == pytest.approx(150.0) and second.p95_ttft_ms == pytest.approx(300.0)
    assert first.p99_e2el_ms == pytest.approx(1990.0)


def test_tokens_and_in_flight_are_exact() -> None:
    # one request from 0 to 10 s, 11 chunks every 0.9 s from 1 s (the last at 10.0 s)
    rows = [_row(0.0, 1.0, 10.0, 11)]
    windows = window_series(Timeline(rows), T0, T0 + 20.0, 5.0)
    tokens = [w.output_tokens_per_s * 5.0 for w in windows]
    assert tokens == pytest.approx([5.0, 5.0, 1.0, 0.0])
    assert sum(tokens) == pytest.approx(11.0)
    assert [w.in_flight for w in windows] == pytest.approx([1.0, 1.0, 0.0, 0.0])


def test_tokens_follow_the_usage_count_when_chunks_carry_several() -> None:
    row = _row(0.0, 1.0, 3.0, 3)  # 3 chunks ...
    row["completion_tokens"] = 30  # ... carrying 30 tokens
    windows = window_series(Timeline([row]), T0, T0 + 4.0, 1.0)
    assert sum(w.output_tokens_per_s for w in windows) == pytest.approx(30.0)


def test_server_gauges_per_window() -> None:
    server = [
        {"t": T0 + 1, "kv_cache_usage": 0.2, "waiting": 0.0, "running": 2.0, "preemptions": 0.0},
        {"t": T0 + 4, "kv_cache_usage": 0.4, "waiting": 2.0, "running": 4.0, "preemptions": 1.0},
        {"t": T0 + 6, "kv_cache_usage": 0.9, "waiting": 6.0, "running": 8.0, "preemptions": 3.0},
    ]
    windows = window_series(Timeline([_row(0.0, 0.1, 1.0, 5)]), T0, T0 + 10.0, 5.0, server)
    assert (
        windows[0].number("kv_cache_usage_mean") == pytest.approx(0.3)
        and windows[0].number("waiting_max") == 2.0
    )
    assert windows[0].number("preemptions") == 1.0 and windows[1].number("preemptions") == 2.0
    assert windows[1].number("kv_cache_usage_max") == 0.9


def test_last_window_is_partial_and_csv_has_every_outcome() -> None:
    rows = [_row(0.0, 0.1, 1.0, 5), _row(3.0, 0.1, 0.2, 5, "timeout")]
    windows = window_series(Timeline(rows), T0, T0 + 7.0, 5.0)
    assert windows[-1].end_s == pytest.approx(7.0)
    table = list(csv.DictReader(io.StringIO(windows_csv(windows))))
    assert len(table) == 2 and table[0]["requests_ok"] == "1" and table[0]["requests_timeout"] == "1"
    assert table[1]["requests_ok"] == "0" and table[1]["p95_ttft_ms"] == ""


def test_window_option_and_auto_width() -> None:
    assert parse_window("auto") is None and parse_window("30s") == 30.0 and parse_window("2m") == 120.0
    with pytest.raises(ValueError, match="--window"):
        parse_window("0s")
    with pytest.raises(ValueError, match="--window"):
        parse_window("soon")
    assert auto_window(3600) == 30.0 and auto_window(600) == 30.0
    assert auto_window(120) == 5.0 and auto_window(25) == 1.0
    assert all(auto_window(d) <= d / 20 for d in (40, 100, 300, 599))
    assert np.isclose(auto_window(300), 15.0)
