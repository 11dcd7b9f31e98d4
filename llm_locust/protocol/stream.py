"""A stream's events onto its record: timing marks, text, usage, finish, and how it failed.

The client's reader hands every read's bytes to :class:`StreamEvents`, stamped with the time of
the read; this module turns them into the record's marks (each content chunk's time, the first
visible token, reasoning chunks, tool-call pieces: :mod:`llm_locust.protocol.tools`) and
raises :class:`Failure` (an outcome class and a message)
or :class:`Cancelled` (``--cancel-rate``) when the stream says so. A stream is complete only
with a ``finish_reason``; it ends at ``[DONE]`` (a Responses stream at ``response.completed``:
:mod:`llm_locust.protocol.responses`) even if the HTTP body does not (a server that
keeps the connection open after it): :meth:`StreamEvents.feed` says so and the reader stops
there, the end of the stream timed by the read that brought ``[DONE]``. Pure: no gevent, no
sockets (the transport stays in :mod:`llm_locust.client.streaming`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import orjson

from llm_locust.config.jsontypes import JsonObject
from llm_locust.protocol.shape import Shape, shape_of
from llm_locust.protocol.sse import (
    DONE,
    Chunk,
    EventDecoder,
    PayloadError,
    chunk_of,
    content_text,
    load_payload,
    parse_chunk,
)
from llm_locust.protocol.sse import _text as _utf8
from llm_locust.protocol.tools import ToolArgs, note_tool_deltas, settle_tool_args
from llm_locust.record import Outcome, RequestRecord

_DONE = DONE.encode()
_DATA, _BLANK = b"data: ", b"\n\n"
_LF, _CR = ord("\n"), ord("\r")
_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError

__all__ = [
    "Cancelled",
    "Failure",
    "Stream",
    "StreamEvents",
    "cut_message",
    "note_first_visible",
    "note_reasoning",
]


class Cancelled(Exception):
    """The client abandons the request on purpose (``--cancel-rate``), like a closed tab."""


class Failure(Exception):
    def __init__(self, outcome: Outcome, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.message = message


@dataclass(slots=True)
class Stream:
    """What the stream said besides its text and timing (those go on the record)."""

    usage: JsonObject | None = None
    parts: list[str] | None = None  # the streamed text, when someone needs it
    reasoning: list[str] | None = None  # its reasoning part (kept with ``parts``)
    first_visible: str = ""  # the first content chunk's text
    cancel_chunks: int = sys.maxsize  # abandon the request once it has this many chunks
    tool_args: ToolArgs | None = None  # each tool call's argument pieces, by its index


class StreamEvents:
    """The stream's events as the reader delivers them: marks, text, usage, finish."""

    __slots__ = (
        "chunk_times",
        "decoder",
        "done",
        "holding",
        "joint",
        "misses",
        "parse",
        "parts",
        "plain",
        "read_most",
        "read_shape",
        "record",
        "shape",
        "stream",
    )

    def __init__(
        self, record: RequestRecord, stream: Stream, parse: Callable[[str], Chunk] = parse_chunk
    ) -> None:
        self.decoder = EventDecoder()
        self.parse = parse  # one event's data -> Chunk: chat/completions, or the Responses API's
        self.plain = parse is parse_chunk  # chat/completions: the usual chunk has a shortcut
        self.record = record
        self.stream = stream
        self.chunk_times = record.chunk_times
        self.parts = stream.parts
        self.done = False  # [DONE] arrived: nothing after it is read
        self.shape: Shape | None = None  # the usual chunk's bytes around its content, once learned
        self.read_shape: Shape = (b"", b"", 0, 0)  # the same around a read of one such event
        self.read_most = 0  # no read this long is one such event (0: no shape learned)
        self.joint = b""  # between two such events in one read
        self.misses = 0  # usual chunks that did not fit the shape (the first one included)
        self.holding = False  # the decoder holds part of an event (then no read is whole)

    def feed(self, body: bytes, now: float) -> bool:
        """The body bytes of one read, made at ``now`` (the hot path: once per read);
        ``True`` once the stream has said ``[DONE]``: read no more."""
        if len(body) < self.read_most:  # the usual read: one event of the learned shape
            head, tail, start, stop = self.read_shape
            if body[:start] == head and body[stop:] == tail:
                content = body[start:stop]
                if _LF not in content and _CR not in content and not self.holding:  # one line
                    try:
                        text = _loads(content)
                    except _JSONDecodeError:
                        text = None
                    if text and type(text) is str:
                        self._token(text, now)
                        return False
        elif self.read_most and self._several(body, now):  # a busy reader's: several of them
            return False
        decoder = self.decoder
        if self.plain:
            whole = decoder.whole(body)
            if whole is not None:
                try:
                    return self._whole(whole, now)  # the events in order, each checked as it comes
                except PayloadError as exc:
                    raise Failure(Outcome.BAD_PAYLOAD, str(exc)) from None
        try:
            payloads = decoder.feed(body)
            self.holding = decoder.holding()
            return self._events(payloads, now)
        except PayloadError as exc:
            bad = exc
        try:  # the events before the bad bytes, in the same read, still count
            if self._events(bad.events, now):
                return True  # [DONE] came first: the bad bytes are not part of the stream
        except PayloadError as exc:
            bad = exc
        raise Failure(Outcome.BAD_PAYLOAD, str(bad)) from None

    def end(self, t_end: float | None) -> None:
        """The body ended cleanly (a last event without its blank line still counts):
        was the stream complete?"""
        record = self.record
        record.t_end = t_end if t_end is not None else time.perf_counter()
        try:
            if not self.done:
                self._events(self.decoder.close(), record.t_end)
        except PayloadError as exc:
            raise Failure(Outcome.BAD_PAYLOAD, str(exc)) from None
        if self.stream.tool_args:
            settle_tool_args(record, self.stream.tool_args)
        if record.finish_reason is None:
            raise Failure(Outcome.STREAM_BROKEN, cut_message(record))
        if not record.chunk_times and not record.tool_calls:  # a tool call alone is an answer
            raise Failure(Outcome.EMPTY_RESPONSE, "stream ended without any generated text")

    def _events(self, payloads: Sequence[str], now: float) -> bool:
        for data in payloads:
            if data == DONE:  # the end of the stream, whether or not the body ends with it
                self.done = True
                return True
            if self.plain:
                obj = load_payload(data)
                text = content_text(obj)  # the usual chunk, read without building a Chunk
                if text is not None:
                    self._text(text, False, now)
                    continue
                chunk = chunk_of(obj, data)
            else:
                chunk = self.parse(data)
            if self._chunk(chunk, now):
                self.done = True
                return True
        return False

    def _whole(self, payloads: list[bytes], now: float) -> bool:
        """The chat/completions events of a read of whole ``data:`` lines, as bytes (the hot
        path: :meth:`_events` and :meth:`_text` spelled out for the usual chunk). A chunk of the
        stream's learned :data:`shape` reads only its content's JSON string; any other is
        parsed whole (orjson, from the bytes; anything orjson refuses, as :meth:`_events` does)."""
        chunk_times = self.chunk_times
        for raw in payloads:
            if raw == _DONE:
                self.done = True
                return True
            shape = self.shape
            if shape is not None:
                head, tail, start, stop = shape
                if raw[:start] == head and raw[stop:] == tail:
                    try:
                        text = _loads(raw[start:stop])
                    except _JSONDecodeError:
                        text = None  # not one string (or one orjson refuses): the full path says
                    if text and type(text) is str:  # :meth:`_tokens`, spelled out (once per token)
                        chunk_times.append(now)
                        if self.parts is not None:
                            self.parts.append(text)
                        self.record.visible_chars += len(text)
                        if len(chunk_times) >= self.stream.cancel_chunks:
                            raise Cancelled()
                        continue
            try:
                obj = _loads(raw)
            except _JSONDecodeError:  # not UTF-8, not JSON, or JSON orjson refuses
                obj = load_payload(_utf8(raw))
            text = content_text(obj)
            if text is None:
                if self._chunk(chunk_of(obj, _utf8(raw)), now):
                    self.done = True
                    return True
                continue
            self._text(text, False, now)
            self.misses += 1
            if self.misses * 8 <= len(chunk_times) + 16:  # a shape that keeps missing: no more
                self._learn(raw, text)
        return False

    def _several(self, body: bytes, now: float) -> bool:
        """A read made only of events of the learned shape, one after the other: their tokens
        (``True``), or nothing at all (``False``: the read is not one; the full path reads it).
        The middles between the ends and the joints (one event's end, the blank line, the next
        one's start) must be one line each, and each one string: then so is every event."""
        head, tail, start, stop = self.read_shape
        if self.holding or body[:start] != head or body[stop:] != tail:
            return False
        texts = []
        for content in body[start:stop].split(self.joint):
            if _LF in content or _CR in content:
                return False
            try:
                text = _loads(content)
            except _JSONDecodeError:
                return False
            if not text or type(text) is not str:
                return False
            texts.append(text)
        self._tokens(texts, now)
        return True

    def _learn(self, raw: bytes, text: str) -> None:
        shape = self.shape = shape_of(raw, text)
        if shape is None:
            self.read_most = 0
        else:
            head, tail, start, stop = shape
            start, stop = start + len(_DATA), stop - len(_BLANK)
            self.read_shape = (_DATA + head, tail + _BLANK, start, stop)
            self.joint = tail + _BLANK + _DATA + head
            # a read as long as two events of the shape may hold two: :meth:`_whole` reads it
            self.read_most = 2 * (start - stop)

    def _token(self, text: str, now: float) -> None:
        """A usual chunk of the learned shape (the first visible token came before it)."""
        self.chunk_times.append(now)
        if self.parts is not None:
            self.parts.append(text)
        self.record.visible_chars += len(text)
        if len(self.chunk_times) >= self.stream.cancel_chunks:
            raise Cancelled()

    def _tokens(self, texts: Sequence[str], now: float) -> None:
        """Usual chunks of the learned shape (the first visible token came before them)."""
        chunk_times, parts, record, cancel = (
            self.chunk_times,
            self.parts,
            self.record,
            self.stream.cancel_chunks,
        )
        for text in texts:
            chunk_times.append(now)
            if parts is not None:
                parts.append(text)
            record.visible_chars += len(text)
            if len(chunk_times) >= cancel:
                raise Cancelled()

    def _text(self, text: str, reasoning: bool, now: float) -> None:
        """A token-bearing chunk: its time, its text, the first visible token."""
        record = self.record
        self.chunk_times.append(now)
        if self.parts is not None:
            self.parts.append(text)
        if reasoning:
            note_reasoning(record, self.stream, text)
        elif record.t_first_visible is None:
            note_first_visible(record, self.stream, text, now)
        else:
            record.visible_chars += len(text)
        if len(self.chunk_times) >= self.stream.cancel_chunks:
            raise Cancelled()

    def _chunk(self, chunk: Chunk, now: float) -> bool:
        """Any other chunk (reasoning, tool calls, usage, a finish reason, an error); ``True``
        at a Responses stream's last event (its ``[DONE]``)."""
        if chunk.error:
            raise Failure(Outcome.STREAM_ERROR, chunk.error)
        if chunk.text:
            self._text(chunk.text, chunk.reasoning, now)
        if chunk.tool_calls:
            if self.stream.tool_args is None:
                self.stream.tool_args = {}
            note_tool_deltas(self.record, self.stream.tool_args, chunk.tool_calls, now)
        if chunk.usage:
            self.stream.usage = chunk.usage
        if chunk.finish_reason:
            self.record.finish_reason = chunk.finish_reason
        return chunk.end


def note_reasoning(record: RequestRecord, stream: Stream, text: str) -> None:
    record.reasoning_chunks += 1
    if stream.reasoning is not None:
        stream.reasoning.append(text)


def note_first_visible(record: RequestRecord, stream: Stream, text: str, now: float) -> None:
    """The first content chunk: the visible TTFT's mark (the reasoning before it is not visible)."""
    record.t_first_visible, record.first_visible_chars = now, len(text)
    record.visible_chars += len(text)
    stream.first_visible = text


def cut_message(record: RequestRecord, cause: str = "") -> str:
    message = f"cut after {len(record.chunk_times)} tokens, no finish_reason"
    return f"{message} ({cause})" if cause else message
