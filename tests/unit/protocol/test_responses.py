"""The Responses API's stream (``--endpoint responses``) onto the record, as vLLM serves it.

``streams/vllm_responses_reasoning.sse`` is a vLLM-shaped ``/v1/responses`` stream written from
vLLM's event classes (``vllm/entrypoints/openai/responses/simple_streaming_events.py``) and
OpenAI's streaming reference: ``event:`` and ``data:`` per event, a reasoning item then a message
item, ``response.completed`` with the usage, no ``[DONE]``. Each event is fed as its own read at a
known time; the expected marks are computed here from the file's events.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import pytest

from llm_locust.protocol.counts import prompt_texts, settle_counts
from llm_locust.protocol.openai import build_body, event_parser
from llm_locust.protocol.responses import parse_response_event
from llm_locust.protocol.sse import PayloadError
from llm_locust.protocol.stream import Failure, Stream, StreamEvents
from llm_locust.record import RequestRecord

FIXTURE = Path(__file__).parent / "streams" / "vllm_responses_reasoning.sse"
T_SENT = 100.0


def _events(text: str) -> list[bytes]:
    return [block.encode() + b"\n\n" for block in text.split("\n\n") if block]


def _type(event: bytes) -> str:
    return json.loads(event.split(b"data: ", 1)[1])["type"]


def _feed(events: list[bytes], *, step: float = 0.1) -> tuple[RequestRecord, Stream, bool]:
    record = RequestRecord("r", 0.0, t_sent=T_SENT)
    stream = Stream(parts=[], reasoning=[])
    reader = StreamEvents(record, stream, parse_response_event)
    stopped = False
    for i, event in enumerate(events, 1):
        if reader.feed(event, T_SENT + step * i):
            stopped = True
            break
    reader.end(T_SENT + step * (len(events) + 1))
    record.status = 200
    settle_counts(record, stream.usage)  # as the client does once the stream ended
    return record, stream, stopped


def test_a_vllm_responses_stream_gives_the_chat_record_fields() -> None:
    events = _events(FIXTURE.read_text())
    kinds = [_type(e) for e in events]
    deltas = [json.loads(e.split(b"data: ", 1)[1]) for e in events]
    text = [d["delta"] for d in deltas if d["type"] == "response.output_text.delta"]
    thought = [d["delta"] for d in deltas if d["type"] == "response.reasoning_text.delta"]
    usage = deltas[-1]["response"]["usage"]
    first_token = 1 + kinds.index("response.reasoning_text.delta")  # reads are 1-based, 0.1 s apart
    first_text = 1 + kinds.index("response.output_text.delta")
    token_reads = [i for i, k in enumerate(kinds, 1) if k.endswith("_text.delta")]

    record, stream, stopped = _feed(events)

    assert stopped  # response.completed ends the stream as [DONE] does
    assert record.finish_reason == "stop" and record.ok
    assert record.ttft == pytest.approx(0.1 * first_token)  # any token, as chat's ttft
    assert record.ttft_visible == pytest.approx(0.1 * first_text)  # the first output text delta
    assert record.chunk_times == pytest.approx([T_SENT + 0.1 * i for i in token_reads])
    assert "".join(stream.parts or []) == "".join(thought + text)
    assert stream.reasoning == thought and record.reasoning_chunks == len(thought)
    assert stream.first_visible == text[0]
    assert record.completion_tokens == usage["output_tokens"] and record.token_source == "usage"
    assert record.prompt_tokens == usage["input_tokens"]
    assert record.cached_tokens == usage["input_tokens_details"]["cached_tokens"]
    assert record.reasoning_tokens == usage["output_tokens_details"]["reasoning_tokens"]
    assert stream.usage == {
        "prompt_tokens": usage["input_tokens"],
        "completion_tokens": usage["output_tokens"],
        "total_tokens": usage["total_tokens"],
        "prompt_tokens_details": usage["input_tokens_details"],
        "completion_tokens_details": usage["output_tokens_details"],
    }


def _event(kind: str, **fields: object) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()


def _completed(output: list[dict], kind: str = "response.completed", **response: object) -> bytes:
    usage = {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8}
    return _event(kind, response={"id": "resp_1", "output": output, "usage": usage, **response})


def test_a_function_call_is_timed_as_a_chat_tool_call() -> None:
    item = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": "",
    }
    events = [
        _event("response.created", response={"id": "resp_1"}),
        _event("response.output_item.added", output_index=0, item=item),
        _event("response.function_call_arguments.delta", output_index=0, item_id="fc_1", delta='{"city": '),
        _event("response.function_call_arguments.delta", output_index=0, item_id="fc_1", delta='"Paris"}'),
        _event("response.function_call_arguments.done", output_index=0, item_id="fc_1", arguments="{}"),
        _completed([{**item, "arguments": '{"city": "Paris"}'}]),
    ]
    record, _, stopped = _feed(events)
    row = record.to_json()
    assert stopped and record.finish_reason == "tool_calls" and record.ok
    assert row["tool_calls"] == 1 and row["tool_args_json_ok"] is True
    assert row["time_to_first_tool_call"] == pytest.approx(0.2)  # the item's opening, read 2
    assert row["time_to_tool_args_complete"] == pytest.approx(0.4)  # the last arguments piece, read 4
    assert row["ttft"] is None and row["chunks"] == 0


@pytest.mark.parametrize("kind", ["response.incomplete", "response.completed"])  # OpenAI's, vLLM's
def test_an_incomplete_response_ends_with_length(kind: str) -> None:
    events = [
        _event("response.output_text.delta", output_index=0, delta="Hi"),
        _completed([], kind, status="incomplete", incomplete_details={"reason": "max_output_tokens"}),
    ]
    record, stream, _ = _feed(events)
    assert record.finish_reason == "length" and stream.usage is not None
    assert stream.usage["completion_tokens"] == 3


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (
            _completed([], "response.failed", error={"code": "server_error", "message": "engine died"}),
            "engine died",
        ),
        (
            b'event: error\ndata: {"type": "error", "code": "x", "message": "too many tokens"}\n\n',
            "too many tokens",
        ),
    ],
)
def test_a_failed_response_is_a_stream_error_with_its_message(event: bytes, message: str) -> None:
    with pytest.raises(Failure) as exc:
        _feed([_event("response.output_text.delta", output_index=0, delta="Hi"), event])
    assert exc.value.outcome == "stream_error" and message in exc.value.message


def test_a_stream_cut_before_response_completed_is_broken() -> None:
    with pytest.raises(Failure) as exc:
        _feed([_event("response.output_text.delta", output_index=0, delta="Hi")])
    assert exc.value.outcome == "stream_broken"


@pytest.mark.parametrize(
    "data",
    [
        '{"type": "response.output_text.delta", "delta": {"content": "We"}}',  # a map, not a string
        '{"type": "response.function_call_arguments.delta", "output_index": "0", "delta": "{"}',
        '{"type": "response.completed", "response": null}',
        '{"type": "response.completed", "response": {"usage": {"input_tokens": 3, "output_tokens": -1}}}',
        "[1, 2]",
    ],
)
def test_a_malformed_event_is_a_payload_error(data: str) -> None:
    with pytest.raises(PayloadError):
        parse_response_event(data)


def test_the_request_body_is_a_responses_request() -> None:
    class Config:
        endpoint, model, temperature, extra_body = "responses", "m", 0.5, {"top_p": 0.9}
        tools = None

    class Spec:
        messages: ClassVar = [{"role": "user", "content": "hello"}]
        prompt, max_tokens, extra_body = "hello", 32, {}

    body = build_body(Config(), Spec())
    assert body == {
        "model": "m",
        "stream": True,
        "store": False,
        "input": [{"role": "user", "content": "hello"}],
        "max_output_tokens": 32,
        "temperature": 0.5,
        "top_p": 0.9,
    }
    assert prompt_texts(body) == ["hello"] and prompt_texts({"input": "hi there"}) == ["hi there"]
    assert (
        event_parser("responses") is parse_response_event and event_parser("chat") is not parse_response_event
    )


def test_tools_are_offered_flat_as_the_responses_api_takes_them() -> None:
    from llm_locust.protocol.tools import ToolOffer

    definition = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}

    class Config:
        endpoint, model, temperature, extra_body = "responses", "m", None, {}
        tools = ToolOffer([definition], share=0.5)  # every second request

    class Spec:
        messages: ClassVar = [{"role": "user", "content": "hello"}]
        prompt, max_tokens, extra_body = "hello", None, {}

    bodies = [build_body(Config(), Spec()) for _ in range(4)]
    assert [("tools" in b) for b in bodies] == [False, True, False, True]
    assert bodies[1]["tools"] == [{"type": "function", "name": "f", "parameters": {"type": "object"}}]


def test_an_agents_history_is_sent_as_responses_input_items() -> None:
    # an agent loop's second step (llm_locust.workload.agent): the task, the reply with its tool
    # call, the tool's result; the Responses API takes no ``tool`` role and no ``tool_calls``
    call = {"id": "call_s_0", "type": "function", "function": {"name": "run_tool", "arguments": "{}"}}
    history = [
        {"role": "user", "content": "do it"},
        {"role": "assistant", "content": "calling", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_s_0", "content": "the result"},
    ]

    class Config:
        endpoint, model, temperature, extra_body = "responses", "m", None, {}
        tools = None

    class Spec:
        messages: ClassVar = history
        prompt, max_tokens, extra_body = "", 8, {}

    body = build_body(Config(), Spec())
    assert body["input"] == [
        {"role": "user", "content": "do it"},
        {"role": "assistant", "content": "calling"},
        {"type": "function_call", "call_id": "call_s_0", "name": "run_tool", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_s_0", "output": "the result"},
    ]
    assert prompt_texts(body) == ["do it", "calling", "the result"]  # the tool's output is prompt text
    assert Spec.messages[1]["tool_calls"] == [call]  # the workload's history is left as it was
