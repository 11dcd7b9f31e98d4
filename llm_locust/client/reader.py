"""Response bodies read by the event loop itself: no greenlet wake-up per token.

With one greenlet per stream blocked in ``recv``, every token costs a full wake-up: the
hub switches to the greenlet, it reads, parses and switches back (about 11.5 of the
15-20 µs per token, see benchmarks/README.md). Here the user's greenlet sends the
request and reads the status line and headers as before, then hands the socket to a
:class:`BodyReader` and sleeps until the body has ended. The reader's callback runs
inside gevent's hub (libev) as soon as epoll reports the socket readable: one
timestamp, one non-blocking ``recv``, the bytes fed to the response's own HTTP parser
(llhttp: chunked framing, content length, close-delimited bodies) and the de-framed
body handed to ``sink(body, t)``. A sink that returns true has seen the end of its
stream (``[DONE]``): the greenlet is woken then, even if the server never ends the body;
what follows is drained in the background for at most :data:`DONE_GRACE_S`, then the
connection goes back to the pool if its body ended, or is closed. Every socket
that is ready in one loop iteration is served in that iteration, one after the other,
with no switch in between: the "one reader that multiplexes every in-flight stream
over one epoll" of issue 15.

Timing: ``t`` is when the bytes of the read reached this host: on a plain socket the
kernel's receive stamp of the read's last segment (``SO_TIMESTAMPNS``, converted to
``perf_counter``: llm_locust/client/stamps.py), so a loop slow to come round to a ready
socket does not add its wait to TTFT and ITL; on TLS, ``perf_counter()`` taken just before
the read. Every event in one read carries that one time. The end of the body is the time
of the read that completed it (:attr:`BodyReader.t_last`).

Order within one loop iteration: libev serves the ready sockets one after the other, so
the last one served is timestamped later by the work of all the others (at 500 streams
per core a few milliseconds). Until its first content chunk has arrived (``started``) a
stream's watcher runs at the loop's highest priority: a request's first token is served
before the tokens of streams already under way, once per request, and TTFT does not
carry the other streams' reads; then the watcher drops to the normal priority.

Waking the greenlet at the end: at most :data:`WAKE_SLICE_S` of ended streams per loop
iteration (:class:`_Wakes`): the first from the read that ended them, the rest from a timer, a
slice per iteration. A woken greenlet records its request and builds and sends its next one
before it waits again (~0.2-0.3 ms); streams started together stay in step and end within a
few ms of each other, and 700 of them woken straight from their reads held the loop 60-90 ms
every 2 s, so every other stream's tokens were read late, two or three to a read (ITL P99 +10
ms over the reference client's).

What the callback must never do: block, or switch to anything but the greenlet whose stream
it ended (:class:`_Wakes`, which returns to the hub once that greenlet waits again). It
catches everything and hands the exception to the greenlet, which raises it where a blocking
read would have raised it (``OSError``, ``HTTPParseError``, or whatever ``sink`` raised). A
timeout or a kill of the waiting greenlet (``gevent.Timeout``, ``GreenletExit``) stops the
watcher first, so nothing is read for a request that has already ended; marks taken so far stay.
"""

from __future__ import annotations

import functools
import ssl
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import gevent
import gevent.event
from gevent.hub import Waiter
from gevent.socket import socket as GeventSocket
from geventhttpclient.response import HTTPConnectionClosed, HTTPSocketResponse

from llm_locust.client.http_adapter import (
    divert_body,
    early_body,
    parser_feed,
    real_socket,
    response_socket,
    restore_body,
    tls_object,
)
from llm_locust.client.stamps import StampedRead, kernel_stamped, loop_stamped

if TYPE_CHECKING:  # the loop's watcher type exists in gevent's stubs only
    from gevent._types import _TimerWatcher

__all__ = ["DONE_GRACE_S", "FIRST_PRIORITY", "PRIORITY", "READ_SIZE", "BodyReader"]

#: Bytes asked for per ``recv``: a whole burst of events in one system call.
READ_SIZE = 65536
#: After ``[DONE]``, how long the rest of an unfinished body is waited for (its last chunk, a
#: moment later) before the connection is closed rather than put back in the pool.
DONE_GRACE_S = 0.25
#: Seconds of ended streams' greenlets woken per loop iteration, and how often (:class:`_Wakes`).
WAKE_SLICE_S, WAKE_EVERY_S = 0.002, 0.001
#: libev priorities: a stream before its first content chunk, and after it.
FIRST_PRIORITY, PRIORITY = 2, 0
_perf_counter = time.perf_counter
#: llhttp's own feed, without the Python wrapper of ``HTTPResponse.feed`` (which only
#: special-cases HEAD replies): 1.25 -> 0.47 µs per token with the body hook below.
_parser_feed = parser_feed  # bound once (llm_locust/client/http_adapter.py): no call layer per read


