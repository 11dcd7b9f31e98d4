"""Streamed tool calls: pieces, parallel calls, bad arguments, and a tool call as a whole answer."""

from __future__ import annotations

import json

import pytest

from llm_locust.config.tools import BUILTIN_TOOLS, load_tools
from llm_locust.protocol.stream import Failure, Stream, StreamEvents
from llm_locust.protocol.tools import ToolOffer
from llm_locust.record import RequestRecord


def _event(delta: dict, finish: str | None = None) -> bytes:
    chunk = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(chunk)}\n\n".encode()


def _call(index: int, args: str, name: str | None = None) -> dict:
    function: dict = {"arguments": args}
    if name is not None:
        function["name"] = name
    piece: dict = {"index": index, "function": function}
    if name is not None:
        piece.update(id=f"call_{index}", type="function")
    return {"tool_calls": [piece]}


def _run(reads: list[tuple[float, bytes]]) -> RequestRecord:
    record = RequestRecord("r", 0.0, t_sent=10.0)
    events = StreamEvents(record, Stream())
    for now, body in reads:
        events.feed(body, now)
    events.end(reads[-1][0])
    return record


def test_arguments_in_pieces_time_the_first_delta_and_the_last_piece() -> None:
    record = _run(
        [
            (10.5, _event({"role": "assistant", **_call(0, "", "get_weather")})),
            (10.6, _event(_call(0, '{"city": '))),
            (10.7, _event(_call(0, '"Paris"'))),
            (10.8, _event(_call(0, "}"))),
            (10.9, _event({}, "tool_calls")),
            (11.0, b"data: [DONE]\n\n"),
        ]
    )
    assert record.ok and record.finish_reason == "tool_calls"
    row = record.to_json()
    assert row["tool_calls"] == 1
    assert row["time_to_first_tool_call"] == pytest.approx(0.5)
    assert row["time_to_tool_args_complete"] == pytest.approx(0.8)
    assert row["tool_args_json_ok"] is True
    # a tool call is not content: no TTFT, no chunks, no ITL
    assert row["ttft"] is None and row["chunks"] == 0 and row["itl"] == []


def test_two_parallel_calls_counted_and_each_parsed() -> None:
    both = {
        "tool_calls": [
            {
                "index": 0,
                "id": "a",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"ci'},
            },
            {"index": 1, "id": "b", "type": "function", "function": {"name": "search_docs", "arguments": ""}},
        ]
    }
    record = _run(
        [
            (10.2, _event(both)),
            (10.3, _event(_call(1, '{"query": "gpus"}'))),
            (10.4, _event(_call(0, 'ty": "Oslo"}'))),
            (10.5, _event({}, "tool_calls")),
        ]
    )
    row = record.to_json()
    assert row["tool_calls"] == 2
    assert row["time_to_first_tool_call"] == pytest.approx(0.2)
    assert row["time_to_tool_args_complete"] == pytest.approx(0.4)
    assert row["tool_args_json_ok"] is True


def test_bad_json_arguments_are_recorded_not_failed() -> None:
    record = _run(
        [
            (10.1, _event(_call(0, '{"city": "Par', "get_weather"))),
            (10.2, _event(_call(1, '{"query": "x"}', "search_docs"))),
            (10.3, _event({}, "tool_calls")),
        ]
    )
    assert record.ok
    assert record.tool_calls == 2 and record.tool_args_json_ok is False


def test_text_then_a_tool_call_keeps_ttft_on_the_text() -> None:
    record = _run(
        [
            (10.1, _event({"content": "Let me check."})),
            (10.4, _event(_call(0, "{}", "get_weather"))),
            (10.5, _event({}, "tool_calls")),
        ]
    )
    assert record.to_json()["time_to_first_tool_call"] == pytest.approx(0.4)
    assert record.chunk_times == [10.1] and record.tool_calls == 1


