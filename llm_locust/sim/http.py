"""A minimal HTTP/1.1 server front on a raw ``asyncio.Protocol``.

Why hand-written: the simulator must stream tens of thousands of tokens a second from one
core, and a framework's per-request and per-write overhead would dominate that budget. The
subset here is what OpenAI-compatible clients need:

- one request at a time per connection (keep-alive; bytes of a next request arriving early
  are buffered, not pipelined), ``Content-Length`` request bodies only;
- ``Expect: 100-continue`` is answered; ``Connection: close`` and HTTP/1.0 close after the
  response;
- responses are either complete (``Content-Length``) or chunked streams that the handler
  writes pre-framed bytes into (see :func:`chunk`).

``TCP_NODELAY`` is set on every accepted socket: SSE chunks are small, and with Nagle's
algorithm a chunk written while the previous one is unacknowledged waits for the delayed
ACK (~40 ms).
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from llm_locust.config.jsontypes import JsonValue

__all__ = [
    "SSE_HEADERS",
    "Handler",
    "HttpConnection",
    "Request",
    "chunk",
    "response_bytes",
]

_MAX_HEAD = 64 * 1024
_MAX_BODY = 64 * 1024 * 1024

_REASONS = {
    100: "Continue",
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    411: "Length Required",
    413: "Payload Too Large",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
    503: "Service Unavailable",
}

SSE_HEADERS = (
    b"HTTP/1.1 200 OK\r\n"
    b"Server: llm-locust-sim\r\n"
    b"Content-Type: text/event-stream; charset=utf-8\r\n"
    b"Cache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\n"
    b"\r\n"
)


@dataclass
class Request:
    method: str
    path: str
    version: str
    headers: dict[str, str]  # lower-cased names
    body: bytes
    t_received: float  # loop.time() when the whole request had arrived

    @property
    def keep_alive(self) -> bool:
        conn = self.headers.get("connection", "").lower()
        if self.version == "HTTP/1.0":
            return conn == "keep-alive"
        return conn != "close"

    def json(self) -> JsonValue:
        value: JsonValue = json.loads(self.body)
        return value


class Handler(Protocol):
    def handle(self, conn: HttpConnection, request: Request) -> None:
        """Answer ``request`` now or later; must eventually call ``conn.finish()``/``abort()``."""
        ...


def chunk(payload: bytes) -> bytes:
    """One chunk of ``Transfer-Encoding: chunked``."""
    return b"%x\r\n%b\r\n" % (len(payload), payload)


def response_bytes(
    status: int,
    body: bytes,
    content_type: str = "application/json",
    extra_headers: tuple[tuple[str, str], ...] = (),
    close: bool = False,
) -> bytes:
    head = [
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}",
        "Server: llm-locust-sim",
        f"Content-Type: {content_type}",
        f"Content-Length: {len(body)}",
    ]
    head += [f"{k}: {v}" for k, v in extra_headers]
    if close:
        head.append("Connection: close")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


class _BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class HttpConnection(asyncio.Protocol):
    """One client connection. The handler owns the response until it calls finish()."""

    def __init__(self, handler: Handler, registry: set[HttpConnection] | None = None) -> None:
        self.handler = handler
        self._registry = registry  # live connections, for shutdown
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.busy = False
        self.keep_alive = True
        self.on_lost: Callable[[], None] | None = None  # set by the handler while streaming
        self._buf = bytearray()
        self._loop = asyncio.get_running_loop()

    # -- asyncio.Protocol ------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._registry is not None:
            self._registry.add(self)

    def data_received(self, data: bytes) -> None:
        self._buf += data
        if not self.busy:
            self._next_request()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._registry is not None:
            self._registry.discard(self)
        callback, self.on_lost = self.on_lost, None
        if callback is not None:
            callback()

    # -- responses -------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        if not self.closed and self.transport is not None:
            self.transport.write(data)

    def respond(
        self,
        status: int,
        body: bytes,
        content_type: str = "application/json",
        extra_headers: tuple[tuple[str, str], ...] = (),
    ) -> None:
        """Send a complete response and finish the exchange."""
        self.write(response_bytes(status, body, content_type, extra_headers, close=not self.keep_alive))
        self.finish()

    def respond_json(
        self, status: int, obj: JsonValue, extra_headers: tuple[tuple[str, str], ...] = ()
    ) -> None:
        self.respond(status, json.dumps(obj).encode(), extra_headers=extra_headers)

    def finish(self) -> None:
        """The response is complete: close, or go back to reading the next request."""
        self.on_lost = None
        self.busy = False
        if self.closed or self.transport is None:
            return
        if not self.keep_alive:
            self.transport.close()
        elif self._buf:
            self._loop.call_soon(self._next_request)

    def abort(self) -> None:
        """Drop the connection without a proper end (used for faults)."""
        self.on_lost = None
        self.busy = False
        if self.transport is not None and not self.closed:
            self.transport.abort()

    # -- request parsing -------------------------------------------------------------

    def _next_request(self) -> None:
        if self.busy or self.closed or not self._buf:
            return
        try:
            request = self._parse()
        except _BadRequest as e:
            self.keep_alive = False
            self.busy = True
            body = json.dumps({"error": {"message": str(e), "type": "BadRequestError", "code": e.status}})
            self.respond(e.status, body.encode())
            return
        if request is None:
            return
        self.busy = True
        self.keep_alive = request.keep_alive
        self.handler.handle(self, request)

    def _parse(self) -> Request | None:
        buf = self._buf
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            if len(buf) > _MAX_HEAD:
                raise _BadRequest(431, "request head too large")
            return None
        lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
        try:
            method, target, version = lines[0].split(" ")
        except ValueError:
            raise _BadRequest(400, "malformed request line") from None
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                raise _BadRequest(400, "malformed header line")
            headers[name.strip().lower()] = value.strip()
        if "chunked" in headers.get("transfer-encoding", "").lower():
            raise _BadRequest(501, "chunked request bodies are not supported; send Content-Length")
        try:
            length = int(headers.get("content-length", "0"))
        except ValueError:
            raise _BadRequest(400, "bad Content-Length") from None
        if length < 0 or length > _MAX_BODY:
            raise _BadRequest(413, "request body too large")
        body_start = end + 4
        if len(buf) < body_start + length:
            if headers.get("expect", "").lower() == "100-continue" and len(buf) == body_start:
                self.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            return None
        body = bytes(buf[body_start : body_start + length])
        del buf[: body_start + length]
        path = target.split("?", 1)[0]
        return Request(method, path, version, headers, body, self._loop.time())
