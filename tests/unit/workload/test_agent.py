"""Agent loops: a session's turns after the first carry the tool call and its result."""

from __future__ import annotations

import pytest

from llm_locust.workload.build import WorkloadError, build_workload
from llm_locust.workload.tokenizer import approx_count
from tests.unit.workload.args import workload_config


def _source(*argv: str, index: int = 0):
    return build_workload(workload_config(*argv)).source(index)


def test_each_step_appends_the_reply_with_its_tool_call_and_the_tool_result() -> None:
    src = _source(
        "--input-tokens", "30", "--output-tokens", "8", "--agent-steps", "fixed:3", "--tool-latency", "0.2"
    )
    waits = []
    for k in range(6):
        spec = src.next_request()
        assert spec.turn == k % 3 and spec.session_id == f"0-{k // 3}"
        assert spec.info["session_steps"] == 3
        last = spec.messages[-1]
        if spec.turn == 0:
            assert last["role"] == "user" and "tool_wait_s" not in spec.info
        else:
            call = spec.messages[-2]
            assert call["role"] == "assistant" and call["content"] == f"reply {k - 1}"
            (tool_call,) = call["tool_calls"]
            assert tool_call["type"] == "function" and tool_call["function"]["arguments"] == "{}"
            assert last == {"role": "tool", "tool_call_id": tool_call["id"], "content": last["content"]}
            assert spec.info["tool_wait_s"] == 0.2
        assert len(spec.messages) == 1 + 2 * spec.turn
        assert sum(approx_count(m["content"]) for m in spec.messages) == spec.target_input_tokens
        src.observe(spec, f"reply {k}", True)
        waits.append(src.tool_wait())
    assert waits == [0.2, 0.2, 0.0, 0.2, 0.2, 0.0]  # no tool after a session's last step


def test_steps_per_session_follow_the_distribution_and_a_failure_ends_the_session() -> None:
    src = _source("--prompt-tokens", "20", "--agent-steps", "uniform:2,4", index=5)
    lengths, n = [], 0
    for _ in range(300):
        spec = src.next_request()
        if spec.turn == 0 and n:
            lengths.append(n)
        n = spec.turn + 1
        assert spec.info["session_steps"] in (2, 3, 4)
        src.observe(spec, "ok", True)
        src.tool_wait()
    assert set(lengths) == {2, 3, 4}
    spec = src.next_request()
    src.observe(spec, "", False)
    assert src.tool_wait() == 0.0 and src.next_request().turn == 0


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (("--agent-steps", "fixed:3", "--multi-turn", "4"), "--multi-turn"),
        (("--agent-steps", "lognormal:mean=3"), "--agent-steps"),
    ],
)
def test_bad_agent_options_name_the_flag(argv: tuple[str, ...], flag: str) -> None:
    with pytest.raises(WorkloadError, match=flag):
        build_workload(workload_config(*argv))
