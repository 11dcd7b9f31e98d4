"""Pins of the HTTP stack's internals that llm_locust/client/http_adapter.py reaches (geventhttpclient,
gevent's sockets): each behaviour the client and the body reader rely on, checked on the installed
versions, over a real loopback socket where it is about I/O. A failure names the installed
versions and those the adapter was checked with: read the internal again, fix the adapter (not
its callers), then add the version to ``CHECKED_WITH`` (pytest's header names an installed
version not in it)."""

from __future__ import annotations

import _socket
import socket
import ssl
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gevent
import gevent.event
import gevent.ssl
import pytest
from gevent.server import StreamServer
from geventhttpclient import HTTPClient
from geventhttpclient.response import HTTPParseError, HTTPResponse

from llm_locust.client.http_adapter import (
    CHECKED_WITH,
    divert_body,
    early_body,
    install_alive_check,
    parser_feed,
    plain_recv,
    response_in_traceback,
    response_socket,
    restore_body,
    tls_object,
)
from tests.pins import differs
from tests.tlscerts import make_certs

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def why(what: str) -> str:
    return differs(CHECKED_WITH, "llm_locust/client/http_adapter.py", what)


def test_the_parser_feeds_the_buffer_or_the_diverted_sink() -> None:
    response = HTTPResponse()
    parser_feed(response, HEAD + chunk(b"data: a\n\n"))
    assert response.headers_complete and response.status_code == 200, why("parser_feed (headers)")
    assert bytes(early_body(response)) == b"data: a\n\n", why("_body_buffer (body with the headers)")
    del early_body(response)[:]  # taken
    pieces: list[bytes] = []
    divert_body(response, pieces.append)
    parser_feed(response, chunk(b"data: b\n\n") + chunk(b"data: c\n\n"))
    assert pieces == [b"data: b\n\n", b"data: c\n\n"], why("_on_body (one call per de-framed piece)")
    assert early_body(response) == b"", why("_on_body shadowed: nothing in the buffer")
    restore_body(response)
    parser_feed(response, chunk(b"data: d\n\n"))
    assert bytes(early_body(response)) == b"data: d\n\n", why("_on_body restored")
    assert not response.message_complete
    parser_feed(response, b"0\r\n\r\n")
    assert response.message_complete, why("parser_feed (the last chunk)")
    assert pieces == [b"data: b\n\n", b"data: c\n\n"]


def test_the_feed_is_bound_once_not_wrapped() -> None:
    """The reader calls it per read: llhttp's own method, no Python layer in between."""
    from geventhttpclient._parser import HTTPResponseParser

    from llm_locust.client import reader

    assert parser_feed is HTTPResponseParser.feed, why("geventhttpclient._parser")
    assert reader._parser_feed is HTTPResponseParser.feed


@pytest.fixture
def server() -> Iterator[tuple[str, list[Callable[[socket.socket], None]]]]:
    """A loopback server: each connection is served by the next script in the list, in turn."""
    scripts: list[Callable[[socket.socket], None]] = []

    def handle(conn: socket.socket, address: Any) -> None:
        while scripts:
            request = conn.recv(65536)
            if not request:
                return
            scripts.pop(0)(conn)

    srv = StreamServer(("127.0.0.1", 0), handle)
    srv.start()
    try:
        yield f"http://127.0.0.1:{srv.server_port}", scripts
    finally:
        srv.stop(timeout=1)


def test_the_response_socket_reads_without_the_hub(server: Any) -> None:
    url, scripts = server
    release = gevent.event.Event()

    def stream(conn: socket.socket) -> None:
        conn.sendall(HEAD + chunk(b"data: a\n\n"))
        release.wait(5)
        conn.sendall(chunk(b"data: b\n\n") + b"0\r\n\r\n")

    scripts.append(stream)
    http = HTTPClient.from_url(url, concurrency=1)
    try:
        response = http.request("GET", "/")
        sock = response_socket(response)
        assert sock is not None and tls_object(sock) is None, why("_sock of a response")
        recv = plain_recv(sock)
        assert isinstance(sock._sock, _socket.socket), why("_sock._sock: the real socket")
        with pytest.raises(BlockingIOError):  # nothing yet: the real socket does not wait
            recv(65536)
        release.set()
        gevent.socket.wait_read(sock.fileno(), timeout=5)
        assert recv(65536) == chunk(b"data: b\n\n") + b"0\r\n\r\n", why("_sock._sock.recv")
    finally:
        http.close()


def test_the_pool_asks_the_installed_check_before_reusing_a_connection(server: Any) -> None:
    url, scripts = server
    reply = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    scripts.extend([lambda c: c.sendall(reply), lambda c: c.sendall(reply)])
    asked: list[Any] = []
    http = HTTPClient.from_url(url, concurrency=1)
    install_alive_check(http, lambda sock: asked.append(sock) or True)
    try:
        first = http.request("GET", "/")
        assert first.read() == b"ok"
        first.release()
        assert asked == []
        second = http.request("GET", "/")
        assert second.read() == b"ok"
    finally:
        http.close()
    assert len(asked) == 1, why("ConnectionPool._is_socket_alive (asked once per reuse)")
    assert isinstance(asked[0], gevent.socket.socket), why(
        "ConnectionPool._is_socket_alive (asked of its socket)"
    )


def test_a_parse_error_in_the_first_read_keeps_its_response_in_the_traceback(server: Any) -> None:
    url, scripts = server
    scripts.append(lambda c: c.sendall(HEAD + chunk(b"data: a\n\n") + b"ZZ-not-a-size\r\n"))
    http = HTTPClient.from_url(url, concurrency=1)
    try:
        with pytest.raises(HTTPParseError) as caught:
            http.request("GET", "/")
    finally:
        http.close()
    response = response_in_traceback(caught.value)
    assert response is not None, why("the half-built response in request()'s traceback")
    assert response.headers_complete and response.status_code == 200
    assert bytes(early_body(response)) == b"data: a\n\n", why("_body_buffer up to the bad bytes")
    assert response_in_traceback(ValueError("elsewhere")) is None


def test_a_tls_socket_reads_through_its_tls_object(tmp_path: Path) -> None:
    certs = make_certs(tmp_path, names=("127.0.0.1",))
    cert, key = certs.server["127.0.0.1"]
    server_ctx = gevent.ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(str(cert), str(key))
    client_ctx = gevent.ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client_ctx.load_verify_locations(cafile=str(certs.ca))
    release = gevent.event.Event()

    def handle(conn: Any, address: Any) -> None:
        release.wait(5)
        conn.sendall(b"data: a\n\n")
        gevent.sleep(1)

    srv = StreamServer(("127.0.0.1", 0), handle, ssl_context=server_ctx)
    srv.start()
    client = client_ctx.wrap_socket(
        gevent.socket.create_connection(("127.0.0.1", srv.server_port), timeout=5),
        server_hostname="127.0.0.1",
    )
    try:
        sslobj = tls_object(client)
        assert sslobj is not None and hasattr(sslobj, "read"), why("_sslobj of gevent's SSLSocket")
        with pytest.raises(ssl.SSLWantReadError):  # nothing yet: it does not wait
            sslobj.read(100)
        release.set()
        data = b""
        for _ in range(10):  # TLS 1.3 session tickets come first: readable, no application data
            gevent.socket.wait_read(client.fileno(), timeout=5)
            try:
                data = sslobj.read(100)
                break
            except ssl.SSLWantReadError:
                continue
        assert data == b"data: a\n\n", why("_sslobj.read")
    finally:
        client.close()
        srv.stop(timeout=1)