class BodyReader:
    """Read one response body to its end from the hub; :meth:`run` from the user's greenlet,
    then :meth:`release` (the connection goes back to the pool, or is closed)."""

    __slots__ = (
        "_error",
        "_idle",
        "_kernel",
        "_pieces",
        "_read",
        "_response",
        "_sink",
        "_started",
        "_timer",
        "_waiter",
        "_watcher",
        "_woken",
        "t_last",
    )

    def __init__(
        self,
        response: HTTPSocketResponse,
        sink: Callable[[bytes, float], bool | None],
        started: Callable[[], bool] = lambda: True,
        kernel: bool = True,
    ) -> None:
        self._response = response
        self._sink = sink
        self._started = started  # has the stream's first content chunk arrived?
        self._kernel = kernel  # reads timed by the kernel's receive stamps (plain sockets)
        # libev's io watcher: Any, as gevent's stub declares no `priority` (set per stream, below)
        self._watcher: Any = None
        self._timer: _TimerWatcher | None = None  # set while the rest of a body is drained after [DONE]
        self._idle: gevent.event.Event | None = None  # for whoever waits for the end of that drain
        self._error: BaseException | None = None
        self._waiter: Waiter | None = None
        self._woken: Waiter | None = None  # the waiter a stream's end is to wake (:class:`_Wakes`)
        self._read: StampedRead | None = None
        self._pieces: list[bytes] = []
        self.t_last: float | None = None

    def run(self) -> None:
        """Deliver the body to ``sink`` until it ends; raises what reading raised."""
        response = self._response
        done = False
        if early_body(response):  # body bytes that came in with the headers
            self.t_last = _perf_counter()
            done = bool(self._take_body())
        if response.message_complete:
            return
        sock = response_socket(response)
        if sock is None:
            if done:
                return
            raise HTTPConnectionClosed("connection closed.")
        self._read = _reader(sock, self._kernel)
        # llhttp hands each de-framed body piece to ``_on_body``; an instance attribute
        # shadows the method that appends it to a bytearray (one copy less per token)
        divert_body(response, self._pieces.append)
        watcher = gevent.get_hub().loop.io(sock.fileno(), 1)
        self._watcher = watcher
        if done:
            return self._drain()
        if not self._started():
            watcher.priority = FIRST_PRIORITY  # type: ignore[attr-defined]  # libev and libuv have it; types-gevent omits it
        self._waiter = Waiter()
        watcher.start(self._on_readable)
        try:
            self._waiter.get()
        finally:
            self._waiter = self._woken = None
            if self._timer is None:
                self._stop()
        if self._error is not None:
            raise self._error

    def release(self) -> bool:
        """The connection back to the pool (closed if its body was not read to the end); while
        the rest of a body is drained after ``[DONE]``, the drain's end releases it. ``True``:
        still draining (:meth:`wait_released`)."""
        if self._timer is None:
            self._response.release()
            return False
        return True

    def wait_released(self) -> None:
        """Return once the connection is released (at most :data:`DONE_GRACE_S` after ``[DONE]``):
        a user with one connection waits here before it times its next request."""
        if self._timer is not None:
            self._idle = self._idle or gevent.event.Event()
            self._idle.wait()

    def _stop(self) -> None:
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.stop()
            watcher.close()
            restore_body(self._response)

    def _take_body(self) -> bool | None:
        buffer = early_body(self._response)
        body = bytes(buffer)
        del buffer[:]
        return self._sink(body, self.t_last)  # type: ignore[arg-type]

    def _on_readable(self) -> None:
        """The hub's callback: read what is there, feed it, wake the greenlet at the end."""
        if self._waiter is None:
            return
        now = _perf_counter()
        response = self._response
        try:
            data, now = self._read(READ_SIZE, now)  # type: ignore[misc]
        except (BlockingIOError, InterruptedError, ssl.SSLWantReadError):
            return  # nothing after all (a spurious wake-up, or TLS bytes without a record)
        except BaseException as exc:
            return self._finish(now, exc)
        try:
            _parser_feed(response, data)  # EOF (b"") completes a close-delimited body
        except BaseException as exc:
            return self._broken(now, exc)
        try:
            pieces = self._pieces
            if pieces:
                self.t_last = now
                body = pieces[0] if len(pieces) == 1 else b"".join(pieces)
                pieces.clear()
                if self._sink(body, now):  # the stream's end ([DONE]): nothing more for the sink
                    if not response.message_complete:
                        self._drain()
                    return self._finish(now, None)
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

    def _broken(self, now: float, exc: BaseException) -> None:
        """The HTTP framing broke inside this read: the body parsed before the bad bytes (a
        token in the same read) still goes to the sink, then the error to the greenlet."""
        error: BaseException | None = exc
        pieces = self._pieces
        if pieces:
            body = b"".join(pieces)
            pieces.clear()
            self.t_last = now
            try:
                if self._sink(body, now):
                    error = None  # [DONE] came before the bad bytes: the stream is complete
            except BaseException as sink_error:
                error = sink_error
        self._finish(now, error)

    def _drain(self) -> None:
        """After ``[DONE]``: the stream is complete (the greenlet is woken with it), but its
        HTTP body has not ended. Read and drop what follows for up to :data:`DONE_GRACE_S`
        (the body's last chunk usually comes a moment later: the connection stays
        reusable), then release the connection: back to the pool if the body ended,
        closed if the server held it open."""
        watcher = self._watcher
        watcher.stop()
        watcher.start(self._on_drain)
        self._timer = gevent.get_hub().loop.timer(DONE_GRACE_S)
        self._timer.start(self._drained)

    def _on_drain(self) -> None:
        try:
            data = self._read(READ_SIZE, 0.0)[0]  # type: ignore[misc]
        except (BlockingIOError, InterruptedError, ssl.SSLWantReadError):
            return
        except BaseException:
            return self._drained()
        try:
            _parser_feed(self._response, data)
        except BaseException:
            return self._drained()
        self._pieces.clear()
        if not data or self._response.message_complete:
            self._drained()

    def _drained(self) -> None:
        timer, self._timer = self._timer, None
        if timer is None:
            return
        timer.stop()
        timer.close()
        self._stop()
        self._response.release()
        if self._idle is not None:
            self._idle.set()

    def _finish(self, now: float, error: BaseException | None) -> None:
        self.t_last = now
        self._error = error
        waiter, self._waiter = self._waiter, None
        if waiter is not None:
            self._woken = waiter
            _wakes.add(self)

    def _wake(self) -> None:
        waiter = self._woken
        if waiter is not None:  # None: the greenlet stopped waiting (a timeout, a kill) meanwhile
            self._woken = None
            waiter.switch(None)


