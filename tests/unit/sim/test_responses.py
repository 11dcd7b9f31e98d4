"""The simulator's ``/v1/responses``: a Responses request read as the chat request it amounts to."""

from __future__ import annotations

from llm_locust.sim.responses import as_chat_body


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
