"""The hot path of StreamEvents.feed (issue 29 §1): whole ``data:`` events read as bytes, and a
stream's usual chunks read through their learned shape (llm_locust.protocol.shape).

Every stream here is fed twice, in the same reads at the same times: once as the client does,
and once through the general line-by-line path (a decoder whose whole-events shortcut is off,
which hands StreamEvents ``str`` payloads, each parsed whole: the path before the shortcut).
The record, the stream's text and the outcome must be the same; each test also checks that the
fast path was taken, so a fast path that read a chunk wrong fails the comparison."""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any

import pytest

import llm_locust.protocol.stream as stream_module
from llm_locust.protocol.shape import shape_of
from llm_locust.protocol.sse import EventDecoder, content_text
from llm_locust.protocol.stream import Cancelled, Failure, Stream, StreamEvents
from llm_locust.record import RequestRecord

HEAD = {"id": "chatcmpl-7", "object": "chat.completion.chunk", "created": 1796179316, "model": "m"}


def chat(content: Any = None, finish: str | None = None, **delta: Any) -> bytes:
    """A vLLM-style chunk (compact JSON, vLLM's key order)."""
    if content is not None:
        delta["content"] = content
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    return json.dumps({**HEAD, "choices": [choice]}, separators=(",", ":")).encode()


def event(payload: bytes) -> bytes:
    return b"data: " + payload + b"\n\n"


def words(n: int, start: int = 0) -> list[bytes]:
    return [event(chat(f" w{i}")) for i in range(start, start + n)]


END = [event(chat(finish="stop")), b"data: [DONE]\n\n"]


class _Lines(EventDecoder):
    """The decoder without its whole-events shortcut: every piece goes line by line."""

    def whole(self, chunk: bytes) -> list[bytes] | None:
        return None


def run(reads: list[bytes], general: bool = False, cancel: int = sys.maxsize) -> tuple[Any, ...]:
    record = RequestRecord(request_id="x", wall_start=0.0, t_sent=0.5)
    stream = Stream(parts=[], reasoning=[], cancel_chunks=cancel)
    events = StreamEvents(record, stream)
    if general:
        events.decoder = _Lines()
    outcome: Any = None
    try:
        for i, read in enumerate(reads):
            if events.feed(read, float(i + 1)):
                break
        events.end(99.0)
    except Failure as exc:
        outcome = (exc.outcome, exc.message)
    except Cancelled:
        outcome = "cancelled"
    return dataclasses.asdict(record), dataclasses.asdict(stream), outcome, events.done


def same(reads: list[bytes], cancel: int = sys.maxsize) -> tuple[Any, ...]:
    """Feed ``reads`` both ways; they must agree. Returns the fast way's result."""
    fast = run(reads, cancel=cancel)
    assert fast == run(reads, general=True, cancel=cancel)
    return fast


def parsed_whole(reads: list[bytes]) -> int:
    """How many payloads the client's way parses whole (not through a shape)."""
    seen: list[object] = []

    def counting(obj: Any) -> str | None:
        seen.append(obj)
        return content_text(obj)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stream_module, "content_text", counting)
        run(reads)
    return len(seen)


def test_usual_chunks_are_read_through_the_learned_shape() -> None:
    reads = [*words(50), *END]
    record, stream, outcome, done = same(reads)
    assert outcome is None and done
    assert stream["parts"] == [f" w{i}" for i in range(50)]
    assert record["visible_chars"] == sum(len(f" w{i}") for i in range(50))
    assert parsed_whole(reads) == 2  # the first chunk (the shape learned), then the finish chunk


def test_several_events_per_read_and_done_in_the_same_read() -> None:
    events = [*words(30), *END]
    reads = [b"".join(events[i : i + 4]) for i in range(0, len(events), 4)]  # a busy reader's reads
    assert any(read.endswith(b"data: [DONE]\n\n") and read.count(b"data: ") > 1 for read in reads)
    _record, stream, outcome, done = same(reads)
    assert outcome is None and done and len(stream["parts"]) == 30
    assert parsed_whole(reads) == 2


