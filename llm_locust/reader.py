"""Response bodies read by the event loop itself: no greenlet wake-up per token.

With one greenlet per stream blocked in ``recv``, every token costs a full wake-up: the
hub switches to the greenlet, it reads, parses and switches back (about 11.5 of the
15-20 µs per token, see benchmarks/README.md). Here the user's greenlet sends the
request and reads the status line and headers as before, then hands the socket to a
:class:`BodyReader` and sleeps until the body has ended. The reader's callback runs
inside gevent's hub (libev) as soon as epoll reports the socket readable: one
timestamp, one non-blocking ``recv``, the bytes fed to the response's own HTTP parser
(llhttp: chunked framing, content length, close-delimited bodies) and the de-framed
body handed to ``sink(body, t)``. Every socket that is ready in one loop iteration is
served in that iteration, one after the other, with no switch in between: the
"one reader that multiplexes every in-flight stream over one epoll" of issue 15.

Timing: ``t`` is ``perf_counter()`` taken just before the ``recv`` that returned the
bytes, so every event in one read carries the moment the client saw that read (the
same rule as a blocking read, minus the greenlet switch). The end of the body is the
time of the read that completed it (:attr:`BodyReader.t_last`).

Order within one loop iteration: libev serves the ready sockets one after the other, so
the last one served is timestamped later by the work of all the others (at 500 streams
per core a few milliseconds). Until its first content chunk has arrived (``started``) a
stream's watcher runs at the loop's highest priority: a request's first token is served
before the tokens of streams already under way, once per request, and TTFT does not
carry the other streams' reads; then the watcher drops to the normal priority.

What the callback must never do: block or switch. It catches everything and hands the
exception to the greenlet, which raises it where a blocking read would have raised it
(``OSError``, ``HTTPParseError``, or whatever ``sink`` raised). A timeout or a kill of
the waiting greenlet (``gevent.Timeout``, ``GreenletExit``) stops the watcher first, so
nothing is read for a request that has already ended; marks taken so far stay.
"""

from __future__ import annotations

import functools
import ssl
import time
from collections.abc import Callable
from typing import Any

import gevent
from gevent.hub import Waiter
from geventhttpclient._parser import HTTPResponseParser
from geventhttpclient.response import HTTPConnectionClosed

__all__ = ["FIRST_PRIORITY", "PRIORITY", "READ_SIZE", "BodyReader"]

#: Bytes asked for per ``recv``: a whole burst of events in one system call.
READ_SIZE = 65536
#: libev priorities: a stream before its first content chunk, and after it.
FIRST_PRIORITY, PRIORITY = 2, 0
_perf_counter = time.perf_counter
#: llhttp's own feed, without the Python wrapper of ``HTTPResponse.feed`` (which only
#: special-cases HEAD replies): 1.25 -> 0.47 µs per token with the body hook below.
_parser_feed = HTTPResponseParser.feed


class BodyReader:
    """Read one response body to its end from the hub; :meth:`run` from the user's greenlet."""

    __slots__ = (
        "_error",
        "_pieces",
        "_recv",
        "_response",
        "_sink",
        "_started",
        "_waiter",
        "_watcher",
        "t_last",
    )

    def __init__(
        self, response: Any, sink: Callable[[bytes, float], None], started: Callable[[], bool] = lambda: True
    ) -> None:
        self._response = response
        self._sink = sink
        self._started = started  # has the stream's first content chunk arrived?
        self._watcher: Any = None
        self._error: BaseException | None = None
        self._waiter: Waiter | None = None
        self._recv: Callable[[int], bytes] | None = None
        self._pieces: list[bytes] = []
        self.t_last: float | None = None

    def run(self) -> None:
        """Deliver the body to ``sink`` until it ends; raises what reading raised."""
        response = self._response
        if response._body_buffer:  # body bytes that came in with the headers
            self.t_last = _perf_counter()
            self._take_body()
        if response.message_complete:
            return
        sock = response._sock
        if sock is None:
            raise HTTPConnectionClosed("connection closed.")
        self._recv = _receiver(sock)
        # llhttp hands each de-framed body piece to ``_on_body``; an instance attribute
        # shadows the method that appends it to a bytearray (one copy less per token)
        response._on_body = self._pieces.append
        watcher = gevent.get_hub().loop.io(sock.fileno(), 1)
        if not self._started():
            watcher.priority = FIRST_PRIORITY
        self._watcher = watcher
        self._waiter = Waiter()
        watcher.start(self._on_readable)
        try:
            self._waiter.get()
        finally:
            watcher.stop()
            watcher.close()
            self._waiter = self._watcher = None
            del response._on_body
        if self._error is not None:
            raise self._error

    def _take_body(self) -> None:
        buffer = self._response._body_buffer
        body = bytes(buffer)
        del buffer[:]
        self._sink(body, self.t_last)  # type: ignore[arg-type]

    def _on_readable(self) -> None:
        """The hub's callback: read what is there, feed it, wake the greenlet at the end."""
        if self._waiter is None:
            return
        now = _perf_counter()
        response = self._response
        try:
            data = self._recv(READ_SIZE)  # type: ignore[misc]
        except (BlockingIOError, InterruptedError, ssl.SSLWantReadError):
            return  # nothing after all (a spurious wake-up, or TLS bytes without a record)
        except BaseException as exc:
            return self._finish(now, exc)
        try:
            _parser_feed(response, data)  # EOF (b"") completes a close-delimited body
            pieces = self._pieces
            if pieces:
                self.t_last = now
                body = pieces[0] if len(pieces) == 1 else b"".join(pieces)
                pieces.clear()
                self._sink(body, now)
                if self._watcher.priority != PRIORITY and self._started():
                    self._lower()
            if response.message_complete:
                return self._finish(now, None)
            if not data:
                return self._finish(now, HTTPConnectionClosed("connection closed."))
        except BaseException as exc:
            return self._finish(now, exc)

    def _lower(self) -> None:
        """The first content chunk is in: back to the normal priority (libev cannot change it
        on an active watcher; stopping and starting it again costs no system call)."""
        watcher = self._watcher
        watcher.stop()
        watcher.priority = PRIORITY
        watcher.start(self._on_readable)

    def _finish(self, now: float, error: BaseException | None) -> None:
        self.t_last = now
        self._error = error
        waiter, self._waiter = self._waiter, None
        if waiter is not None:
            waiter.switch(None)


def _receiver(sock: Any) -> Callable[[int], bytes]:
    """A non-blocking read of the socket: ``b""`` at the end, ``BlockingIOError`` if empty."""
    sslobj = getattr(sock, "_sslobj", None)
    if sslobj is None:
        return sock._sock.recv  # the real socket, which gevent keeps non-blocking
    return functools.partial(_read_tls, sslobj)


def _read_tls(sslobj: Any, size: int) -> bytes:
    """Every decrypted byte there is: epoll cannot see the rest of a record OpenSSL has
    already decrypted (``pending``); whole records still in the kernel it does see."""
    parts = []
    while True:
        try:
            data = sslobj.read(size)
        except ssl.SSLWantReadError:
            break
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
            data = b""  # a close_notify, or a close without one (gevent's suppress_ragged_eofs)
        if not data:
            if parts:
                break  # the end shows again at the next wake-up
            return b""
        parts.append(data)
        if not sslobj.pending():
            break
    if not parts:
        raise ssl.SSLWantReadError("no whole TLS record yet")
    return b"".join(parts)
