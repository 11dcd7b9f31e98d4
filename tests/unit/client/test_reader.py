"""The body reader: bodies read by the event loop, the user's greenlet asleep until the end."""

from __future__ import annotations

import time
from collections.abc import Iterator

import gevent
import greenlet
import pytest

from llm_locust.client import reader
from llm_locust.client.streaming import ClientConfig, StreamingClient
from llm_locust.record import RequestRecord
from tests.scripted_server import running_peer
from tests.simproc import running_sim

BODY = {"model": "m", "messages": [], "stream": True}


@pytest.fixture(scope="module")
def peer() -> Iterator[str]:
    with running_peer() as base:
        yield base


def new_client(peer: str, scenario: str, timeout: float = 5.0) -> StreamingClient:
    return StreamingClient(ClientConfig(host=f"{peer}/{scenario}", model="m", request_timeout=timeout))


def wakeups_of_send(client: StreamingClient, record: RequestRecord) -> int:
    """How many times the greenlet that runs ``client.send`` was switched to."""
    sender: list[greenlet.greenlet] = []
    count = 0

    def trace(event: str, args: tuple[greenlet.greenlet, greenlet.greenlet]) -> None:
        nonlocal count
        if event in ("switch", "throw") and sender and args[1] is sender[0]:
            count += 1

    previous = greenlet.settrace(trace)
    try:
        sender.append(gevent.spawn(client.send, BODY, record))
        sender[0].join()
    finally:
        greenlet.settrace(previous)
    return count


def test_a_long_stream_wakes_its_greenlet_a_few_times_not_once_per_token(peer: str) -> None:
    """41 tokens, 2 ms apart: the sending greenlet runs to send, for the headers and at the end."""
    client = new_client(peer, "cut_41")
    record = RequestRecord(request_id="t", wall_start=0.0, t_sent=0.0)
    try:
        wakeups = wakeups_of_send(client, record)
    finally:
        client.close()
    assert len(record.chunk_times) == 41, record.message  # every token was timed
    assert wakeups <= 6, wakeups  # one switch per token before (41 or more)


def test_events_of_one_read_share_its_timestamp(peer: str) -> None:
    """Two events in one write arrive in one read: the same mark, the moment that read was made."""
    client = new_client(peer, "cut_close")
    record = RequestRecord(request_id="t", wall_start=0.0, t_sent=0.0)
    try:
        client.send(BODY, record)
    finally:
        client.close()
    a, b, c = record.chunk_times
    assert a == b < c  # "a" and "b" came in one write, "c" 20 ms later
    assert c - b >= 0.015


def test_a_timeout_mid_stream_keeps_the_marks_and_reads_nothing_more(peer: str) -> None:
    client = new_client(peer, "stall", timeout=0.5)
    record = RequestRecord(request_id="t", wall_start=0.0, t_sent=0.0)
    try:
        client.send(BODY, record)
        gevent.sleep(0.1)  # the hub runs: a watcher left behind would fail the asserts below
    finally:
        client.close()
    assert record.outcome == "timeout", (record.outcome, record.message)
    assert len(record.chunk_times) == 2 and record.ttft is not None
    assert record.e2e is not None and 0.45 < record.e2e < 2.0


def test_a_killed_sender_stops_its_reader(peer: str) -> None:
    """Locust stops a user with GreenletExit: no read is made for it afterwards."""
    client = new_client(peer, "cut_41")
    record = RequestRecord(request_id="t", wall_start=0.0, t_sent=0.0)
    try:
        sender = gevent.spawn(client.send, BODY, record)
        with gevent.Timeout(5):
            while len(record.chunk_times) < 5:
                gevent.sleep(0.001)
        sender.kill(block=True, timeout=5)
        marks = len(record.chunk_times)
        gevent.sleep(0.2)  # the server keeps sending for ~80 ms more
    finally:
        client.close()
    assert sender.dead
    assert 5 <= marks < 41 and len(record.chunk_times) == marks


def test_many_streams_at_once_each_get_their_own_events(peer: str) -> None:
    """50 streams in flight over one hub: every record has exactly its own 3 tokens."""
    clients = [new_client(peer, "ok") for _ in range(50)]
    records = [RequestRecord(request_id=str(i), wall_start=0.0, t_sent=0.0) for i in range(50)]
    try:
        texts = gevent.joinall(
            [gevent.spawn(c.send, BODY, r, True) for c, r in zip(clients, records, strict=True)]
        )
    finally:
        for c in clients:
            c.close()
    assert [g.value for g in texts] == ["abc"] * 50
    assert all(r.ok and len(r.chunk_times) == 3 and r.completion_tokens == 3 for r in records)