class _Wakes:
    """The greenlets whose streams ended, woken in order, :data:`WAKE_SLICE_S` of them per loop
    iteration. A woken greenlet records its request and builds and sends its next one before it
    waits again (~0.2-0.3 ms). One end in an iteration is woken at once, from its read (the user
    back in flight without waiting for the loop to come round: issue 29 §2); once the iteration
    has spent its slice on wake-ups the rest wait for a timer, which wakes a slice of them per
    iteration. Streams started together stay in step and end within a few ms of each other: 700
    of them woken straight from their reads held the loop 60-90 ms every 2 s, and every other
    stream's tokens were read late."""

    def __init__(self) -> None:
        self._queue: deque[BodyReader] = deque()
        self._timer: _TimerWatcher | None = None
        self._loop: Any = None  # the loop the timer belongs to (a new hub gets a new timer)
        self._iteration = -1  # the loop iteration whose wake-ups ``_spent`` counts
        self._spent = 0.0

    def add(self, reader: BodyReader) -> None:
        loop = gevent.get_hub().loop
        if not self._queue:
            iteration = loop.iteration
            if iteration != self._iteration:
                self._iteration, self._spent = iteration, 0.0
            if self._spent < WAKE_SLICE_S:
                start = _perf_counter()
                reader._wake()
                self._spent += _perf_counter() - start
                return
        self._queue.append(reader)
        timer = self._timer
        if timer is None or self._loop is not loop:
            timer = self._timer = loop.timer(0.0, WAKE_EVERY_S)
            self._loop = loop
        if not timer.active:  # type: ignore[attr-defined]  # libev's timer has it; types-gevent omits it
            timer.start(self._run)

    def _run(self) -> None:
        queue = self._queue
        deadline = _perf_counter() + WAKE_SLICE_S
        while queue:
            queue.popleft()._wake()
            if _perf_counter() >= deadline:
                return
        if self._timer is not None:
            self._timer.stop()


_wakes = _Wakes()


def _reader(sock: GeventSocket, kernel: bool) -> StampedRead:
    """A non-blocking read of the socket (``b""`` at the end, ``BlockingIOError`` if empty) and
    the time its bytes arrived: the kernel's stamp on a plain socket (llm_locust/client/stamps.py),
    the loop's time of the read on TLS."""
    sslobj = tls_object(sock)
    if sslobj is None:
        real = real_socket(sock)  # gevent keeps it non-blocking
        return (kernel and kernel_stamped(real)) or loop_stamped(real.recv)
    return loop_stamped(functools.partial(_read_tls, sslobj))


def _read_tls(sslobj: ssl.SSLObject, size: int) -> bytes:
    """Every decrypted byte there is: epoll cannot see the rest of a record OpenSSL has
    already decrypted (``pending``); whole records still in the kernel it does see."""
    parts: list[bytes] = []
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
