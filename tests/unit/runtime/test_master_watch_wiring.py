"""A worker whose master falls silent, in process (runtime/master_watch.py's loop and its wiring):
Locust's real master and a worker running users on the in-memory channel (fake_rpc.py); the
master's greenlets are killed (no more heartbeats). The worker stops its users at once, tells the
master why, and then exits with code 5. The watch's seconds are shortened here (its decisions on
docs/distributed.md's seconds are tests/unit/runtime/test_master_watch.py's)."""

from __future__ import annotations

import locust.runners
from locust import User, constant, task
from locust.rpc import Message

import functools
import time

import gevent
import pytest

from llm_locust.runtime import master_watch
from llm_locust.runtime.messages import STOPPED as STOPPED_MESSAGE
from llm_locust.runtime.nodes import WorkerNode
from tests.unit.runtime.fake_rpc import Pair, fleet_of, settle

SILENCE_S, EXIT_AFTER_S = 0.4, 0.6


class Streaming(User):
    wait_time = constant(0)

    @task
    def stream(self) -> None:
        gevent.sleep(30)  # one long request


def test_a_worker_that_loses_its_master_stops_its_users_says_why_and_exits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(master_watch, "CHECK_S", 0.05)
    watch = functools.partial(master_watch.MasterWatch, silence_s=SILENCE_S, exit_after_s=EXIT_AFTER_S)
    monkeypatch.setattr(master_watch, "MasterWatch", watch)
    armed: list[float] = []  # the hard exit that would end a worker process whose shutdown hangs
    monkeypatch.setattr(master_watch, "_exit_later", armed.append)
    with fleet_of(workers=1, user_classes=[Streaming]) as pair:
        (worker,) = pair.workers
        ext = WorkerNode(worker.environment)
        pair.master.start(2, spawn_rate=100)
        deadline = time.monotonic() + 5
        while worker.user_count < 2 and time.monotonic() < deadline:
            settle()
        while worker.last_heartbeat_timestamp is None and time.monotonic() < deadline + 2:
            settle()  # the master's first heartbeat (they come 1 s apart)
        assert worker.user_count == 2 and worker.last_heartbeat_timestamp is not None
        master_watch.install(ext)
        settle(0.2)
        assert not ext.live.stopping  # the master answers
        pair.master.greenlet.kill(block=True)  # the master is gone: no more heartbeats
        silent_from = worker.last_heartbeat_timestamp
        while worker.user_count and time.monotonic() < deadline + 5:
            settle()
        stopped = time.time()
        assert worker.user_count == 0 and ext.live.stopping
        assert worker.state == locust.runners.STATE_STOPPED
        assert SILENCE_S <= stopped - silent_from <= 1.0 + SILENCE_S + 0.5  # heartbeats 1 s apart
        told = [m for m in drain(pair) if m.type == STOPPED_MESSAGE]
        assert len(told) == 1 and told[0].node_id == worker.client_id
        assert "no heartbeat from the master" in told[0].data["why"]
        while worker.environment.process_exit_code is None and time.monotonic() < deadline + 10:
            settle()
        assert worker.environment.process_exit_code == master_watch.ORPHANED_EXIT == 5
        settle(0.1)
        assert armed == [10.0]  # docs/distributed.md: a shutdown that hangs is ended 10 s later
        assert time.time() - silent_from >= SILENCE_S + EXIT_AFTER_S


def drain(pair: Pair) -> list[Message]:
    """What the worker sent to the master since the master stopped listening."""
    out = []
    while not pair.wire.to_master.empty():
        out.append(Message.unserialize(pair.wire.to_master.get()))
    return out
