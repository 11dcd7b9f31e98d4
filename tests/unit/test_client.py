"""The streaming client against a scripted peer: every failure is a record with a class."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from llm_locust.client import ClientConfig, StreamingClient
from llm_locust.record import RequestRecord

HERE = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def peer() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "scripted_server.py")], stdout=subprocess.PIPE, text=True
    )
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        yield f"http://127.0.0.1:{int(line.split()[1])}"
    finally:
        proc.kill()
        proc.wait()


def send(host: str, timeout: float = 5.0) -> tuple[RequestRecord, str]:
    client = StreamingClient(ClientConfig(host=host, model="m", request_timeout=timeout))
    record = RequestRecord(request_id="t", wall_start=0.0, t_sent=0.0)
    try:
        text = client.send({"model": "m", "messages": [], "stream": True}, record, keep_text=True)
    finally:
        client.close()
    return record, text


def test_ok_stream(peer: str) -> None:
    r, text = send(f"{peer}/ok")
    assert r.ok, r.message
    assert text == "abc"
    assert r.completion_tokens == 3 and r.token_source == "usage" and r.prompt_tokens == 7
    assert len(r.chunk_times) == 3 and r.ttft is not None and r.ttft > 0


def test_event_split_across_writes_is_timed_on_arrival(peer: str) -> None:
    r, text = send(f"{peer}/split")
    assert r.ok, r.message
    assert text == "xy"
    # the first event completes only with its third write, ~100 ms after the head
    assert r.ttft is not None and r.ttft >= 0.09


def test_stream_without_usage_or_done_counts_chunks(peer: str) -> None:
    r, _ = send(f"{peer}/no_usage_no_done")
    assert r.ok, r.message
    assert r.completion_tokens == 2 and r.token_source == "chunks" and r.prompt_tokens is None


@pytest.mark.parametrize(
    ("scenario", "outcome", "fragment"),
    [
        ("html", "bad_payload", "text/html"),
        ("unauthorized", "http_4xx", "invalid api key"),
        ("broken", "stream_broken", ""),
        ("malformed", "bad_payload", "invalid JSON"),
        ("stream_error", "stream_error", "engine died"),
        ("empty", "empty_response", "without any generated text"),
    ],
)
def test_failures_have_a_class_and_message(peer: str, scenario: str, outcome: str, fragment: str) -> None:
    r, _ = send(f"{peer}/{scenario}")
    assert r.outcome == outcome, (r.outcome, r.message)
    assert fragment in r.message
    assert r.e2e is not None


def test_unreachable_host_is_a_connect_failure() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connection refused
        r, _ = send(f"http://127.0.0.1:{port}")
    assert r.outcome == "connect", (r.outcome, r.message)
    assert "Refused" in r.message or "refused" in r.message


def test_keep_alive_check_override_targets_a_real_pool_method() -> None:
    """The pool's own check yields to the gevent hub before every send (TTFT +18 ms at 500
    users); the client replaces it. Fail loudly if geventhttpclient renames the method."""
    from geventhttpclient.connectionpool import ConnectionPool

    from llm_locust.client import _socket_alive

    assert callable(getattr(ConnectionPool, "_is_socket_alive", None))
    client = StreamingClient(ClientConfig(host="http://127.0.0.1:9", model="m"))
    try:
        assert client._http._connection_pool._is_socket_alive is _socket_alive
    finally:
        client.close()