def test_nothing_after_done_in_the_same_read_is_read() -> None:
    reads = [*words(3), event(chat(" w3")) + b"data: [DONE]\n\ndata: \xff{\n\n"]
    record, _stream, outcome, done = same(reads)
    assert done and outcome[0].value == "stream_broken"  # no finish_reason: cut, not a bad payload
    assert len(record["chunk_times"]) == 4


def test_a_chunk_split_across_reads() -> None:
    first, second = event(chat(" split")), event(chat(" next"))
    reads = [*words(5), first[:40], first[40:] + second[:7], second[7:], *words(5, 7), *END]
    _record, stream, _outcome, _done = same(reads)
    assert stream["parts"][5:7] == [" split", " next"] and len(stream["parts"]) == 12


@pytest.mark.parametrize(
    "reads",
    [
        [b"id: 1", event(chat(" a"))],  # a line held from the read before: "id: 1data: ..."
        [b"data: " + chat(" a") + b"\n", event(chat(" b"))],  # an event's data line held
        [b'data: {"choices":[{"delta":\n', b'data: {"content":" x"}}]}\n\n'],
        [b'data: {"choices":[{"delta":\ndata: {"content":" x"}}]}\n\n'],  # multi-line data
        [b"event: error\n", event(b'{"message":"boom"}')],  # a typed event held
        [b"event: error\n", event(chat(" a"))],  # ... before a read of the learned shape
        [b"event: error\n", event(chat(" a")) + event(chat(" b"))],
        [b": keep-alive", event(chat(" a"))],
        [event(chat(" a")).replace(b"\n", b"\r\n"), event(chat(" b"))],
        [event(chat(" a"))[:-1], b"\n" + event(chat(" b"))],
        [event(chat(" a").replace(b'" a"', b'" a"\n'))],  # a line ends inside the shape's middle
        [event(chat(" a").replace(b'" a"', b'" a"\r'))],
        [event(chat(" a").replace(b'" a"', b'"\n: x\n" a"'))],
    ],
)
def test_reads_that_look_like_whole_events_but_continue_what_came_before(reads: list[bytes]) -> None:
    same([*words(3), *reads, *words(3, 3), *END])
    same([*words(3), b"".join(reads[:-1]), reads[-1] + b"".join(words(3, 3)), *END])


@pytest.mark.parametrize(
    "content",
    ['say "hi"', "back\\slash", "line\nbreak\ttab", "\x01ctl", "日本語", "😀 emoji", "é", "\u2028", "\ud800"],
)
def test_escapes_and_unicode_after_the_shape_is_learned(content: str) -> None:
    """Escaped by the server (``ensure_ascii``) and as raw UTF-8; a lone surrogate, which orjson
    refuses and ``json`` reads, takes the full path and still counts."""
    for ensure_ascii in (True, False):
        text = json.dumps(content, ensure_ascii=ensure_ascii)
        payload = chat(" w0").replace(b'" w0"', text.encode("utf-8", "surrogatepass"))
        if ensure_ascii or content != "\ud800":
            _record, stream, outcome, _ = same([*words(3), event(payload), *words(3, 3), *END])
            assert outcome is None and stream["parts"][3] == content
            several = b"".join([*words(2, 1), event(payload), *words(2, 3)])  # a busy reader's read
            _record, stream, outcome, _ = same([*words(1), several, *END])
            assert outcome is None and stream["parts"][3] == content


