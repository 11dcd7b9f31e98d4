"""The HTTP stack's private internals (geventhttpclient, gevent's sockets), in one place.

The streaming client (:mod:`llm_locust.client.streaming`), the body reader (:mod:`llm_locust.client.reader`)
and the failure rules (:mod:`llm_locust.client.failures`) need more of geventhttpclient than its public
API gives; every such reach is here, and nowhere else:

- :data:`parser_feed`: llhttp's own feed (``geventhttpclient._parser.HTTPResponseParser.feed``),
  without ``HTTPResponse.feed``'s Python wrapper; the reader binds it once and calls it per read;
- :func:`divert_body` / :func:`restore_body`: llhttp hands each de-framed body piece to the
  response's ``_on_body``; an instance attribute shadows the method that appends it to the
  response's buffer (one copy less per token);
- :func:`early_body`: the body bytes parsed together with the headers (``_body_buffer``);
- :func:`response_socket`, :func:`plain_recv`, :func:`real_socket`, :func:`tls_object`: the
  response's socket and, under gevent's socket, the real one (non-blocking) or the TLS object,
  read from the hub;
- :func:`install_alive_check`: the pool's keep-alive check before reusing a connection
  (``ConnectionPool._is_socket_alive``), replaced by one that does not yield to the hub;
- :func:`header`: a header sent more than once comes from the response's header map as a list;
  joined here as one field value (RFC 9110 §5.3), so every reader gets ``str | None``;
- :func:`response_in_traceback`: geventhttpclient parses the first read inside ``request()``
  and keeps the half-built response only in the traceback's frames.

tests/unit/client/test_http_adapter.py pins each behaviour relied on, and fails naming the installed
versions and :data:`CHECKED_WITH` when one differs. None of these functions runs per token:
the reader calls them once per request (``parser_feed`` is bound, not wrapped).
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable

from gevent.socket import socket as GeventSocket
from geventhttpclient._parser import HTTPResponseParser
from geventhttpclient.client import HTTPClient
from geventhttpclient.response import HTTPResponse, HTTPSocketResponse

__all__ = [
    "CHECKED_WITH",
    "divert_body",
    "early_body",
    "header",
    "install_alive_check",
    "parser_feed",
    "plain_recv",
    "real_socket",
    "response_in_traceback",
    "response_socket",
    "restore_body",
    "tls_object",
]

#: The versions whose internals were read and pinned: {package: versions}.
CHECKED_WITH = {"geventhttpclient": ("2.6.1",), "gevent": ("26.9.0",)}

#: ``parser_feed(response, data)``: feed raw bytes to the response's llhttp parser (``b""``: EOF).
parser_feed: Callable[[HTTPResponseParser, bytes], None] = HTTPResponseParser.feed


def header(response: HTTPResponse, name: str) -> str | None:
    """``name``'s value, one string: a repeated header (a proxy adding its own) is a list in
    geventhttpclient's header map, joined with ``", "`` as the field's combined value."""
    value: str | list[str] | None = response.get(name)
    if isinstance(value, list):
        return ", ".join(value)
    return value


def early_body(response: HTTPResponse) -> bytearray:
    """The body bytes parsed with the headers, not yet taken (the buffer itself: clear it to
    take them)."""
    buffer: bytearray = response._body_buffer
    return buffer


def divert_body(response: HTTPResponse, sink: Callable[[bytes], object]) -> None:
    """From now on, each body piece llhttp de-frames goes to ``sink`` (not the buffer)."""
    response._on_body = sink  # type: ignore[method-assign, assignment]  # shadows the method on this instance


def restore_body(response: HTTPResponse) -> None:
    """Undo :func:`divert_body`: body pieces go to the response's buffer again."""
    del response._on_body


def response_socket(response: HTTPSocketResponse) -> GeventSocket | None:
    """The socket a response reads from (``None`` once it was released)."""
    return response._sock


def tls_object(sock: GeventSocket) -> ssl.SSLObject | None:
    """The ``ssl.SSLObject`` under a gevent TLS socket (``None`` for a plain socket)."""
    sslobj: ssl.SSLObject | None = getattr(sock, "_sslobj", None)
    return sslobj


def real_socket(sock: GeventSocket) -> socket.socket:
    """The real socket under a gevent socket (non-blocking: its calls never yield to the hub)."""
    real: socket.socket = getattr(sock, "_sock")  # noqa: B009 (gevent's stub does not declare it)
    return real


def plain_recv(sock: GeventSocket) -> Callable[[int], bytes]:
    """``recv`` of the real socket under a gevent socket: non-blocking, never yields to the hub."""
    return real_socket(sock).recv


def install_alive_check(http: HTTPClient, check: Callable[[GeventSocket | None], bool]) -> None:
    """Make ``http``'s (an ``HTTPClient``) pool ask ``check(sock)`` before reusing a connection."""
    http._connection_pool._is_socket_alive = check  # type: ignore[method-assign, assignment]  # on this pool


def response_in_traceback(exc: BaseException) -> HTTPResponse | None:
    """The response being parsed when ``exc`` was raised inside geventhttpclient (the ``self``
    of a frame in its traceback), or ``None``."""
    tb = exc.__traceback__
    while tb is not None:
        candidate = tb.tb_frame.f_locals.get("self")
        if isinstance(candidate, HTTPResponse):
            return candidate
        tb = tb.tb_next
    return None
