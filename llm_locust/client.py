"""The OpenAI-compatible streaming request: body, read loop, timing marks, error classes.

One :class:`StreamingClient` per Locust user holds one keep-alive connection
(geventhttpclient, the engine under Locust's ``FastHttpUser``). :meth:`StreamingClient.send`
fills a :class:`~llm_locust.record.RequestRecord` and never raises for a failed request:
every failure becomes an outcome class and a short message.

Why not ``FastHttpSession.request(stream=True)``: Locust's timer stops at the response
headers and its ``iter_content`` waits for 1,024 bytes, which delays small SSE events.
Here every line is handed on the moment ``readline`` finds it in the socket buffer.
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import gevent
from gevent.monkey import get_original
from geventhttpclient import HTTPClient
from geventhttpclient.response import HTTPConnectionClosed, HTTPParseError

from llm_locust.protocol.sse import DONE, PayloadError, iter_events, parse_chunk
from llm_locust.record import OK, RequestRecord

__all__ = ["ClientConfig", "StreamingClient", "build_body", "classify_status", "fetch_server_info"]

ENDPOINT_PATHS = {"chat": "/v1/chat/completions", "completions": "/v1/completions"}
_ERROR_BODY_LIMIT = 64 * 1024
_select = get_original("select", "select")  # the original, not gevent's yielding one


def _socket_alive(sock: Any) -> bool:
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
    """Per-run request options (from the command line); the API key never leaves memory."""

    host: str
    model: str
    endpoint: str = "chat"
    api_key: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    request_timeout: float = 600.0
    connect_timeout: float = 10.0


class _Failure(Exception):
    def __init__(self, outcome: str, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.message = message


def build_body(config: ClientConfig, spec: Any) -> dict[str, Any]:
    """The JSON body for ``spec`` (a :class:`~llm_locust.workload.RequestSpec`)."""
    body: dict[str, Any] = {"model": config.model, "stream": True, "stream_options": {"include_usage": True}}
    if config.endpoint == "chat":
        body["messages"] = spec.messages
    else:
        body["prompt"] = spec.prompt
    max_tokens = spec.max_tokens if spec.max_tokens is not None else config.max_tokens
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if config.temperature is not None:
        body["temperature"] = config.temperature
    body.update(spec.extra_body)
    body.update(config.extra_body)
    return body


def classify_status(status: int) -> str:
    if status == 429:
        return "http_429"
    if 400 <= status < 500:
        return "http_4xx"
    if status >= 500:
        return "http_5xx"
    return "http_other"


def api_prefix(host: str) -> str:
    """A path prefix from ``--host`` (``http://h/openai`` -> ``/openai``; a trailing ``/v1`` is dropped)."""
    path = urlsplit(host).path.rstrip("/")
    return path[: -len("/v1")] if path.endswith("/v1") else path


class StreamingClient:
    """Sends streaming completions over keep-alive connections and times them.

    A closed-loop user needs one connection (``concurrency=1``); an open-loop dispatcher
    shares one client with up to ``concurrency`` requests in flight.
    """

    def __init__(self, config: ClientConfig, concurrency: int = 1) -> None:
        self.config = config
        self._path = api_prefix(config.host) + ENDPOINT_PATHS[config.endpoint]
        self._headers = self._request_headers()
        self._http = HTTPClient.from_url(
            config.host,
            concurrency=concurrency,
            connection_timeout=config.connect_timeout,
            # No per-recv socket timeout: send() bounds the whole request with one
            # gevent.Timeout of the same length, and a socket timeout costs a timer per read.
            network_timeout=None,
            insecure=True,
        )
        # geventhttpclient has no hook for this check; a private attribute, pinned by tests.
        self._http._connection_pool._is_socket_alive = _socket_alive

    def _request_headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        headers.update(self.config.headers)
        return headers

    def close(self) -> None:
        self._http.close()

    def send(self, body: dict[str, Any], record: RequestRecord, keep_text: bool = False) -> str:
        """Send ``body``, stream the reply into ``record``; returns the text if ``keep_text``."""
        payload = json.dumps(body).encode()
        parts: list[str] = []
        record.wall_start = time.time()
        record.t_sent = time.perf_counter()
        try:
            with gevent.Timeout(self.config.request_timeout, _Failure("timeout", "request timed out")):
                self._exchange(payload, record, parts if keep_text else None)
        except _Failure as failure:
            record.outcome, record.message = failure.outcome, failure.message
        finally:
            if record.t_end is None:
                record.t_end = time.perf_counter()
        return "".join(parts)

    def _exchange(self, payload: bytes, record: RequestRecord, parts: list[str] | None) -> None:
        response = self._open(payload, record)
        try:
            record.status = response.status_code
            if response.status_code != 200:
                raise _Failure(classify_status(response.status_code), _error_text(response))
            content_type = response.get("content-type") or ""
            if "text/event-stream" not in content_type:
                got = content_type or "no content type"
                raise _Failure("bad_payload", f"expected text/event-stream, got {got!r}")
            self._read_stream(response, record, parts)
        except (OSError, HTTPParseError) as exc:
            raise _failure_from_exception(exc, "stream_broken") from None
        finally:
            response.release()

    def _open(self, payload: bytes, record: RequestRecord) -> Any:
        """Send the request; retry once if a kept-alive connection was closed before any reply.

        An idle connection the server closed (keep-alive timeout) fails only when reused;
        the server never saw the request, so one retry on a fresh connection is safe. The
        clock restarts with it.
        """
        for attempt in (1, 2):
            try:
                return self._http.request("POST", self._path, body=payload, headers=self._headers)
            except HTTPConnectionClosed as exc:
                if attempt == 2:
                    raise _failure_from_exception(exc, "connect") from None
                record.wall_start, record.t_sent = time.time(), time.perf_counter()
            except (ConnectionError, socket.gaierror, OSError, HTTPParseError) as exc:
                raise _failure_from_exception(exc, "connect") from None
        raise AssertionError("unreachable")

    @staticmethod
    def _read_stream(response: Any, record: RequestRecord, parts: list[str] | None) -> None:
        """The hot loop: one iteration per SSE event, a timestamp as each arrives."""
        readline = response.readline
        chunk_times = record.chunk_times
        perf_counter = time.perf_counter
        usage = None
        for data in iter_events(iter(lambda: readline(b"\n"), b"")):
            now = perf_counter()
            if data == DONE:
                continue
            try:
                chunk = parse_chunk(data)
            except PayloadError as exc:
                raise _Failure("bad_payload", str(exc)) from None
            if chunk.error:
                raise _Failure("stream_error", chunk.error)
            if chunk.text:
                chunk_times.append(now)
                if parts is not None:
                    parts.append(chunk.text)
            if chunk.usage:
                usage = chunk.usage
        record.t_end = perf_counter()
        _finish(record, usage)


def _finish(record: RequestRecord, usage: dict[str, Any] | None) -> None:
    if record.chunk_times:
        record.t_first_token = record.chunk_times[0]
    if usage and usage.get("completion_tokens") is not None:
        record.completion_tokens = int(usage["completion_tokens"])
        record.token_source = "usage"
    else:
        record.completion_tokens = len(record.chunk_times)
        record.token_source = "chunks"
    if usage and usage.get("prompt_tokens") is not None:
        record.prompt_tokens = int(usage["prompt_tokens"])
    if not record.chunk_times:
        raise _Failure("empty_response", "stream ended without any generated text")
    record.outcome = OK


def _error_text(response: Any) -> str:
    """A short message from an error response (OpenAI-style JSON if present)."""
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


def _failure_from_exception(exc: BaseException, default: str) -> _Failure:
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return _Failure("timeout", f"timed out: {exc}")
    if isinstance(exc, (ConnectionRefusedError, socket.gaierror)):
        return _Failure("connect", f"{type(exc).__name__}: {exc}")
    name = type(exc).__name__
    return _Failure(default, f"{name}: {exc}" if str(exc) else name)


def fetch_server_info(config: ClientConfig, timeout: float = 10.0) -> dict[str, Any]:
    """``GET /v1/models``: the first model id and its ``max_model_len`` (vLLM), or ``{}``."""
    headers = {"Accept": "application/json"}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    headers.update(config.headers)
    http = HTTPClient.from_url(
        config.host, concurrency=1, connection_timeout=timeout, network_timeout=timeout, insecure=True
    )
    try:
        with gevent.Timeout(timeout):
            response = http.get(api_prefix(config.host) + "/v1/models", headers=headers)
            body = response.read()
            status = response.status_code
            response.release()
    except (gevent.Timeout, OSError, HTTPParseError) as exc:
        return {"error": f"GET /v1/models failed: {type(exc).__name__}: {exc}"}
    finally:
        http.close()
    if status != 200:
        return {"error": f"GET /v1/models returned HTTP {status}"}
    try:
        models = json.loads(body).get("data") or []
    except (ValueError, AttributeError):
        return {"error": "GET /v1/models returned no JSON model list"}
    if not models:
        return {"error": "GET /v1/models listed no model"}
    first = models[0]
    info: dict[str, Any] = {"model": first.get("id"), "models": [m.get("id") for m in models]}
    if first.get("max_model_len"):
        info["max_model_len"] = int(first["max_model_len"])
    return info
