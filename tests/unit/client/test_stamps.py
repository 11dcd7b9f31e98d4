"""The kernel's receive stamp of a read (llm_locust/client/stamps.py), on real loopback sockets
and on a socket that returns chosen stamps."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator

import pytest

from llm_locust.client.stamps import _SO_TIMESTAMPNS, MAX_BEHIND_S, kernel_stamped, loop_stamped


def _connected() -> tuple[socket.socket, socket.socket]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    client = socket.create_connection(server.getsockname())
    peer, _ = server.accept()
    server.close()
    return client, peer


@pytest.fixture(scope="module", autouse=True)
def stamping() -> Iterator[None]:
    """The kernel stamps received packets only while some socket asks for it, and turns that on
    a moment after the first one does (a deferred work item; under load the first reads of a
    test came back unstamped, 2026-12-03): one socket asks for the whole module, and the tests
    start once a probe read carries a stamp (the product falls back to the loop's time meanwhile)."""
    client, peer = _connected()
    client.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS or 0, 1)
    deadline = time.monotonic() + 5.0
    while True:
        peer.sendall(b"x")
        _data, ancillary, _flags, _address = client.recvmsg(16, 64)
        if ancillary or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert ancillary, "the kernel gave no receive stamp within 5 s"
    yield
    client.close()
    peer.close()


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    client, peer = _connected()
    client.setblocking(False)
    yield client, peer
    client.close()
    peer.close()


def test_bytes_that_waited_are_timed_when_they_arrived(pair: tuple[socket.socket, socket.socket]) -> None:
    client, peer = pair
    read = kernel_stamped(client)
    assert read is not None
    peer.sendall(b"data: 1\n\n")
    arrived = time.perf_counter()
    time.sleep(0.2)  # the loop comes round late
    now = time.perf_counter()
    data, t = read(65536, now)
    assert data == b"data: 1\n\n"
    assert abs(t - arrived) < 0.02 and now - t > 0.18, (t - arrived, now - t)


def test_one_read_of_two_sends_carries_the_last_ones_arrival(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    client, peer = pair
    read = kernel_stamped(client)
    assert read is not None
    peer.sendall(b"a")
    time.sleep(0.1)
    peer.sendall(b"b")
    second = time.perf_counter()
    time.sleep(0.1)
    data, t = read(65536, time.perf_counter())
    assert data == b"ab" and abs(t - second) < 0.02


def test_an_empty_socket_raises_as_recv_does_and_the_end_reads_empty(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    client, peer = pair
    read = kernel_stamped(client)
    assert read is not None
    with pytest.raises(BlockingIOError):
        read(65536, time.perf_counter())
    peer.close()
    time.sleep(0.05)
    now = time.perf_counter()
    assert read(65536, now) == (b"", now)  # the end: no data, no stamp, the loop's time


class _Stamped:
    """A socket whose every read carries the wall-clock stamp ``ago`` seconds before the read."""

    def __init__(self, ago: float) -> None:
        self.ago = ago

    def setsockopt(self, *args: object) -> None:
        pass

    def recvmsg(self, size: int, ancsize: int) -> tuple[bytes, list[tuple[int, int, bytes]], int, None]:
        stamp = time.time() - self.ago
        sec = int(stamp)
        raw = struct.pack("@qq", sec, int((stamp - sec) * 1e9))
        return b"x", [(socket.SOL_SOCKET, 35, raw)], 0, None


@pytest.mark.parametrize(
    ("ago", "believed"),
    [(0.25, True), (30.0, True), (MAX_BEHIND_S + 5, False), (-1.0, False), (-0.001, True)],
)
def test_a_stamp_is_believed_only_within_its_bounds(ago: float, believed: bool) -> None:
    read = kernel_stamped(_Stamped(ago))  # type: ignore[arg-type]
    assert read is not None
    now = time.perf_counter()
    data, t = read(1, now)
    assert data == b"x"
    if believed:
        assert t == pytest.approx(now - ago, abs=0.005)
    else:
        assert t == now  # the wall clock stepped: the loop's own time of the read


def test_a_socket_that_cannot_be_stamped_is_left_to_the_loop() -> None:
    class _NoStamps:
        def setsockopt(self, *args: object) -> None:
            raise OSError("not here")

    assert kernel_stamped(_NoStamps()) is None  # type: ignore[arg-type]
    read = loop_stamped(lambda size: b"y" * size)
    assert read(3, 1.5) == (b"yyy", 1.5)
