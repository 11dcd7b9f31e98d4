"""``--endpoint responses`` against the simulator's ``/v1/responses`` (vLLM's event stream).

A real ``locust`` run against ``llm-locust sim`` in fixed mode: the first token at 100 ms, then
one every 10 ms, 40 output tokens of which the first 15 are reasoning. The records have the chat
stream's fields and the numbers follow from those parameters: TTFT 100 ms (the first reasoning
delta), visible TTFT 100 + 15 x 10 = 250 ms (the first ``response.output_text.delta``), TPOT
10 ms, the token counts from ``response.completed``'s usage.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.locustproc import expect_exit, run_locust
from tests.simclient import metric
from tests.simproc import running_sim

pytestmark = pytest.mark.slow

TTFT_MS, TPOT_MS, OUTPUT, REASONING, PROMPT = 100, 10, 40, 15, 64


@pytest.mark.host_timing  # TTFT within 10 ms of the simulator's
def test_a_responses_run_times_the_event_stream_as_chat(tmp_path: Path) -> None:
    sim = ("--ttft-ms", str(TTFT_MS), "--tpot-ms", str(TPOT_MS), "--output-tokens", str(OUTPUT))
    with running_sim(*sim, "--reasoning-tokens", str(REASONING)) as url:
        res = run_locust(
            url,
            "--endpoint",
            "responses",
            "--prompt-tokens",
            str(PROMPT),
            "--max-tokens",
            str(OUTPUT),
            results_dir=tmp_path / "r",
            run_time="6s",
        )
        served = metric(url, "vllm:request_success_total", finished_reason="length")
    expect_exit(res, 0)
    s, rows = res.summary, res.rows
    ok = [r for r in rows if r["outcome"] == "ok"]
    assert s["failed"] == 0 and len(ok) == s["completed"] >= 8
    assert served >= len(ok)  # every record is a request the simulator finished
    assert abs(s["median_ttft_ms"] - TTFT_MS) <= 10, s["median_ttft_ms"]
    assert abs(s["median_ttft_visible_ms"] - (TTFT_MS + REASONING * TPOT_MS)) <= 12, s[
        "median_ttft_visible_ms"
    ]
    assert abs(s["median_tpot_ms"] - TPOT_MS) <= 1.5, s["median_tpot_ms"]
    assert {r["endpoint"] for r in rows} == {"responses"}
    assert {(r["completion_tokens"], r["token_source"]) for r in ok} == {(OUTPUT, "usage")}
    assert {(r["reasoning_tokens"], r["answer_tokens"]) for r in ok} == {(REASONING, OUTPUT - REASONING)}
    assert {r["chunks"] for r in ok} == {OUTPUT} and {r["reasoning_chunks"] for r in ok} == {REASONING}
    assert {r["finish_reason"] for r in ok} == {"length"}  # max_output_tokens reached: incomplete
    assert all(r["prompt_token_source"] == "usage" and r["prompt_tokens"] > 0 for r in ok)


def test_a_function_call_over_the_responses_api_is_timed_on_the_simulators_schedule(tmp_path: Path) -> None:
    # the call's arguments are N pieces, one a token: the function_call item and its first
    # arguments delta come at the prefill time, the last piece N - 1 decode steps later
    n = 12
    sim = ("--ttft-ms", str(TTFT_MS), "--tpot-ms", str(TPOT_MS), "--tool-call-rate", "1")
    with running_sim(*sim, "--tool-args-tokens", str(n)) as url:
        res = run_locust(
            url, "--endpoint", "responses", "--tools", "builtin", "--prompt-tokens", str(PROMPT),
            "--max-tokens", str(OUTPUT), results_dir=tmp_path / "r", run_time="6s",
        )  # fmt: skip
    expect_exit(res, 0)
    ok = [r for r in res.rows if r["outcome"] == "ok"]
    assert res.summary["failed"] == 0 and len(ok) >= 8
    for row in ok:
        assert row["tools_offered"] and row["tool_calls"] == 1 and row["tool_args_json_ok"] is True
        assert row["finish_reason"] == "tool_calls" and row["completion_tokens"] == n
        assert row["ttft"] is None and row["chunks"] == 0  # a call is not content
    first = sorted(r["time_to_first_tool_call"] * 1000 for r in ok)
    done = sorted(r["time_to_tool_args_complete"] * 1000 for r in ok)
    assert abs(first[len(first) // 2] - TTFT_MS) <= 10, first
    assert abs(done[len(done) // 2] - (TTFT_MS + (n - 1) * TPOT_MS)) <= 12, done
