"""Our SSE parser against sseclient-py, the parser this project was specified with.

`llm_locust.protocol.sse` parses the SSE grammar inline (one generator less per event on
the hot path: 2.5 µs against 3.5 µs per event, see benchmarks/README.md). sseclient-py
stays as the oracle: over random streams of the grammar OpenAI-compatible servers use
(``data:`` lines, multi-line data, ``: comments``, ``id:``/``retry:``/``event:`` fields,
LF, CRLF or CR line endings, with or without the space after the colon), cut at random
byte positions, both must yield the same ``data`` payloads in the same order.

Where the two differ on purpose, the generator stays out: ``event: error`` and
llama.cpp's ``error:`` field become an ``{"error": ...}`` payload here (sseclient-py
yields them as plain events), and whitespace-only lines (which sseclient-py drops inside
an event but the SSE specification does not allow as separators) are not generated.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

import pytest
from sseclient import SSEClient

from llm_locust.protocol.sse import iter_events


class _Source:
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._chunks)

    def close(self) -> None:
        return None


def oracle(chunks: list[bytes]) -> list[str]:
    return [event.data for event in SSEClient(_Source(chunks)).events()]


def random_stream(rng: random.Random, long: bool = False) -> bytes:
    newline = rng.choice(["\n", "\r\n", "\r"])
    lines: list[str] = []
    for _ in range(rng.randint(1, 12)):
        for _ in range(rng.randint(0, 2)):
            lines.append(rng.choice([": keep-alive", ":", f"id: {rng.randint(1, 99)}", "retry: 1000"]))
        if rng.random() < 0.2:
            lines.append(f"event: {rng.choice(['message', 'delta'])}")
        for _ in range(rng.randint(1, 3)):
            payload = rng.choice(
                [
                    json.dumps({"choices": [{"delta": {"content": rng.choice(["a", " b", "ü", "日本"])}}]}),
                    "[DONE]",
                    "",
                    "x: y",
                    *(
                        [json.dumps({"choices": [{"delta": {"content": "z" * rng.randint(3000, 20000)}}]})]
                        * long
                    ),
                ]
            )
            space = rng.choice([" ", ""])
            lines.append(f"data:{space}{payload}")
        lines.append("")  # the blank line that dispatches the event
    if rng.random() < 0.3:
        lines.pop()  # the last event cut off by a clean close
    return newline.join(lines).encode() + (newline.encode() if rng.random() < 0.5 else b"")


def cut(raw: bytes, rng: random.Random, longest: int = 9) -> list[bytes]:
    out, i = [], 0
    while i < len(raw):
        n = rng.randint(1, longest)
        out.append(raw[i : i + n])
        i += n
    return out


@pytest.mark.parametrize("seed", range(400))
def test_same_events_as_sseclient_py_over_random_splits(seed: int) -> None:
    rng = random.Random(seed)
    raw = random_stream(rng)
    expected = oracle([raw])
    assert list(iter_events([raw])) == expected
    for _ in range(5):
        chunks = cut(raw, rng)
        assert list(iter_events(chunks)) == expected, chunks


@pytest.mark.parametrize("seed", range(40))
def test_same_events_with_long_lines_over_random_splits(seed: int) -> None:
    """Lines of 3-20 KB, held over many pieces (the decoder keeps a long line's pieces in a
    list, issue 26 §3), cut in pieces of 1 byte to 5 KB."""
    rng = random.Random(seed)
    raw = random_stream(rng, long=True)
    expected = oracle([raw])
    assert list(iter_events([raw])) == expected
    for longest in (9, 700, 5000):
        assert list(iter_events(cut(raw, rng, longest))) == expected
