"""The client's own health: loop lateness, stalls inside a request, per-second intervals."""

from __future__ import annotations

import time
from collections.abc import Iterator

import gevent
import pytest
from gevent.monkey import get_original

from llm_locust.client.health import LoopMonitor, monitor
from llm_locust.client.streaming import ClientConfig, StreamingClient
from llm_locust.record import RequestRecord
from tests.scripted_server import running_peer

# the loop's lateness is timed to a few ms: run alone (`make test` runs these after the parallel part)
pytestmark = pytest.mark.serial


@pytest.fixture(scope="module")
def peer() -> Iterator[str]:
    with running_peer() as base:
        yield base


_REAL_SLEEP = get_original("time", "sleep")  # time.sleep is gevent's once Locust has been imported


def block_loop(seconds: float) -> None:
    _REAL_SLEEP(seconds)  # the real sleep: nothing else runs in this process meanwhile


def test_a_blocked_loop_is_one_stall_of_its_length() -> None:
    m = LoopMonitor(period=0.01, stall_floor=0.05, interval=0.2)
    m.start()
    try:
        gevent.sleep(0.3)
        t0, wall0 = time.perf_counter(), time.time()
        block_loop(0.3)
        during = m.stall_within(t0, time.perf_counter())  # the timer has not run yet
        wall1 = time.time()
        gevent.sleep(0.3)
        t1 = time.perf_counter()
        after = m.stall_within(t0, t1)
        later = m.stall_within(t1, t1 + 1.0)
    finally:
        m.stop()
    assert 0.25 <= during <= 0.32 and abs(after - during) < 0.02
    assert later == 0.0
    intervals = m.take_intervals()
    assert len(intervals) >= 3 and m.take_intervals() == []  # handed out once
    stalled = [i for i in intervals if i["stall_s"] > 0]
    assert len(stalled) == 1 and stalled[0]["lag_max_s"] >= 0.25
    # where it lay, on the wall clock: from the timer's due time (within a period of the block's
    # start) to the tick after it (the loop's next iteration)
    assert abs(stalled[0]["stall_from"] - wall0) <= 0.011 + 0.002, stalled[0]["stall_from"] - wall0
    assert wall1 - 0.005 <= stalled[0]["stall_to"] <= wall1 + 0.05, stalled[0]["stall_to"] - wall1
    assert all("stall_from" not in i and "stall_to" not in i for i in intervals if not i["stall_s"])
    assert all(0.0 <= i["cpu"] < 1.5 and i["ticks"] >= 1 for i in intervals)


def test_only_the_overlap_counts() -> None:
    m = LoopMonitor(period=0.01, stall_floor=0.05)
    m.start()
    try:
        gevent.sleep(0.05)
        block_loop(0.2)
        gevent.sleep(0.05)  # the timer sees it
    finally:
        m.stop()
    (start, end) = (m._stall_starts[0], m._stall_ends[0])
    assert m.stall_within(start - 1.0, start) == 0.0
    assert m.stall_within(start + 0.05, start + 0.1) == pytest.approx(0.05)
    assert m.stall_within(start - 1.0, end + 1.0) == pytest.approx(end - start)
    assert m.stall_within(end, end + 1.0) == 0.0
    # sent as the loop came free, before the timer ran in the same iteration: not in the stall
    # (a fresh-clone make test charged the first two records of a run 0.25 and 0.9 ms of the
    # 117-ms block at its start, 2026-12-03)
    assert m.stall_within(end - 0.0009, end + 1.0) == 0.0


@pytest.mark.parametrize("kernel", [True, False], ids=["kernel-stamps", "loop-stamps"])
def test_a_record_spanning_a_stall_of_the_client_keeps_the_servers_time_and_says_the_stall(
    peer: str, kernel: bool
) -> None:
    """41 tokens over ~80 ms; the loop blocked 0.3 s in the middle. The tokens that came during
    the block waited in the kernel and are timed by its receive stamps: the record's E2E is the
    server's ~80 ms, not the block (before the stamps: >= 0.3 s), and it says the part of the
    stall inside it (from the block's start to the last byte's arrival). Timed by the loop
    (``--read-timestamps loop``) the record carries the block, and says so."""
    client = StreamingClient(ClientConfig(host=f"{peer}/cut_41", model="m", kernel_timestamps=kernel))
    stalled = RequestRecord(request_id="a", wall_start=0.0, t_sent=0.0)
    clean = RequestRecord(request_id="b", wall_start=0.0, t_sent=0.0)
    body = {"model": "m", "messages": [], "stream": True}
    try:
        sender = gevent.spawn(client.send, body, stalled)
        with gevent.Timeout(5):
            while len(stalled.chunk_times) < 3:
                gevent.sleep(0.001)
        blocked_at = time.perf_counter()
        block_loop(0.3)
        sender.join()
        gevent.sleep(0.1)
        client.send(body, clean)
    finally:
        client.close()
    assert len(stalled.chunk_times) == 41 and stalled.e2e is not None and stalled.t_end is not None
    if kernel:
        assert stalled.e2e < 0.25 and stalled.t_end < blocked_at + 0.25, stalled.e2e  # before the block ended
        assert 0.0 < stalled.client_stall_s <= stalled.e2e, stalled.client_stall_s
    else:
        assert stalled.e2e >= 0.3 and stalled.t_end >= blocked_at + 0.3, stalled.e2e  # read after it
        assert 0.2 <= stalled.client_stall_s <= 0.35, stalled.client_stall_s
    assert stalled.to_json()["client_stall_s"] == stalled.client_stall_s
    assert clean.client_stall_s == 0.0 and clean.to_json()["client_stall_s"] == 0.0


def test_every_client_shares_the_one_running_monitor() -> None:
    assert monitor() is monitor() and monitor()._timer is not None


def test_the_host_cpu_is_read_from_proc_stat(tmp_path) -> None:
    """The host's busy share between two readings: (user+nice+system+irq+softirq+steal) / all."""
    from llm_locust.client.health import host_cpu_times, host_share

    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3\n")
    before = host_cpu_times(str(stat))
    assert before == (150.0, 1000.0)
    stat.write_text("cpu  250 0 100 850 50 0 0 0 0 0\n")
    after = host_cpu_times(str(stat))
    assert host_share(before, after) == (250 + 100 - 150) / (1250 - 1000)
    assert host_cpu_times(str(tmp_path / "missing")) is None and host_share(None, after) is None


def test_a_cut_closes_the_open_interval_so_what_ran_before_is_its_own() -> None:
    """A test's start holds the loop (its prompts built: 0.23-0.34 s of stall in the first health
    second of a web UI ramp, 2026-12-03, whose 3-s first stage then read "client saturated ...
    loop up to 338 ms late in 1 of 3 s"). Cut at the start's end, that second ends before the
    first request: the next interval starts clean at the cut."""
    m = LoopMonitor(period=0.01, stall_floor=0.05, interval=1.0)
    m.cut()  # not started: nothing to close
    m.start()
    try:
        gevent.sleep(0.05)
        block_loop(0.2)  # then cut at once: the timer has not seen this stall yet
        at = time.time()
        m.cut()
        gevent.sleep(0.3)
        m.cut()
        m.cut()  # no tick since the last cut: nothing more
    finally:
        m.stop()
    first, second = m.take_intervals()
    assert first["stall_s"] >= 0.15 and first["end"] == pytest.approx(at, abs=0.005)
    assert first["stall_to"] <= first["end"]
    assert second["start"] == first["end"] and second["stall_s"] == 0.0
    assert 0.25 <= second["end"] - second["start"] <= 0.35 and second["ticks"] >= 10
