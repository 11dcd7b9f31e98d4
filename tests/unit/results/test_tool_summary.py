"""The summary's tool-call percentiles and block follow the one inclusion rule."""

from __future__ import annotations

import numpy as np
import pytest

from llm_locust.results.summary import summarize
from llm_locust.results.summary_model import RunSummary
from llm_locust.results.summary_text import format_table


def _row(i: int, first: float, done: float, ok_json: bool, **more: object) -> dict:
    row = {
        "request_id": str(i),
        "start_time": 1000.0 + i,
        "outcome": "ok",
        "status": 200,
        "ttft": None,
        "e2e": done + 0.01,
        "itl": [],
        "completion_tokens": 9,
        "token_source": "usage",
        "finish_reason": "tool_calls",
        "tools_offered": True,
        "tool_calls": 1,
        "time_to_first_tool_call": first,
        "time_to_tool_args_complete": done,
        "tool_args_json_ok": ok_json,
        "warmup": False,
        "client_stall_s": 0.0,
    }
    row.update(more)
    return row


def test_percentiles_cover_the_timed_rows_and_the_block_the_successes() -> None:
    rng = np.random.default_rng(3)
    firsts = rng.uniform(0.05, 0.3, 40)
    rows = [_row(i, float(f), float(f) + 0.2, i % 4 != 0) for i, f in enumerate(firsts)]
    rows.append(_row(98, 9.0, 9.5, True, client_stall_s=0.4))  # stalled: counted, not timed
    rows.append(_row(99, 7.0, 7.5, True, warmup=True))  # warm-up: neither
    rows.append({**_row(97, 8.0, 8.5, True), "outcome": "http_5xx", "status": 500})
    plain = {**_row(96, 0.0, 0.0, True), "tools_offered": True, "tool_calls": 0}
    plain.update(time_to_first_tool_call=None, time_to_tool_args_complete=None, tool_args_json_ok=None)
    plain.update(ttft=0.1, e2e=0.5, itl=[0.1] * 8, finish_reason="stop")
    rows.append(plain)
    summary = summarize(rows, 60.0)
    ms = firsts * 1000
    for q in (50, 90, 99):
        assert summary[f"p{q}_time_to_first_tool_call_ms"] == pytest.approx(np.percentile(ms, q))
        assert summary[f"p{q}_time_to_tool_args_complete_ms"] == pytest.approx(np.percentile(ms + 200, q))
    block = summary["tools"]
    assert block["requests_offered"] == 42  # 40 + the stalled one + the text answer
    assert block["requests_with_tool_calls"] == 41
    assert block["args_json_ok_share"] == pytest.approx((30 + 1) / 41)
    text = format_table(RunSummary.of(summary))
    assert "Tool calls" in text and "41" in text


def test_a_run_without_tools_has_no_tool_keys() -> None:
    row = _row(0, 0.1, 0.2, True, tools_offered=False, tool_calls=0, time_to_first_tool_call=None)
    row.update(time_to_tool_args_complete=None, tool_args_json_ok=None, ttft=0.1, itl=[0.05])
    summary = summarize([row], 10.0)
    assert "tools" not in summary and "p50_time_to_first_tool_call_ms" not in summary
    assert "Tool calls" not in format_table(RunSummary.of(summary))
