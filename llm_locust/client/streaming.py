"""The OpenAI-compatible streaming request: body, read loop, timing marks, error classes.

One :class:`StreamingClient` per Locust user holds one keep-alive connection
(geventhttpclient, the engine under Locust's ``FastHttpUser``). :meth:`StreamingClient.send`
fills a :class:`~llm_locust.record.RequestRecord` and never raises for a failed request:
every request ends in exactly one record, whatever the server sends, with an outcome
class and a short message.

When a stream counts as complete: when a choice carries a ``finish_reason`` (every
OpenAI-compatible server sends one). ``[DONE]`` or a clean close without one means the
stream was cut: ``stream_broken``, "cut after N tokens, no finish_reason", with the
marks it had (TTFT, chunk times, ITL). ``[DONE]`` ends the stream even when the server
keeps its HTTP body open after it: E2E is the read that brought ``[DONE]``, and the rest of
the body is drained in the background (the connection is reused if the body ends within
:data:`~llm_locust.client.reader.DONE_GRACE_S`, closed if not; a user's next request is timed
after that). One fault, one class: once a status line has arrived the failure is never
``connect`` (which means no HTTP reply at all), whether the bad bytes came in the same read
as the headers or later.

Why not ``FastHttpSession.request(stream=True)``: Locust's timer stops at the response
headers and its ``iter_content`` waits for 1,024 bytes, which delays small SSE events.
Here the greenlet sends the request and reads the headers; the body is read by the
event loop itself (:mod:`llm_locust.client.reader`), every event timestamped by the read that
brought it, while the greenlet waits for the end of its stream.
"""

from __future__ import annotations

import functools
import json
import logging
import socket
import ssl
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import gevent
import gevent.ssl
from gevent import GreenletExit
from gevent.monkey import get_original
from gevent.socket import socket as GeventSocket
from geventhttpclient import HTTPClient
from geventhttpclient.response import HTTPConnectionClosed, HTTPParseError, HTTPSocketPoolResponse

from llm_locust.client import health
from llm_locust.client.failures import (
    early_break,
    end_of_transport,
    error_text,
    exc_text,
    failure_from_exception,
    unexpected,
)
from llm_locust.client.http_adapter import header, install_alive_check
from llm_locust.client.reader import BodyReader
from llm_locust.config.cancel import CancelPoint
from llm_locust.config.jsontypes import JsonObject
from llm_locust.config.tls import INSECURE_WARNING, TlsSettings, tls_context
from llm_locust.load.cancel import CancelPolicy
from llm_locust.protocol.counts import TokenCounter, apply_tokenizer, requested_tokens, settle_counts
from llm_locust.protocol.encoding import decoding
from llm_locust.protocol.openai import (
    ENDPOINT_PATHS,
    api_prefix,
    build_body,
    classify_status,
    event_parser,
    shown_host,
)
from llm_locust.protocol.reasoning import batched_first_message
from llm_locust.protocol.retry import retry_after_seconds
from llm_locust.protocol.stream import Cancelled, Failure, Stream, StreamEvents
from llm_locust.protocol.tools import ToolOffer
from llm_locust.record import CANCELLED, INCOMPLETE, Outcome, RequestRecord

__all__ = [
    "ClientConfig",
    "StreamingClient",
    "api_prefix",
    "build_body",
    "classify_status",
    "error_text",
    "exc_text",
    "http_client",
    "shown_host",
]

log = logging.getLogger("llm_locust")
_select = get_original("select", "select")  # the original, not gevent's yielding one
#: Failures for which the prompt's size is the likely cause, so the message gives it.
_SIZE_HINT_SKIP = (Outcome.CONNECT, Outcome.HTTP_429, INCOMPLETE, CANCELLED)


def _socket_alive(sock: GeventSocket | None) -> bool:
    """geventhttpclient's keep-alive check without its hidden ``gevent.sleep(0)``.

    The pool asks ``select([sock], [], [], 0)`` before reusing a connection; gevent's
    ``select`` yields to the hub there, so the request left one full loop iteration after
    ``t_sent`` (median +18 ms TTFT at 500 users, see benchmarks/README.md). Same check,
    no yield.
    """
    if sock is None:
        return False
    try:
        return sock.fileno() >= 0 and not _select([sock], [], [], 0.0)[0]
    except (OSError, ValueError):
        return False


@dataclass
class ClientConfig:
    """Per-run request options (from the command line); the API key never leaves memory.

    ``tokenizer`` (the model's, when the run has one) counts tokens of requests whose
    server sent no usage; ``ca_cert`` / ``insecure`` set TLS verification.
    """

    host: str
    model: str | None
    endpoint: str = "chat"
    api_key: str | None = None
    temperature: float | None = None
    extra_body: JsonObject = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    request_timeout: float = 600.0
    connect_timeout: float = 10.0
    ca_cert: str | None = None
    insecure: bool = False
    tokenizer: TokenCounter | None = None
    cancel: CancelPolicy | None = None  # --cancel-rate / --cancel-after
    tools: ToolOffer | None = None  # --tools / --tool-share (llm_locust.protocol.tools)
    session_header: str | None = None  # --session-header: the request's session id in this header
    kernel_timestamps: bool = True  # --read-timestamps kernel: reads timed by the kernel's stamps

    @property
    def tls(self) -> TlsSettings:
        return TlsSettings(self.ca_cert, self.insecure)


