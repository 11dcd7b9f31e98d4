"""Server-sent events in, OpenAI stream chunks out.

Two layers, both pure (no HTTP, no Locust):

- :func:`iter_events` turns an iterable of byte chunks, split anywhere, into the ``data``
  payloads of complete SSE events: ``: comment`` lines, LF, CRLF or CR endings, multi-line
  ``data:``, events split across reads or several per read, a last event cut off by a
  clean close. Two servers' ways of reporting an error inside a stream become an
  ``{"error": ...}`` payload: llama.cpp's ``error: {...}`` field and ``event: error``.
  Bytes that are not UTF-8 raise :class:`PayloadError`.
- :func:`parse_chunk` reads one OpenAI ``chat.completion.chunk`` / ``text_completion``
  payload and says whether it carries generated text, tool-call pieces, usage, a finish reason
  or an error.
  Valid JSON of the wrong shape (``"usage": "lots"``, ``"choices": [null]``) raises
  :class:`PayloadError` with the reason, never ``AttributeError``.

The client feeds an :class:`EventDecoder` every piece of the body as it is read, so every
event is timestamped by the read that completed it (:mod:`llm_locust.client.reader`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import orjson

from llm_locust.config.jsontypes import JsonObject, JsonValue

__all__ = [
    "DONE",
    "Chunk",
    "EventDecoder",
    "PayloadError",
    "chunk_of",
    "content_text",
    "iter_events",
    "load_payload",
    "parse_chunk",
]

DONE = "[DONE]"
_COUNTS = ("prompt_tokens", "completion_tokens")
#: A held line this long takes its further pieces in a list (joined once at its end); a
#: shorter one is joined to each new piece (fewer steps for the usual small event).
_LONG_LINE = 4096
_CR = ord("\r")


class PayloadError(ValueError):
    """A ``data:`` payload that is not a valid OpenAI stream chunk.

    ``events``: the payloads an :class:`EventDecoder` completed in the same piece before the
    bad bytes (they still count: a token in the same read as the bad bytes)."""

    events: Sequence[str] = ()


@dataclass(slots=True)
class Chunk:
    """What one stream chunk means for timing and token counting."""

    text: str = ""  # content or reasoning text; non-empty marks a token-bearing chunk
    reasoning: bool = False  # the text is reasoning (``reasoning_content`` / ``reasoning``), not content
    usage: JsonObject | None = None  # counts checked: absent, or non-negative ints
    finish_reason: str | None = None  # set on any choice: the stream is complete
    error: str | None = None  # an in-stream error object's message
    tool_calls: list[JsonObject] | None = None  # ``delta.tool_calls`` pieces (llm_locust.protocol.tools)
    end: bool = False  # the stream's last event (a Responses stream's ``response.completed``)


class EventDecoder:
    """The push form of :func:`iter_events`: bytes in as they arrive, complete events out.

    ``feed`` takes any split of the stream and returns the ``data`` of every event it
    completed; ``close`` (the stream ended cleanly) returns a last event cut off without
    its blank line. A CR at the end of a piece waits for a possible LF.

    Linear in the bytes fed, however an event is split: the pieces of a long line that goes
    on over several pieces are kept in a list and joined once, when its line ending arrives;
    each new piece is scanned once for one. (Joining the held bytes to every new piece made
    a large event quadratic: 0.35 s of decoding for 8 MB in 64 KB pieces, 6 ms for 1 MB.)
    """

    __slots__ = ("_data", "_kind", "_more", "_rest")

    def __init__(self) -> None:
        self._rest = b""  # the start of a line not yet ended (it may end in a CR held back)
        self._more: list[bytes] = []  # its further pieces, none with a line ending
        self._data: list[str] = []
        self._kind = ""

    def feed(self, chunk: bytes) -> list[str]:
        whole = self.whole(chunk)
        if whole is not None:
            return _texts(whole)
        if self._rest:
            if (
                len(self._rest) >= _LONG_LINE
                and b"\n" not in chunk
                and b"\r" not in chunk
                and self._rest[-1:] != b"\r"
            ):
                self._more.append(chunk)  # a long line goes on: no copy, no new scan
                return []
            if self._more:
                chunk = b"".join((self._rest, *self._more, chunk))
                self._more.clear()
            else:
                chunk = self._rest + chunk
        if b"\r" in chunk:
            hold = chunk.endswith(b"\r")
            chunk = (chunk[:-1] if hold else chunk).replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            *lines, rest = chunk.split(b"\n")
            self._rest = rest + b"\r" if hold else rest
        else:
            *lines, self._rest = chunk.split(b"\n")
        events: list[str] = []
        try:
            for line in lines:
                if not line:  # the blank line that dispatches an event
                    if self._data:
                        events.append(_dispatch(self._kind, self._data))
                        self._data = []
                    self._kind = ""
                elif line[:6] == b"data: ":  # the common case, spelled out
                    self._data.append(_text(line[6:]))
                else:
                    self._field(line, events)
        except PayloadError as exc:
            exc.events = events
            raise
        return events

    def holding(self) -> bool:
        """Part of an event is held (a line not yet ended, or an event's lines before its blank line)."""
        return bool(self._rest or self._data or self._kind)

    def whole(self, chunk: bytes) -> list[bytes] | None:
        """The common case, read at once: a piece made only of whole one-line ``data: `` events
        with LF endings, the decoder holding nothing: their payloads, as bytes (not yet checked
        to be UTF-8). ``None`` for any other piece (then :meth:`feed` it)."""
        if (
            chunk[-2:] != b"\n\n"
            or chunk[:6] != b"data: "
            or _CR in chunk  # an int: a byte search (``b"\\r" in`` is a substring search, 5x dearer)
            or self._rest
            or self._data
            or self._kind
        ):
            return None
        end = len(chunk) - 2
        if chunk.find(b"\n", 6) == end:  # one event
            return [chunk[6:end]]
        payloads = chunk[6:end].split(b"\n\ndata: ")  # several, as a busy reader gets them
        if chunk.count(b"\n") == 2 * len(payloads):  # no other line anywhere
            return payloads
        return None

    def close(self) -> list[str]:
        events: list[str] = []
        if self._rest:
            line, self._rest = b"".join((self._rest, *self._more)).rstrip(b"\r"), b""
            self._more.clear()
            if line:
                self._field(line, events)
        if self._data:
            events.append(_dispatch(self._kind, self._data))
            self._data, self._kind = [], ""
        return events

    def _field(self, line: bytes, events: list[str]) -> None:
        name, sep, value = line.partition(b":")
        if not name:
            return  # a comment
        if sep and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(_text(value))
        elif name == b"event":
            self._kind = _text(value)
        elif name == b"error":
            events.append(_error_payload(_text(value)))


def iter_events(chunks: Iterable[bytes]) -> Iterator[str]:
    """Yield the ``data`` of each complete event, in order, as soon as it is complete."""
    decoder = EventDecoder()
    for chunk in chunks:
        yield from decoder.feed(chunk)
    yield from decoder.close()


def _texts(payloads: list[bytes]) -> list[str]:
    events: list[str] = []
    try:
        for raw in payloads:
            events.append(_text(raw))
    except PayloadError as exc:
        exc.events = events  # the events before the bad bytes
        raise
    return events


def _dispatch(kind: str, data: list[str]) -> str:
    text = data[0] if len(data) == 1 else "\n".join(data)
    return _error_payload(text) if kind == "error" else text


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = bytes(raw[exc.start : exc.start + 4])
        raise PayloadError(f"stream is not UTF-8 text: bytes {bad!r} at offset {exc.start}") from None


def _error_payload(text: str) -> str:
    """``{"error": ...}`` for an error reported outside ``data``, unless it already is one."""
    try:
        obj: JsonValue = json.loads(text)
    except ValueError:
        obj = text
    if isinstance(obj, dict) and "error" in obj:
        return text
    return json.dumps({"error": obj or "error event without a message"})


def parse_chunk(data: str) -> Chunk:
    """Interpret one payload (not ``[DONE]``). Raises :class:`PayloadError` if malformed."""
    return chunk_of(load_payload(data), data)


def content_text(obj: JsonValue) -> str | None:
    """The text of the usual chunk, one choice carrying only a content string (no usage, error,
    tool calls or finish reason): what :func:`chunk_of` would read as ``Chunk(text=...)``, in
    a third of its time (the hot path: once per token). ``None`` for every other chunk."""
    if type(obj) is not dict or obj.get("usage") or obj.get("error"):
        return None
    choices = obj.get("choices")
    if type(choices) is not list or len(choices) != 1:
        return None
    choice = choices[0]
    if type(choice) is not dict or choice.get("finish_reason") is not None:
        return None
    delta = choice.get("delta")
    if type(delta) is not dict or delta.get("tool_calls"):
        return None
    content = delta.get("content")
    return content if content and type(content) is str else None


def chunk_of(obj: JsonValue, data: str) -> Chunk:
    """Interpret one decoded payload (``data``: its text, for messages)."""
    if not isinstance(obj, dict):
        raise PayloadError(f"stream chunk is not an object: {_clip(data)}")
    usage = obj.get("usage")
    chunk = Chunk(usage=_usage(usage) if usage else None)
    error = obj.get("error")
    if error:
        chunk.error = _error_message(error)
        return chunk
    choices = obj.get("choices")
    if choices is None:
        return chunk
    if not isinstance(choices, list):
        raise PayloadError(f"choices is not a list: {_clip(repr(choices))}")
    for i, choice in enumerate(choices):
        if not isinstance(choice, dict):
            raise PayloadError(f"choices[{i}] is not an object: {_clip(json.dumps(choice))}")
        text, reasoning = _choice_text(choice)
        if text:  # a chunk is reasoning only when all its text is
            chunk.reasoning = reasoning and (chunk.reasoning or not chunk.text)
            chunk.text += text
        calls = _tool_calls(choice)
        if calls:
            chunk.tool_calls = calls if chunk.tool_calls is None else chunk.tool_calls + calls
        reason = choice.get("finish_reason")
        if reason is not None:
            chunk.finish_reason = str(reason)
    return chunk


def load_payload(data: str) -> JsonValue:
    """orjson (1.2 µs per chunk less than ``json``); ``json`` for what orjson refuses
    (NaN, integers over 64 bits, lone surrogates), so both accept the same payloads."""
    value: JsonValue
    try:
        value = orjson.loads(data)
        return value
    except orjson.JSONDecodeError:
        pass
    try:
        value = json.loads(data)
        return value
    except ValueError as exc:
        raise PayloadError(f"invalid JSON in stream: {_clip(data)}") from exc


def _choice_text(choice: JsonObject) -> tuple[str, bool]:
    """The choice's text and whether it is reasoning (content wins when a delta has both)."""
    delta = choice.get("delta")
    if delta is None:  # completions
        return _string(choice, "text", "text"), False
    if not isinstance(delta, dict):
        raise PayloadError(f"delta is not an object: {_clip(json.dumps(delta))}")
    content = delta.get("content")
    if content and isinstance(content, str):  # the common case, first
        return content, False
    for key in ("content", "reasoning_content", "reasoning"):
        text = _string(delta, key, f"delta.{key}")
        if text:
            return text, key != "content"
    return "", False


def _tool_calls(choice: JsonObject) -> list[JsonObject] | None:
    """The choice's ``delta.tool_calls`` pieces (each an object), or ``None``."""
    delta = choice.get("delta")
    calls = delta.get("tool_calls") if isinstance(delta, dict) else None
    if not calls:
        return None
    if not isinstance(calls, list) or not all(isinstance(call, dict) for call in calls):
        raise PayloadError(f"delta.tool_calls is not a list of objects: {_clip(json.dumps(calls))}")
    return [call for call in calls if isinstance(call, dict)]  # all of them


def _string(obj: JsonObject, key: str, where: str) -> str:
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value or ""
    raise PayloadError(f"{where} is not a string: {_clip(json.dumps(value))}")


def _usage(usage: JsonValue) -> JsonObject | None:
    if not usage:
        return None
    if not isinstance(usage, dict):
        raise PayloadError(f"usage is not an object: {_clip(json.dumps(usage))}")
    for key in _COUNTS:
        value = usage.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise PayloadError(f"usage.{key} is not a token count: {_clip(json.dumps(value))}")
    return usage


def _error_message(error: JsonValue) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error)


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
