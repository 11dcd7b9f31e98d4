"""Stopping and the final batches (runtime/stopping.py), in process: Locust's real master and a
worker running real users on the in-memory channel (tests/unit/runtime/fake_rpc.py).

At the master's ``test_stop`` its worker is told to stop (with the drain), the request it is
streaming finishes during the drain, and its row arrives in the final batch before the master
stops waiting; told to stop *now*, the worker kills its users and the request is not waited for.
"""

from __future__ import annotations

import locust.runners
from locust import User, constant, task

import logging
import time
from types import SimpleNamespace
from typing import Any

import gevent
import pytest

from llm_locust.config.role import Role
from llm_locust.runtime import stopping
from llm_locust.runtime.fleet import Fleet, MasterFleet, WorkerFleet
from llm_locust.runtime.requests import Requests
from tests.unit.runtime.fake_rpc import Pair, fleet_of, settle

#: How long the one request each user streams takes (seconds).
REQUEST_S = 0.4
FINISHED: list[str] = []


class StreamingUser(User):
    """Sends one 'request' of REQUEST_S seconds and hands its row to the worker's outbox."""

    wait_time = constant(60)
    outbox: Any = None

    @task
    def stream(self) -> None:
        started = time.time()
        gevent.sleep(REQUEST_S)
        FINISHED.append("one")
        self.outbox.add({"request_id": f"r{len(FINISHED)}", "start_time": started, "end": time.time()})


class _Run:
    """The master's run, as stopping sees it (a StoppingRun)."""

    def __init__(self, pair: Pair, fleet: Fleet) -> None:
        self.environment, self.role, self.fleet = pair.master.environment, Role.MASTER, fleet
        self.results = object()
        self.live = SimpleNamespace(stopping=True, interrupted=None, interrupt_exit_code=None)


def _wire(pair: Pair, delivered: list[dict[str, Any]], ship_final: bool = True) -> Fleet:
    """The master's fleet, and each worker's, as the extension builds them: the worker ships what
    is left, marked final, at its ``test_stop``."""
    env = pair.master.environment
    master = MasterFleet(env, lambda: None, delivered.append)  # type: ignore[arg-type,return-value]
    for worker in pair.workers:
        wenv = worker.environment
        fleet = WorkerFleet(wenv, Requests(wenv, lambda row: None, "w"), lambda: None, lambda t0, n: None)  # type: ignore[arg-type,return-value]
        StreamingUser.outbox = fleet.outbox
        if ship_final:
            wenv.events.test_stop.add_listener(lambda environment, _f=fleet, **_: _f.outbox.stop())
    return master


def _start(pair: Pair, users: int) -> None:
    for env in [pair.master.environment, *(w.environment for w in pair.workers)]:
        env.stop_timeout = 5.0
    pair.master.start(users, spawn_rate=100)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and pair.workers[0].user_count < users:
        settle()
    assert pair.workers[0].user_count == users, "the worker did not spawn its users"
    settle(0.1)  # the master hears the worker running (its spawning_complete)


@pytest.fixture(autouse=True)
def _clean() -> None:
    FINISHED.clear()


def test_the_request_finishing_in_the_drain_arrives_in_the_final_batch(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with fleet_of(workers=1, user_classes=[StreamingUser]) as pair:
        delivered: list[dict[str, Any]] = []
        fleet = _wire(pair, delivered)
        _start(pair, users=2)
        assert FINISHED == [] and delivered == []  # both requests are still streaming
        begun = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="llm_locust"):
            stopping.collect_final_batches(_Run(pair, fleet))
        waited = time.monotonic() - begun
        assert fleet.workers_without_final() == []
        assert sorted(r["request_id"] for r in delivered) == ["r1", "r2"]  # both, drained, once
        assert waited < REQUEST_S + 1.0  # not the whole drain + margin: the final batch ends the wait
        assert "no final records" not in caplog.text
        assert pair.workers[0].state == locust.runners.STATE_STOPPED


def test_a_second_signal_makes_the_workers_stop_now() -> None:
    with fleet_of(workers=1, user_classes=[StreamingUser]) as pair:
        delivered: list[dict[str, Any]] = []
        fleet = _wire(pair, delivered)
        _start(pair, users=2)
        stopping.skip_drain(_Run(pair, fleet))
        settle(0.1)
        assert pair.workers[0].user_count == 0  # killed, well before their requests end
        gevent.sleep(REQUEST_S)
        assert FINISHED == []  # the killed requests never finished


def test_the_master_gives_up_on_a_silent_worker_after_the_drain(caplog: pytest.LogCaptureFixture) -> None:
    with fleet_of(workers=1, user_classes=[StreamingUser]) as pair:
        delivered: list[dict[str, Any]] = []
        fleet = _wire(pair, delivered, ship_final=False)  # this worker never ships its final batch
        pair.master.environment.stop_timeout = 0.2
        caplog.set_level(logging.WARNING, logger="llm_locust")
        margin, stopping.FINAL_BATCH_MARGIN_S = stopping.FINAL_BATCH_MARGIN_S, 0.3
        try:
            begun = time.monotonic()
            stopping.collect_final_batches(_Run(pair, fleet))
        finally:
            stopping.FINAL_BATCH_MARGIN_S = margin
        assert 0.5 - 0.05 <= time.monotonic() - begun < 2.0  # the drain (0.2 s) + the margin (0.3 s)
        assert f"no final records from worker(s) ['{pair.workers[0].client_id}']" in caplog.text