def test_a_kept_alive_connection_serves_the_next_request() -> None:
    """The socket goes back to the pool when its body ends; the next request reuses it."""
    with running_sim("--ttft-ms", "2", "--tpot-ms", "1", "--output-tokens", "20") as url:
        client = StreamingClient(ClientConfig(host=url, model="llm-locust/sim-8b", request_timeout=10))
        pool = client._http._connection_pool
        body = {**BODY, "model": "llm-locust/sim-8b", "messages": [{"role": "user", "content": "hi"}]}
        try:
            first = RequestRecord(request_id="1", wall_start=0.0, t_sent=0.0)
            client.send(body, first)
            kept = list(pool._socket_queue.queue)
            second = RequestRecord(request_id="2", wall_start=0.0, t_sent=0.0)
            client.send(body, second)
            again = list(pool._socket_queue.queue)
        finally:
            client.close()
    assert first.ok and second.ok, (first.message, second.message)
    assert len(first.chunk_times) == len(second.chunk_times) == 20
    assert len(kept) == 1 and again == kept  # the very same socket, open, back in the pool


def test_a_stream_is_served_first_until_its_first_content_chunk(
    peer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its first token is timed before the reads of streams already under way in the same loop
    iteration (TTFT); then its reads take their turn like every other stream's."""
    import llm_locust.client.streaming as client_module
    from llm_locust.client.reader import FIRST_PRIORITY, PRIORITY, BodyReader

    seen: list[tuple[bool, int | None]] = []

    class Watched(BodyReader):
        def __init__(self, response, sink, started, kernel=True):  # type: ignore[no-untyped-def]
            def spy(body: bytes, t: float) -> bool | None:  # the priority this read was served at
                watcher = self._watcher  # None: the bytes came with the headers
                seen.append((started(), None if watcher is None else watcher.priority))
                return sink(body, t)

            super().__init__(response, spy, started, kernel)

    monkeypatch.setattr(client_module, "BodyReader", Watched)
    client = new_client(peer, "ttft_41")  # the headers, and the first token 20 ms later
    record = RequestRecord(request_id="t", wall_start=0.0, t_sent=0.0)
    try:
        client.send(BODY, record)
    finally:
        client.close()
    assert len(record.chunk_times) == 41 and len(seen) >= 20
    assert seen[0] == (False, FIRST_PRIORITY)  # the read that brought the first token
    assert {priority for _, priority in seen[1:]} == {PRIORITY}


class _Ended:
    """A stand-in for a reader whose stream ended: waking it is ``cost`` seconds of work on the
    fake clock (its next request built and sent)."""

    def __init__(self, index: int, woken: list[int], clock: list[float], cost: float) -> None:
        self.index, self.woken, self.clock, self.cost = index, woken, clock, cost

    def _wake(self) -> None:
        self.woken.append(self.index)
        self.clock[0] += self.cost


def test_streams_ending_together_are_woken_a_slice_per_loop_iteration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """700 streams in step end within a few ms; waking each from its read (its next request
    built and sent: ~0.3 ms) held the loop 60-90 ms every 2 s (benchmarks/README.md, issue 29).
    Now the reads' callbacks of one loop iteration wake WAKE_SLICE_S of them, a timer the rest,
    WAKE_SLICE_S of them per iteration."""
    clock = [0.0]
    monkeypatch.setattr(reader, "_perf_counter", lambda: clock[0])
    wakes, woken, calls = reader._Wakes(), [], []
    run = wakes._run

    def counted() -> None:
        calls.append(len(woken))
        run()

    monkeypatch.setattr(wakes, "_run", counted)
    cost = reader.WAKE_SLICE_S / 4
    for i in range(10):
        wakes.add(_Ended(i, woken, clock, cost))  # type: ignore[arg-type]
    assert woken == [0, 1, 2, 3]  # a slice from the reads themselves: back in flight at once
    deadline = time.monotonic() + 5.0
    while len(woken) < 10 and time.monotonic() < deadline:
        gevent.sleep(0.001)
    assert woken == list(range(10))  # each once, in the order their streams ended
    assert calls == [4, 8]  # four of a quarter-slice each per iteration, then the last two
    gevent.sleep(0.01)
    assert len(calls) == 2  # the timer stopped with the queue empty
    wakes.add(_Ended(10, woken, clock, cost))  # a later iteration: woken at once again
    assert woken[-1] == 10 and len(calls) == 2


def test_a_wake_for_a_greenlet_that_stopped_waiting_is_dropped() -> None:
    """A stream ended, then its greenlet's timeout fired before the wake came round: the wake
    must not switch into a greenlet that waits on something else now."""
    woken: list[object] = []

    class Waiter:
        def switch(self, value: object) -> None:
            woken.append(value)

    waiter = Waiter()
    end = object.__new__(reader.BodyReader)
    end._woken = None  # run()'s finally: the greenlet left its wait
    end._wake()
    assert woken == []
    end._woken = waiter  # type: ignore[assignment]
    end._wake()
    assert woken == [None] and end._woken is None