@pytest.mark.parametrize(
    "payload",
    [
        chat(" x", role="assistant"),  # another key in the delta
        chat(" x", reasoning_content="why"),  # content and reasoning: content wins
        chat(reasoning_content="why"),  # reasoning only
        chat(" x", tool_calls=[{"index": 0, "function": {"name": "f", "arguments": ""}}]),
        chat(" x", finish="length"),  # the last token and the finish together
        chat(""),  # an empty content: no token
        chat(" x").replace(b"}]}", b'}],"usage":{"prompt_tokens":3,"completion_tokens":4}}'),
        chat(" x").replace(b"}]}", b'}],"usage":null,"obfuscation":"abc"}'),
        chat(" x").replace(b'"logprobs":null', b'"logprobs":{"content":[]}'),
        chat(" x").replace(b'"model":"m"', b'"model":"other"'),  # a head that differs
        chat(" x").replace(b'"content":" x"', b'"content":" x","content":" y"'),  # the last wins
        chat(" x").replace(b'" x"', b'" x"  '),  # whitespace around the string
        chat(" x").replace(b'" x"', b'" x","role":"assistant"'),  # a key after the content
        chat(" x").replace(b"}]}", b'},{"index":1,"delta":{"content":" y"}}]}'),  # two choices
        chat(5),  # a content that is no string: bad payload
        chat([" x"]),
        chat(" x").replace(b'" x"', b'" x"}],"usage":{"prompt_tokens":1},"z":[{"q":{"r":"y"'),
    ],
    ids=lambda p: p.decode(errors="replace")[60:110],
)
def test_a_chunk_of_another_shape_after_the_shape_is_learned(payload: bytes) -> None:
    same([*words(3), event(payload), *words(3, 3), *END])
    same([b"".join([*words(3), event(payload), *words(3, 3), *END])])  # all in one read
    same([*words(3), b"".join([*words(2, 3), event(payload), *words(2, 5)]), *END])  # shape learned
    same([*words(3), b"".join([*words(2, 3), event(payload)]), *END])
    same([*words(3), b"".join([event(payload), *words(2, 3)]), *END])


@pytest.mark.parametrize(
    "bad",
    [
        chat(" x").replace(b'" x"', b'" x'),  # an unterminated string
        chat(" x").replace(b'" x"', b'" x\\q"'),  # a bad escape
        chat(" x").replace(b'" x"', b'"\x01"'),  # a raw control character
        chat(" x").replace(b'" x"', b'" \xff"'),  # not UTF-8 inside the content
        chat(" x").replace(b'"m"', b'"\xc3"'),  # not UTF-8 in the head
        chat(" x")[:-1],  # cut short
        b"{not json",
        b"[1, 2]",
        b'{"choices": NaN}',
    ],
)
def test_bad_payloads_fail_alike_after_the_shape_is_learned(bad: bytes) -> None:
    for reads in (
        [*words(3), event(bad), *words(2, 3), *END],
        [b"".join([*words(3), event(bad), *END])],
        [*words(1), b"".join([*words(2, 1), event(bad), *words(2, 3)]), *END],  # the shape learned
    ):
        record, _, outcome, _ = same(reads)
        assert outcome is not None and outcome[0].value == "bad_payload", outcome
        assert len(record["chunk_times"]) == 3  # the tokens before the bad one count


def test_completions_and_other_servers_shapes() -> None:
    completion = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "m"}
    texts = [
        json.dumps({**completion, "choices": [{"index": 0, "text": f" t{i}", "finish_reason": None}]})
        for i in range(5)
    ]
    last = json.dumps({**completion, "choices": [{"index": 0, "text": "", "finish_reason": "stop"}]})
    _, stream, outcome, _ = same([f"data: {t}\n\n".encode() for t in [*texts, last, "[DONE]"]])
    assert outcome is None and len(stream["parts"]) == 5
    sglang = [
        {
            "id": "s",
            "object": "chat.completion.chunk",
            "created": 2,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "role": None,
                        "content": f" s{i}",
                        "reasoning_content": None,
                        "tool_calls": None,
                    },
                    "logprobs": None,
                    "finish_reason": None,
                    "matched_stop": None,
                }
            ],
            "usage": None,
        }
        for i in range(5)
    ]
    llama = [
        {
            "choices": [{"finish_reason": None, "index": 0, "delta": {"content": f" l{i}"}}],
            "created": 100 + i // 2,
            "id": "c",
            "model": "m",
            "object": "chat.completion.chunk",
        }
        for i in range(9)
    ]
    for chunks in (sglang, llama):
        reads = [f"data: {json.dumps(c)}\n\n".encode() for c in chunks]
        _record, stream, outcome, _ = same([*reads, *END])
        assert outcome is None and len(stream["parts"]) == len(chunks)


