"""The summary's sessions block: completed sessions, their E2E, steps, per-step TTFT, cache hits."""

from __future__ import annotations

import numpy as np
import pytest

from llm_locust.results.summary import summarize
from llm_locust.results.summary_model import RunSummary
from llm_locust.results.summary_text import format_table


def _row(sid: str, turn: int, start: float, e2e: float, ttft: float, **more: object) -> dict:
    row = {
        "request_id": f"{sid}/{turn}",
        "start_time": start,
        "outcome": "ok",
        "status": 200,
        "ttft": ttft,
        "e2e": e2e,
        "itl": [],
        "prompt_tokens": 100 * (turn + 1),
        "completion_tokens": 5,
        "token_source": "usage",
        "session_id": sid,
        "turn": turn,
        "session_steps": 3,
        "warmup": False,
        "client_stall_s": 0.0,
    }
    if turn:
        row["tool_wait_s"] = 0.5
    row.update(more)
    return row


def _session(sid: str, t0: float, cached: tuple[int, ...] | None = None, **last: object) -> list[dict]:
    rows, t = [], t0
    for k in range(3):
        extra = {"cached_tokens": cached[k]} if cached is not None else {}
        rows.append(_row(sid, k, t, 0.2 + 0.1 * k, 0.05 + 0.01 * k, **extra))
        t += 0.2 + 0.1 * k + 0.5
    rows[-1].update(last)
    return rows


def test_completed_sessions_their_time_and_steps() -> None:
    rows = []
    for i in range(6):
        rows += _session(f"s{i}", 1000.0 + 3 * i)
    rows += _session("failed", 1100.0, outcome="http_5xx", status=500)
    rows += _session("cut", 1200.0)[:2]  # the stop came before its last step
    rows.append(_row("warm", 0, 900.0, 0.2, 0.05, warmup=True))  # only a warm-up request: not started
    rows.append({**_row("x", 0, 1300.0, 0.1, 0.02), "session_id": None, "turn": None})  # no session
    s = summarize(rows, 40.0)
    block = s["sessions"]
    assert block["started"] == 8 and block["completed"] == 6
    assert block["sessions_per_s"] == pytest.approx(6 / 40.0)
    span = (0.2 + 0.5) + (0.3 + 0.5) + 0.4  # each complete session: three requests and two waits
    assert block["p50_session_e2e_s"] == pytest.approx(span)
    assert block["p99_session_e2e_s"] == pytest.approx(span)
    assert block["p50_steps"] == 3 and block["mean_tool_wait_s"] == pytest.approx(0.5)
    steps = {step["step"]: step for step in block["step_ttft_ms"]}
    assert sorted(steps) == [0, 1, 2]
    assert steps[1]["p50_ttft_ms"] == pytest.approx(60.0)
    assert steps[0]["requests"] == 8 and steps[2]["requests"] == 6  # the 5xx has no latency
    assert "prefix_cache" not in block
    typed = RunSummary.of(s).sessions  # the block is a typed field of summary.json's model
    assert (
        typed is not None
        and typed.completed == 6
        and typed.step_ttft_ms[1].p50_ttft_ms == pytest.approx(60.0)
    )
    assert RunSummary.of(s).to_json()["sessions"] == s["sessions"]
    table = format_table(RunSummary.of(s))
    assert "Completed / started:" in table and "6 / 8" in table


def test_each_sessions_token_hit_ratio() -> None:
    rows = []
    hits = [(0, 100, 200), (0, 0, 0), (0, 50, 250), (0, 100, 100)]
    for i, cached in enumerate(hits):
        rows += _session(f"s{i}", 1000.0 + 3 * i, cached)
    block = summarize(rows, 20.0)["sessions"]["prefix_cache"]
    ratios = [sum(c) / 600 for c in hits]  # prompts 100 + 200 + 300
    assert block["sessions"] == 4
    for q in (10, 50, 90):
        assert block[f"p{q}_token_hit_ratio"] == pytest.approx(np.percentile(ratios, q))
