"""SSE parsing: every case of the streaming-core issue, with the bytes split at awkward places."""

from __future__ import annotations

import json
import random
import re
import time

import pytest

from llm_locust.protocol.sse import (
    DONE,
    Chunk,
    EventDecoder,
    PayloadError,
    content_text,
    iter_events,
    load_payload,
    parse_chunk,
)


def splits(raw: bytes, seed: int) -> list[bytes]:
    """``raw`` cut into random pieces, 1 to 7 bytes long."""
    rng = random.Random(seed)
    out, i = [], 0
    while i < len(raw):
        n = rng.randint(1, 7)
        out.append(raw[i : i + n])
        i += n
    return out


def events_of(raw: bytes) -> list[str]:
    whole = list(iter_events([raw]))
    assert list(iter_events([bytes([b]) for b in raw])) == whole  # byte by byte
    for seed in range(20):
        assert list(iter_events(splits(raw, seed))) == whole, seed
    return whole


def chunk(delta: dict | None = None, usage: dict | None = None, choices: bool = True) -> str:
    obj: dict = {"id": "c1", "object": "chat.completion.chunk"}
    obj["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": None}] if choices else []
    if usage:
        obj["usage"] = usage
    return json.dumps(obj)


STREAM = (
    f": keep-alive\n\n"
    f"data: {chunk({'role': 'assistant', 'content': ''})}\n\n"
    f"data: {chunk({'content': 'Hel'})}\n\n"
    f"data: {chunk({'content': ''})}\n\n"
    f"data: {chunk({'reasoning_content': 'hmm'})}\n\n"
    f": another comment\n\n"
    f"data: {chunk({'content': 'lo'})}\n\n"
    f"data: {chunk(usage={'prompt_tokens': 5, 'completion_tokens': 3}, choices=False)}\n\n"
    f"data: [DONE]\n\n"
)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_full_stream_any_split(newline: str) -> None:
    raw = STREAM.replace("\n", newline).encode()
    events = events_of(raw)
    assert len(events) == 7
    assert events[-1] == DONE
    parsed = [parse_chunk(e) for e in events[:-1]]
    assert [c.text for c in parsed] == ["", "Hel", "", "hmm", "lo", ""]
    assert parsed[-1].usage == {"prompt_tokens": 5, "completion_tokens": 3}


def test_several_events_in_one_read_and_split_events() -> None:
    raw = b"data: a\n\ndata: b\n\ndata: c\n\n"
    assert events_of(raw) == ["a", "b", "c"]


def test_multi_line_data_is_joined_with_newline() -> None:
    assert events_of(b'data: {"x":\ndata: 1}\n\n') == ['{"x":\n1}']


def test_stream_closed_without_done_or_final_blank_line() -> None:
    assert events_of(b"data: a\n\ndata: b\n") == ["a", "b"]
    assert events_of(b"data: a\n\n") == ["a"]


def test_comments_only_yield_nothing() -> None:
    assert events_of(b": ping\n\n: ping\r\n\r\n") == []


def test_completions_text_and_finish_reason() -> None:
    c = parse_chunk(json.dumps({"choices": [{"text": " hi", "finish_reason": "length"}]}))
    assert c.text == " hi" and c.finish_reason == "length"


def test_role_only_and_empty_chunks_carry_no_text() -> None:
    assert parse_chunk(chunk({"role": "assistant"})).text == ""
    assert parse_chunk(chunk({"content": None})).text == ""


def test_in_stream_error_object() -> None:
    c = parse_chunk(json.dumps({"error": {"message": "overloaded", "code": 503}}))
    assert c.error == "overloaded"


@pytest.mark.parametrize("bad", ['{"id": broken', "[1, 2]", "not json"])
def test_malformed_payload_raises(bad: str) -> None:
    with pytest.raises(PayloadError):
        parse_chunk(bad)


def test_cr_only_line_endings_any_split() -> None:
    assert events_of(b"data: a\r\rdata: b\r\r") == ["a", "b"]


def test_llama_cpp_error_field_becomes_an_error_payload() -> None:
    """llama.cpp reports a failure inside a stream as ``error: {...}``, not as ``data:``."""
    (event,) = events_of(b'error: {"code": 400, "message": "exceeds the context size"}\n\n')
    assert parse_chunk(event).error == "exceeds the context size"


def test_error_event_type_becomes_an_error_payload() -> None:
    (event,) = events_of(b'event: error\ndata: {"message": "overloaded"}\n\n')
    assert parse_chunk(event).error == "overloaded"
    (plain,) = events_of(b"event: error\ndata: engine died\n\n")
    assert parse_chunk(plain).error == "engine died"


def test_bytes_that_are_not_utf8_raise_payload_error() -> None:
    with pytest.raises(PayloadError, match="not UTF-8"):
        list(iter_events([b'data: {"x": "\xff"}\n\n']))


def test_finish_reason_on_any_choice() -> None:
    obj = {"choices": [{"index": 0, "delta": {}}, {"index": 1, "delta": {}, "finish_reason": "stop"}]}
    assert parse_chunk(json.dumps(obj)).finish_reason == "stop"


@pytest.mark.parametrize(
    ("obj", "reason"),
    [
        ({"choices": [], "usage": "lots"}, "usage is not an object"),
        ({"choices": [], "usage": {"completion_tokens": "abc"}}, "usage.completion_tokens"),
        ({"choices": [], "usage": {"prompt_tokens": -1}}, "usage.prompt_tokens"),
        ({"choices": [], "usage": {"completion_tokens": True}}, "usage.completion_tokens"),
        ({"choices": [None]}, "choices[0] is not an object"),
        ({"choices": "abc"}, "choices is not a list"),
        ({"choices": [{"delta": "b"}]}, "delta is not an object"),
        ({"choices": [{"delta": {"content": 5}}]}, "delta.content is not a string"),
        ({"choices": [{"text": ["x"]}]}, "text is not a string"),
    ],
)
def test_wrong_shapes_raise_payload_error_with_the_reason(obj: dict, reason: str) -> None:
    with pytest.raises(PayloadError, match=re.escape(reason)):
        parse_chunk(json.dumps(obj))


