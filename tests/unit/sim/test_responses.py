"""The simulator's ``/v1/responses``: a Responses request read as the chat request it amounts to."""

from __future__ import annotations

import pytest

from llm_locust.sim.responses import as_chat_body
from llm_locust.sim.tokens import PromptError


def test_input_instructions_and_the_output_limit_become_the_chat_request() -> None:
    messages = [{"role": "user", "content": "hi"}]
    body = {
        "model": "m",
        "input": messages,
        "instructions": "be brief",
        "max_output_tokens": 7,
        "stream": True,
    }
    assert as_chat_body(body) == {
        "model": "m",
        "messages": [{"role": "system", "content": "be brief"}, *messages],
        "max_tokens": 7,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def test_a_text_input_is_one_user_message_and_usage_is_always_reported() -> None:
    chat = as_chat_body({"input": "hello"})
    assert chat["messages"] == [{"role": "user", "content": "hello"}] and "max_tokens" not in chat
    assert chat["stream"] is False and chat["stream_options"] == {"include_usage": True}


def test_flat_function_tools_are_read_in_the_chat_form() -> None:
    flat = {"type": "function", "name": "f", "parameters": {"type": "object"}}
    chat = as_chat_body({"input": "hi", "tools": [flat, {"type": "web_search"}]})
    assert chat["tools"] == [
        {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}},
        {"type": "web_search"},  # not a function: as given
    ]


def test_an_agents_input_items_are_the_chat_history_they_stand_for() -> None:
    from llm_locust.protocol.responses import input_items

    call = {"id": "call_s_0", "type": "function", "function": {"name": "run_tool", "arguments": "{}"}}
    history = [
        {"role": "user", "content": "do it"},
        {"role": "assistant", "content": "calling", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_s_0", "content": "the result"},
        {"role": "assistant", "content": "", "tool_calls": [{**call, "id": "call_s_1"}]},
        {"role": "tool", "tool_call_id": "call_s_1", "content": "more"},
    ]
    chat = as_chat_body({"input": input_items(history)})["messages"]
    assert chat[:3] == history[:3]
    # a call without text is an assistant message of its own, no text
    assert chat[3] == {"role": "assistant", "content": None, "tool_calls": [{**call, "id": "call_s_1"}]}
    assert chat[4] == history[4]


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"role": "tool", "tool_call_id": "c", "content": "x"}, "function_call_output"),
        ({"role": "assistant", "content": "x", "tool_calls": []}, "function_call item"),
        ({"type": "computer_call"}, "computer_call"),
        ("text", "object"),
    ],
)
def test_a_chat_only_input_item_is_refused(item: object, message: str) -> None:
    with pytest.raises(PromptError, match=message):
        as_chat_body({"input": [{"role": "user", "content": "hi"}, item]})


def test_input_text_parts_count_as_text() -> None:
    parts = [{"type": "input_text", "text": "hello"}]
    chat = as_chat_body({"input": [{"type": "message", "role": "user", "content": parts}]})
    assert chat["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]
