"""Server-sent events in, OpenAI stream chunks out.

Two layers, both pure (no HTTP, no Locust):

- :func:`iter_events` turns an iterable of byte chunks, split anywhere, into the ``data``
  payloads of complete SSE events. It delegates the SSE grammar (``: comment`` lines,
  LF or CRLF endings, multi-line ``data:``, events split across reads or several per
  read, a last event cut off by a clean close) to sseclient-py.
- :func:`parse_chunk` reads one OpenAI ``chat.completion.chunk`` / ``text_completion``
  payload and says whether it carries generated text, usage, or an error.

The client feeds :func:`iter_events` one line at a time, as each line arrives, so every
event is timestamped when its bytes land rather than when a read buffer fills.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sseclient import SSEClient

__all__ = ["DONE", "Chunk", "PayloadError", "iter_events", "parse_chunk"]

DONE = "[DONE]"


class PayloadError(ValueError):
    """A ``data:`` payload that is not a valid OpenAI stream chunk."""


@dataclass(slots=True)
class Chunk:
    """What one stream chunk means for timing and token counting."""

    text: str = ""  # content or reasoning text; non-empty marks a token-bearing chunk
    usage: dict[str, Any] | None = None
    finish_reason: str | None = None
    error: str | None = None  # an in-stream error object's message


class _Source:
    """The minimal file-like object SSEClient wants: iterable and closable."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._chunks)

    def close(self) -> None:
        return None


def iter_events(chunks: Iterable[bytes]) -> Iterator[str]:
    """Yield the ``data`` of each complete event, in order, as soon as it is complete."""
    for event in SSEClient(_Source(chunks)).events():
        yield event.data


def parse_chunk(data: str) -> Chunk:
    """Interpret one payload (not ``[DONE]``). Raises :class:`PayloadError` if malformed."""
    try:
        obj = json.loads(data)
    except ValueError as exc:
        raise PayloadError(f"invalid JSON in stream: {_clip(data)}") from exc
    if not isinstance(obj, dict):
        raise PayloadError(f"stream chunk is not an object: {_clip(data)}")
    chunk = Chunk(usage=obj.get("usage") or None)
    error = obj.get("error")
    if error:
        chunk.error = _error_message(error)
        return chunk
    choices = obj.get("choices")
    if choices:
        choice = choices[0]
        chunk.finish_reason = choice.get("finish_reason")
        delta = choice.get("delta")
        if delta is not None:  # chat
            chunk.text = (
                delta.get("content") or delta.get("reasoning_content") or delta.get("reasoning") or ""
            )
        else:  # completions
            chunk.text = choice.get("text") or ""
    return chunk


def _error_message(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error)


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