def test_usage_null_on_every_chunk_is_no_usage() -> None:
    assert parse_chunk(json.dumps({"choices": [], "usage": None})).usage is None


def test_bytes_that_are_not_utf8_carry_the_events_completed_before_them() -> None:
    """A token and bad bytes in one piece: the token is not lost with the error (issue 26 §8)."""
    decoder = EventDecoder()
    with pytest.raises(PayloadError, match="not UTF-8") as caught:
        decoder.feed(b'data: {"a": 1}\n\ndata: x\n\ndata: \xff\n\n')
    assert list(caught.value.events) == ['{"a": 1}', "x"]


def _decode_seconds(size: int) -> float:
    """CPU seconds to decode one event of ``size`` bytes of text fed in 64 KB pieces (best of 3)."""
    raw = b"data: " + json.dumps({"choices": [{"delta": {"content": "x" * size}}]}).encode() + b"\n\n"
    pieces = [raw[i : i + 65536] for i in range(0, len(raw), 65536)]
    best = float("inf")
    for _ in range(3):
        decoder = EventDecoder()
        start = time.process_time()
        events = [event for piece in pieces for event in decoder.feed(piece)]
        best = min(best, time.process_time() - start)
        assert len(events) == 1 and len(events[0]) == len(raw) - 8
    return best


def test_a_large_event_is_decoded_in_linear_time() -> None:
    """32x the bytes, about 32x the work (issue 26 §3: joining the held bytes to every piece
    made it quadratic: 0.35 s for 8 MB against 6 ms for 1 MB). Both sizes are measured here,
    in CPU time of this process, so a busy host does not decide it; the bound leaves room for
    the larger event's bytes falling out of the CPU's caches (about 2x per byte), and a
    quadratic decoder is some 1,000x."""
    small, large = _decode_seconds(512 * 1024), _decode_seconds(16 * 1024 * 1024)
    assert large < 200 * small, (small, large, large / small)


@pytest.mark.parametrize(
    "raw",
    [
        b"data: a\n\ndata: b\n\ndata: [DONE]\n\n",  # whole events, as a busy reader gets them
        b"data: a\n\ndata: \n\ndata: c\n\n",  # an empty payload is still an event
        b"data: a\n\ndata:b\n\n",  # no space after the colon
        b"data: a\n\n\n\ndata: b\n\n",  # extra blank lines
        b"data: a\ndata: b\n\ndata: c\n\n",  # multi-line data
        b"data: a\n\n: keep-alive\n\ndata: b\n\n",  # a comment between
        b"data: a\n\nevent: error\ndata: {}\n\n",  # a typed event
        b"data: a\n\nid: 3\ndata: b\n\n",
    ],
)
def test_several_whole_events_in_one_piece_as_if_fed_byte_by_byte(raw: bytes) -> None:
    """The whole-events shortcut of EventDecoder.feed yields what the general path yields."""
    one_by_one = EventDecoder()
    expected = [event for i in range(len(raw)) for event in one_by_one.feed(raw[i : i + 1])]
    assert EventDecoder().feed(raw) == expected


@pytest.mark.parametrize(
    "obj",
    [
        {"choices": [{"delta": {"content": "hi"}, "finish_reason": None}]},
        {"choices": [{"delta": {"role": "assistant", "content": "hi"}}], "usage": None},
        {"choices": [{"delta": {"content": "hi", "reasoning_content": "r"}}]},
        {"choices": [{"delta": {"content": "hi", "tool_calls": []}}], "usage": {}},
        {"choices": [{"delta": {"content": "hi"}, "finish_reason": "stop"}]},
        {"choices": [{"delta": {"content": "hi"}, "finish_reason": ""}]},
        {"choices": [{"delta": {"content": "hi"}}], "usage": {"completion_tokens": 3}},
        {"choices": [{"delta": {"content": "hi"}}], "error": {"message": "boom"}},
        {"choices": [{"delta": {"content": "hi", "tool_calls": [{"index": 0}]}}]},
        {"choices": [{"delta": {"content": "hi"}}, {"delta": {"content": "yo"}}]},
        {"choices": [{"delta": {"content": ""}}]},
        {"choices": [{"delta": {"reasoning_content": "r"}}]},
        {"choices": [{"text": "hi"}]},
        {"choices": [{"delta": {"content": 5}}]},
        {"choices": []},
        {"choices": [None]},
        {"choices": "x"},
        {"usage": {"prompt_tokens": 1}},
        [1, 2],
    ],
)
def test_content_text_is_parse_chunk_of_a_plain_content_chunk(obj: object) -> None:
    """The hot path's shortcut: text exactly when parse_chunk reads a chunk with that text and
    nothing else; every other chunk is left to parse_chunk."""
    data = json.dumps(obj)
    try:
        full = parse_chunk(data)
    except PayloadError:
        full = None
    plain = full is not None and full.text != "" and full == Chunk(text=full.text)
    got = content_text(load_payload(data))
    assert got is None or (plain and got == full.text)  # None: parse_chunk reads it


def test_content_text_reads_the_usual_chunk() -> None:
    usual = {"id": "c", "choices": [{"index": 0, "delta": {"content": " the"}, "finish_reason": None}]}
    assert content_text(load_payload(json.dumps(usual))) == " the"