@pytest.mark.parametrize("group", [1, 4])
def test_cancel_after_n_chunks_on_the_shape_path(group: int) -> None:
    events = [*words(20), *END]
    reads = [b"".join(events[i : i + group]) for i in range(0, len(events), group)]
    record, _, outcome, _ = same(reads, cancel=7)
    assert outcome == "cancelled" and len(record["chunk_times"]) == 7


def test_a_shape_that_keeps_missing_is_not_learned_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenAI's per-chunk ``obfuscation``: every chunk misses its shape; after two tries the
    stream stops learning one (each try parses the chunk twice more)."""
    learned: list[bytes] = []

    def counting(raw: bytes, text: str) -> object:
        learned.append(raw)
        return shape_of(raw, text)

    monkeypatch.setattr(stream_module, "shape_of", counting)
    reads = [
        event(chat(f" w{i}").replace(b"}]}", f'}}],"obfuscation":"{"x" * (i % 7)}{i}"}}'.encode()))
        for i in range(200)
    ]
    _, stream, outcome, _ = same([*reads, *END])
    assert outcome is None and len(stream["parts"]) == 200
    assert 1 <= len(learned) <= 3


def test_a_content_key_after_the_delta_is_not_taken_for_it() -> None:
    """The last ``"content":`` of these chunks is another object's; a shape learned there would
    read ``meta.content`` as the token."""
    reads = [
        event(
            f'{{"choices":[{{"index":0,"delta":{{"content":" w"}}}}],"meta":{{"content":"m{i}"}}}}'.encode()
        )
        for i in range(10)
    ]
    _, stream, outcome, _ = same([*reads, *END])
    assert outcome is None and stream["parts"] == [" w"] * 10
    probe = [r.replace(b'" w"', b'"\\u0000a"') for r in reads]  # the probe's own text as content
    _, stream, outcome, _ = same([*probe, *END])
    assert outcome is None and stream["parts"] == ["\x00a"] * 10


def shape_of_text(raw: bytes) -> object:
    """:func:`shape_of` of a payload, told its content as the stream would tell it."""
    return shape_of(raw, content_text(json.loads(raw)) or "")


def test_shape_of_proves_the_content_is_the_leaf() -> None:
    usual = chat(" w")
    shape = shape_of(usual, " w")
    assert shape is not None and shape[0].endswith(b'"content":') and shape[1].startswith(b'},"logprobs"')
    # "content" last seen outside the delta: the probes read the delta's content, not theirs
    assert shape_of_text(b'{"choices":[{"delta":{"content":"a"}}],"x":{"content":"b"}}') is None
    assert shape_of_text(b'{"choices":[{"delta":{"content":"\\u0000a"}}],"x":{"content":"b"}}') is None
    assert shape_of_text(b'{"choices":[{"delta":{"content":"a"}}],"x":"\\"content\\":\\"b"}') is not None
    assert shape_of_text(b'{"choices":[{"delta":{"content":"a"},"finish_reason":"stop"}]}') is None
    assert shape_of_text(b'{"choices":[{"delta":{"content":"a"}}],"usage":{"completion_tokens":1}}') is None
    assert shape_of_text(b'{"choices":[{"delta":{"content": "a"}}]}') is None  # a space: not learned
    assert shape_of_text(b'{"choices":[{"delta":{"reasoning_content":"a"}}]}') is None
