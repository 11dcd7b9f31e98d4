"""A reply that failed, as an outcome class and a short message (:class:`Failure`).

The streaming client's failures apart from the stream itself: an error status and its body
(OpenAI-style JSON if present; a redirect names its ``Location``), a transport that broke or
was framed wrong after the status line (:func:`end_of_transport`), a broken chunk in the very
read that brought the headers (:func:`early_break`), an exception no rule expected. One fault,
one class: once a status line has arrived the failure is never ``connect``.
"""

from __future__ import annotations

import json
import logging
import socket
import time

import gevent
from geventhttpclient.response import HTTPParseError, HTTPSocketResponse

from llm_locust.client.http_adapter import early_body, header, response_in_traceback
from llm_locust.protocol.openai import classify_status, shown_host
from llm_locust.protocol.stream import Failure, Stream, StreamEvents, cut_message
from llm_locust.record import Outcome, RequestRecord

__all__ = [
    "early_break",
    "end_of_transport",
    "error_text",
    "exc_text",
    "failure_from_exception",
    "unexpected",
]

log = logging.getLogger("llm_locust")
_ERROR_BODY_LIMIT = 64 * 1024


def end_of_transport(record: RequestRecord, exc: BaseException, t_end: float | None = None) -> None:
    """The connection broke or the HTTP framing was wrong after the status line (at ``t_end``)."""
    if isinstance(exc, (socket.timeout, TimeoutError)):
        raise failure_from_exception(exc, Outcome.TIMEOUT) from None
    record.t_end = t_end if t_end is not None else time.perf_counter()
    if record.finish_reason is not None and record.chunk_times:
        # every choice had finished: the reply is complete, only its end was untidy
        record.message = f"the connection ended badly after finish_reason ({exc_text(exc)})"
        return
    raise Failure(Outcome.STREAM_BROKEN, cut_message(record, exc_text(exc))) from None


def early_break(exc: HTTPParseError, record: RequestRecord, stream: Stream) -> None:
    """A parse error inside ``request()``: a connect failure only if no status arrived.

    geventhttpclient parses the first read (headers and any body bytes with them) before
    it returns the response, so a broken chunk there surfaces from ``request()``. The
    half-built response is in the traceback; its status and the body bytes it had parsed
    are treated exactly as a later read would have treated them.
    """
    response = response_in_traceback(exc)
    if response is None or not response.headers_complete:
        raise failure_from_exception(exc, Outcome.CONNECT) from None
    record.status = response.status_code
    if response.status_code != 200:
        raise Failure(classify_status(response.status_code), f"HTTP {response.status_code}: {exc_text(exc)}")
    now = time.perf_counter()
    events = StreamEvents(record, stream)
    try:
        events.feed(bytes(early_body(response)), now)
        events.end(now)
    except Failure as failure:
        if failure.outcome != Outcome.STREAM_BROKEN:
            raise
    end_of_transport(record, exc)


def error_text(response: HTTPSocketResponse) -> str:
    """A short message from an error response (OpenAI-style JSON if present); a redirect
    names where it points (it is not followed: ``--host`` should name the server itself)."""
    status = response.status_code
    if 300 <= status < 400:
        location = header(response, "location")
        where = f"redirects to {shown_host(location)[:200]}" if location else "a redirect without a Location"
        return f"HTTP {status}: {where} (not followed)"
    try:
        with gevent.Timeout(5):
            raw = response.read(_ERROR_BODY_LIMIT)
    except (gevent.Timeout, OSError, HTTPParseError):
        raw = b""
    text = raw.decode("utf-8", "replace").strip()
    try:
        obj = json.loads(text)
        error = obj.get("error", obj) if isinstance(obj, dict) else obj
        text = str(error.get("message", error)) if isinstance(error, dict) else str(error)
    except ValueError:
        pass
    text = " ".join(text.split())
    return f"HTTP {response.status_code}: {text[:200]}" if text else f"HTTP {response.status_code}"


def exc_text(exc: BaseException) -> str:
    name = type(exc).__name__
    return f"{name}: {exc}" if str(exc) else name


def unexpected(exc: BaseException) -> str:
    """A reply no rule above expected: still one record; the first traceback is logged."""
    if not _unexpected_seen:
        _unexpected_seen.append(True)
        log.warning("llm-locust: unexpected reply, recorded as bad_payload", exc_info=exc)
    return f"unreadable reply ({exc_text(exc)})"


_unexpected_seen: list[bool] = []


def failure_from_exception(exc: BaseException, default: Outcome) -> Failure:
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return Failure(Outcome.TIMEOUT, f"timed out: {exc}")
    if isinstance(exc, (ConnectionRefusedError, socket.gaierror)):
        return Failure(Outcome.CONNECT, exc_text(exc))
    return Failure(default, exc_text(exc))