@functools.lru_cache(maxsize=8)
def _gevent_context(settings: TlsSettings) -> ssl.SSLContext:
    if settings.insecure:
        log.warning("llm-locust: %s", INSECURE_WARNING)
    return tls_context(settings, gevent.ssl.create_default_context)


def http_client(
    config: ClientConfig, concurrency: int = 1, network_timeout: float | None = None
) -> HTTPClient:
    """A connection pool to ``config.host`` with the run's TLS verification."""
    context = _gevent_context(config.tls)
    return HTTPClient.from_url(
        config.host,
        concurrency=concurrency,
        connection_timeout=config.connect_timeout,
        network_timeout=network_timeout,
        ssl_context_factory=lambda **_: context,
        insecure=config.insecure,
    )


class StreamingClient:
    """Sends streaming completions over keep-alive connections and times them.

    A closed-loop user needs one connection (``concurrency=1``); an open-loop dispatcher
    shares one client with up to ``concurrency`` requests in flight.
    """

    def __init__(self, config: ClientConfig, concurrency: int = 1) -> None:
        self.config = config
        self._path = api_prefix(config.host) + ENDPOINT_PATHS[config.endpoint]
        self._parse = event_parser(config.endpoint)
        self._headers = self._request_headers()
        # No per-recv socket timeout: send() bounds the whole request with one
        # gevent.Timeout of the same length, and a socket timeout costs a timer per read.
        self._http = http_client(config, concurrency)
        # a closed-loop user's one connection, still draining a body after [DONE] (reader.py)
        self._draining: BodyReader | None = None
        self._one_connection = concurrency == 1
        install_alive_check(self._http, _socket_alive)  # no public hook: llm_locust/client/http_adapter.py
        cancel = config.cancel
        self._cancels = cancel.draws() if cancel is not None and cancel.rate > 0 else None
        self._health = health.monitor()  # the loop's stalls, for each record's client_stall_s

    def _request_headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        headers.update(self.config.headers)
        return headers

    def close(self) -> None:
        self._http.close()

    def _headers_for(self, record: RequestRecord) -> dict[str, str]:
        """The request's headers: the run's, and its session id under ``--session-header``."""
        name = self.config.session_header
        if name is None or record.session_id is None:
            return self._headers
        return {**self._headers, name: record.session_id}

    def send(self, body: JsonObject, record: RequestRecord, keep_text: bool = False) -> str:
        """Send ``body``, stream the reply into ``record``; returns the text if ``keep_text``."""
        payload = json.dumps(body).encode()
        counter = self.config.tokenizer
        keep = keep_text or counter is not None
        stream = Stream(parts=[] if keep else None, reasoning=[] if keep else None)
        if self._draining is not None:  # not inside the next request's time
            self._draining.wait_released()
            self._draining = None
        record.max_tokens = requested_tokens(body)
        record.tools_offered = "tools" in body
        point = self._cancels.next() if self._cancels is not None else None
        if point is not None and point.chunks is not None:
            stream.cancel_chunks = point.chunks
        record.wall_start = time.time()
        record.t_sent = time.perf_counter()
        try:
            with (
                gevent.Timeout(self.config.request_timeout, Failure(Outcome.TIMEOUT, "request timed out")),
                gevent.Timeout(point.seconds if point is not None else None, Cancelled()),
            ):
                self._exchange(payload, record, stream)
        except Cancelled:
            _cancelled(record, point)
        except Failure as failure:
            record.outcome, record.message = failure.outcome, failure.message
        except (GreenletExit, KeyboardInterrupt, SystemExit) as stop:
            _stopped(record, stop)  # the caller hands the partial record on, then lets it unwind
            raise
        except Exception as exc:  # every request ends in one record, whatever arrives
            record.outcome, record.message = Outcome.BAD_PAYLOAD, unexpected(exc)
        finally:
            if record.t_end is None:
                record.t_end = time.perf_counter()
            record.client_stall_s = self._health.stall_within(record.t_sent, record.t_end)
            settle_counts(record, stream.usage)
            _add_size_hint(record)
        text = "".join(stream.parts or ())
        if counter is not None and record.ok:
            _count_with(counter, record, body, text, stream)
        _warn_batched_first(record)
        return text if keep_text else ""

    def _exchange(self, payload: bytes, record: RequestRecord, stream: Stream) -> None:
        response = self._open(payload, record, stream)
        if response is None:  # the reply ended inside request() (see _open)
            return
        reader = None
        try:
            record.status = response.status_code
            if response.status_code != 200:
                after = retry_after_seconds(response.get("retry-after"))
                if after is not None:  # a closed-loop user waits that long (runtime/backoff.py)
                    record.extra["retry_after"] = after
                raise Failure(classify_status(response.status_code), error_text(response))
            content_type = response.get("content-type") or ""
            if "text/event-stream" not in content_type:
                got = content_type or "no content type"
                raise Failure(
                    Outcome.BAD_PAYLOAD, f"expected text/event-stream, got {got!r} ({error_text(response)})"
                )
            events = StreamEvents(record, stream, self._parse)
            sink = decoding(header(response, "content-encoding"), events.feed)
            reader = BodyReader(
                response, sink, started=lambda: bool(record.chunk_times), kernel=self.config.kernel_timestamps
            )
            try:
                reader.run()
            except (OSError, HTTPParseError) as exc:
                end_of_transport(record, exc, reader.t_last)
                return
            events.end(reader.t_last)
        finally:
            if reader is None:
                response.release()
            elif reader.release() and self._one_connection:
                self._draining = reader

    def _open(self, payload: bytes, record: RequestRecord, stream: Stream) -> HTTPSocketPoolResponse | None:
        """Send the request; retry once if a kept-alive connection was closed before any reply.

        An idle connection the server closed (keep-alive timeout) fails only when reused;
        the server never saw the request, so one retry on a fresh connection is safe. The
        clock restarts with it. A reply whose status line arrived but whose body broke in
        the same read is handled as if the break came later (:func:`early_break`).
        """
        for attempt in (1, 2):
            try:
                return self._http.request("POST", self._path, body=payload, headers=self._headers_for(record))
            except HTTPConnectionClosed as exc:
                if attempt == 2:
                    raise failure_from_exception(exc, Outcome.CONNECT) from None
                record.wall_start, record.t_sent = time.time(), time.perf_counter()
            except HTTPParseError as exc:
                early_break(exc, record, stream)
                return None
            except (ConnectionError, socket.gaierror, OSError) as exc:
                raise failure_from_exception(exc, Outcome.CONNECT) from None
        raise AssertionError("unreachable")


