"""A tiny raw HTTP client for tests against the simulator: exactly what is on the wire.

    from tests.simclient import chat_body, request, metric, wait_until

    ex = request(url, "POST", "/v1/chat/completions", chat_body(5, stream=True))
    wait_until(lambda: metric(url, "vllm:num_requests_running") == 2)

``Exchange.closed`` means the server closed or reset the connection; a client-side timeout
sets ``timed_out`` instead (it says nothing about the server). :func:`wait_until` is how
tests synchronise on the simulator's state (its ``/metrics`` gauges) instead of sleeping.
"""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "MODEL",
    "Exchange",
    "chat_body",
    "connect",
    "content_events",
    "metric",
    "receive",
    "request",
    "send",
    "wait_until",
]

MODEL = "llm-locust/sim-8b"


@dataclass
class Exchange:
    """Everything received for one request, with arrival times of each SSE event."""

    t_sent: float
    raw: bytes = b""
    events: list[tuple[float, str]] = field(default_factory=list)
    closed: bool = False  # the server closed (or reset) the connection
    timed_out: bool = False  # the client gave up waiting: says nothing about the server
    t_last_bytes: float = 0.0

    @property
    def status(self) -> int:
        return int(self.raw.split(b" ", 2)[1])

    @property
    def head(self) -> str:
        return self.raw.split(b"\r\n\r\n", 1)[0].decode("latin-1")

    @property
    def body(self) -> bytes:
        return self.raw.split(b"\r\n\r\n", 1)[1]

    def json(self) -> Any:
        return json.loads(self.body)

    def data(self) -> list[str]:
        return [e for _, e in self.events]


def connect(base_url: str, timeout: float = 10.0) -> socket.socket:
    u = urlsplit(base_url)
    sock = socket.create_connection((u.hostname, u.port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def send(sock: socket.socket, method: str, path: str, body: Any = None, headers: dict | None = None) -> float:
    data = body if isinstance(body, bytes) else (b"" if body is None else json.dumps(body).encode())
    lines = [f"{method} {path} HTTP/1.1", "Host: sim", f"Content-Length: {len(data)}"]
    if body is not None:
        lines.append("Content-Type: application/json")
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + data)
    return time.perf_counter()


def _complete(raw: bytes) -> bool:
    """Whether ``raw`` holds one whole response (Content-Length or chunked)."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        return False
    m = re.search(rb"(?i)content-length: *(\d+)", head)
    if m:
        return len(body) >= int(m.group(1))
    return body.endswith(b"0\r\n\r\n")


def receive(sock: socket.socket, ex: Exchange, timeout: float) -> Exchange:
    sock.settimeout(timeout)
    pending = b""
    while not _complete(ex.raw):
        try:
            data = sock.recv(65536)
        except TimeoutError:
            ex.timed_out = True
            break
        except ConnectionResetError:
            ex.closed = True
            break
        now = time.perf_counter()
        if not data:
            ex.closed = True
            break
        ex.raw += data
        ex.t_last_bytes = now
        pending += data
        while (i := pending.find(b"\n\n")) >= 0:
            event, pending = pending[:i], pending[i + 2 :]
            j = event.rfind(b"data: ")
            if j >= 0:
                ex.events.append((now, event[j + 6 :].decode()))
    return ex


def request(base_url: str, method: str, path: str, body: Any = None, headers: dict | None = None,
            timeout: float = 10.0, sock: socket.socket | None = None) -> Exchange:  # fmt: skip
    own = sock is None
    s = sock or connect(base_url, timeout)
    try:
        t = send(s, method, path, body, headers)
        return receive(s, Exchange(t_sent=t), timeout)
    finally:
        if own:
            s.close()


def chat_body(n: int, text: str = "Hello, world! How are you?", **extra: Any) -> dict[str, Any]:
    body = {"model": MODEL, "messages": [{"role": "user", "content": text}], "max_tokens": n}
    body.update(extra)
    return body


def content_events(ex: Exchange) -> list[tuple[float, dict]]:
    out = []
    for t, e in ex.events:
        try:
            obj = json.loads(e)
        except ValueError:  # [DONE], or an injected malformed line
            continue
        if obj["choices"] and obj["choices"][0].get("delta", {}).get("content"):
            out.append((t, obj))
    return out


def metric(base_url: str, name: str, **labels: str) -> float:
    """One sample of the simulator's ``/metrics`` (the first whose labels include ``labels``)."""
    from prometheus_client.parser import text_string_to_metric_families

    text = request(base_url, "GET", "/metrics").body.decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and labels.items() <= sample.labels.items():
                return float(sample.value)
    raise KeyError(f"{name} {labels or ''} not in /metrics")


def wait_until(condition: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    """Poll ``condition`` every 5 ms until it holds; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.005)
