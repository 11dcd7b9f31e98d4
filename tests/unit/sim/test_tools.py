"""The simulator's tool call: which tool, its argument pieces, and when it answers."""

from __future__ import annotations

import json
import random

from llm_locust.config.tools import BUILTIN_TOOLS
from llm_locust.sim.tools import decide_tool_call


def _body(tools: object) -> dict:
    return {"messages": [{"role": "user", "content": "hi"}], "tools": tools}


def test_the_pieces_join_into_json_naming_the_first_required_parameter() -> None:
    for n in (1, 2, 3, 17):
        call = decide_tool_call(_body(list(BUILTIN_TOOLS)), random.Random(1), 1.0, n, "c1", 5)
        assert call is not None and call.name == "get_weather" and len(call.pieces) == n
        args = json.loads("".join(call.pieces))
        assert list(args) == ["city"] and len(args["city"].split()) == max(0, n - 2)
        head = call.delta(0)["tool_calls"][0]
        assert head["id"] == "c1" and head["function"]["name"] == "get_weather"
        if n > 1:
            assert call.delta(1) == {"tool_calls": [{"index": 0, "function": {"arguments": call.pieces[1]}}]}


def test_no_tools_no_call_and_the_rate_is_a_share() -> None:
    rng = random.Random(7)
    assert decide_tool_call(_body([]), rng, 1.0, 4, "c", 0) is None
    assert decide_tool_call({"messages": []}, rng, 1.0, 4, "c", 0) is None
    assert decide_tool_call(_body(list(BUILTIN_TOOLS)), rng, 0.0, 4, "c", 0) is None
    calls = sum(
        decide_tool_call(_body(list(BUILTIN_TOOLS)), rng, 0.3, 4, "c", 0) is not None for _ in range(2000)
    )
    assert 520 <= calls <= 680  # 600 expected; 5 sigma is about 100


def test_a_tool_without_parameters_gets_input() -> None:
    call = decide_tool_call(
        _body([{"type": "function", "function": {"name": "ping"}}]), random.Random(), 1, 3, "c", 0
    )
    assert call is not None and json.loads("".join(call.pieces)) == {"input": " " + call.pieces[1].strip()}