def _add_size_hint(record: RequestRecord) -> None:
    """A failure before any token: say how big the request was (the prompt may not fit)."""
    if record.ok or record.chunk_times or record.outcome in _SIZE_HINT_SKIP:
        return
    sizes = []
    if record.target_input_tokens is not None:
        sizes.append(f"prompt {record.target_input_tokens} tokens")
    if record.max_tokens is not None:
        sizes.append(f"max_tokens {record.max_tokens}")
    if sizes:
        record.message = f"{record.message} ({', '.join(sizes)})"


class _OffLoop:
    """A CPU-bound tokenizer run on gevent's thread pool: the loop keeps timing other streams."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        return gevent.get_hub().threadpool.apply(self.counter.count_batch, (texts,))


def _count_with(
    counter: TokenCounter, record: RequestRecord, body: JsonObject, text: str, stream: Stream
) -> None:
    if record.token_source == "usage" and record.prompt_token_source == "usage":
        return
    if getattr(counter, "cpu_bound", False):
        counter = _OffLoop(counter)
    try:
        apply_tokenizer(record, counter, body, text, "".join(stream.reasoning or ()), stream.first_visible)
    except Exception as exc:  # a failing tokenizer leaves the fallback counts, it never fails a request
        log.warning("llm-locust: token count with %s failed (%s); kept chunk/target counts", counter, exc)


def _warn_batched_first(record: RequestRecord) -> None:
    """Once per process: the first content chunk carried several tokens (TTFT hides decode)."""
    if _batched_warned or not record.ok or (record.first_visible_tokens or 0) < 2:
        return
    _batched_warned.append(True)
    log.warning("llm-locust: %s", batched_first_message(record.first_visible_tokens or 0))


_batched_warned: list[bool] = []


def _cancelled(record: RequestRecord, point: CancelPoint | None) -> None:
    """Abandoned on purpose: the connection is closed (the server should free the KV), the
    record keeps its partial marks and is neither a success nor a failure."""
    record.t_end = time.perf_counter()
    record.outcome = CANCELLED
    where = point.describe() if point is not None else ""
    record.message = (
        f"cancelled by the client {where} (--cancel-rate): {record.t_end - record.t_sent:.2f} s, "
        f"{len(record.chunk_times)} chunks"
    )


def _stopped(record: RequestRecord, stop: BaseException) -> None:
    """The user was stopped mid-request (end of a run, step down, interrupt): keep its marks
    (``settle_counts`` then gives it its TTFT and counts, as for any partial stream)."""
    record.t_end = time.perf_counter()
    record.outcome = INCOMPLETE
    record.message = (
        f"stopped after {record.t_end - record.t_sent:.1f} s with {len(record.chunk_times)} content "
        f"chunks ({type(stop).__name__}: the load stopped before the response ended)"
    )