def test_no_text_and_no_tool_call_is_still_an_empty_response() -> None:
    with pytest.raises(Failure) as failed:
        _run([(10.1, _event({}, "stop"))])
    assert failed.value.outcome == "empty_response"


def test_tool_calls_of_the_wrong_shape_are_a_bad_payload() -> None:
    with pytest.raises(Failure) as failed:
        _run([(10.1, _event({"tool_calls": "get_weather"}, "tool_calls"))])
    assert failed.value.outcome == "bad_payload"


def test_the_row_round_trips() -> None:
    record = _run([(10.3, _event(_call(0, "{}", "get_weather"))), (10.4, _event({}, "tool_calls"))])
    row = record.to_json()
    again = RequestRecord.from_json(row).to_json()
    for key in ("tool_calls", "time_to_first_tool_call", "time_to_tool_args_complete", "tool_args_json_ok"):
        assert again[key] == pytest.approx(row[key])


def test_tool_share_spreads_the_offers_evenly() -> None:
    offer = ToolOffer(BUILTIN_TOOLS, 0.25)
    offered = [offer.next() for _ in range(8)]
    assert offered == [False, False, False, True, False, False, False, True]
    assert all(ToolOffer(BUILTIN_TOOLS).next() for _ in range(3))


def test_load_tools_json_yaml_and_bad_files(tmp_path) -> None:
    names = [t["function"]["name"] for t in load_tools("builtin")]
    assert names == ["get_weather", "search_docs"]
    one = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    (tmp_path / "t.json").write_text(json.dumps(one))
    (tmp_path / "t.yaml").write_text("- function:\n    name: lookup\n    parameters: {type: object}\n")
    assert load_tools(str(tmp_path / "t.json")) == one
    assert load_tools(str(tmp_path / "t.yaml")) == one
    (tmp_path / "bad.yaml").write_text("name: lookup\n")
    with pytest.raises(ValueError, match="non-empty list"):
        load_tools(str(tmp_path / "bad.yaml"))
    with pytest.raises(ValueError, match="cannot read"):
        load_tools(str(tmp_path / "missing.json"))


def test_the_body_offers_the_tools_on_the_share_of_requests() -> None:
    from types import SimpleNamespace

    from llm_locust.protocol.openai import build_body

    spec = SimpleNamespace(messages=[{"role": "user", "content": "hi"}], max_tokens=8, extra_body={})
    config = SimpleNamespace(
        model="m", endpoint="chat", temperature=None, extra_body={}, tools=ToolOffer(BUILTIN_TOOLS, 0.5)
    )
    bodies = [build_body(config, spec) for _ in range(4)]
    assert ["tools" in body for body in bodies] == [False, True, False, True]
    assert [t["function"]["name"] for t in bodies[1]["tools"]] == ["get_weather", "search_docs"]
    config.tools = None
    assert "tools" not in build_body(config, spec)


def test_tool_choice_goes_with_the_tools_a_name_as_that_function() -> None:
    from types import SimpleNamespace

    from llm_locust.protocol.openai import build_body

    spec = SimpleNamespace(messages=[{"role": "user", "content": "hi"}], max_tokens=8, extra_body={})
    offer = ToolOffer(BUILTIN_TOOLS, 0.5, "get_weather")
    config = SimpleNamespace(model="m", endpoint="chat", temperature=None, extra_body={}, tools=offer)
    bodies = [build_body(config, spec) for _ in range(2)]
    assert "tool_choice" not in bodies[0]  # no tools offered: no choice among them
    assert bodies[1]["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    config.tools = ToolOffer(BUILTIN_TOOLS, 1.0, "required")
    assert build_body(config, spec)["tool_choice"] == "required"
    config.tools = ToolOffer(BUILTIN_TOOLS)
    assert "tool_choice" not in build_body(config, spec)  # none asked: none sent
    config.endpoint, config.tools = "responses", ToolOffer(BUILTIN_TOOLS, 1.0, "search_docs")
    assert build_body(config, spec)["tool_choice"] == {"type": "function", "name": "search_docs"}
