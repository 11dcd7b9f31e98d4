"""A master's workers that quit, and a test whose load ended before its plan did
(runtime/departures.py, pure: states and times given by hand); and, on Locust's real master and
worker runners (in-memory RPC), the master's check at ``test_stopping`` (runtime/stopping.py's
``mark_early_end``) when its only worker quits, when one of two does, and when the plan ends."""

from __future__ import annotations

import locust.runners
from locust import User, constant, task

from types import SimpleNamespace
from typing import Any

import gevent
import pytest

from llm_locust.config.build import build_config
from llm_locust.config.role import Role
from llm_locust.load.plan import build_load_plan
from llm_locust.results.ending import EndCause, WorkerQuit
from llm_locust.runtime.context import LiveState, RunContext
from llm_locust.runtime.departures import (
    LOAD_ENDED_EARLY_EXIT,
    Departures,
    arrivals_not_sent,
    early_cause,
    ended_line,
)
from llm_locust.runtime.fleet import MasterFleet
from llm_locust.runtime.stopping import mark_early_end
from tests.unit.runtime.fake_rpc import Pair, fleet_of, settle


def test_a_worker_seen_answering_then_gone_quit_and_the_others_carry_the_load() -> None:
    d = Departures()
    assert d.observe(100.0, {"a": (0, False), "b": (1, False)}) == []
    (q,) = d.observe(102.04321, {"b": (1, False)})
    assert (q.worker, q.index, q.at, q.workers_left) == ("a", 0, 102.043, 1)
    assert not d.last_quit
    (q,) = d.observe(105.0, {})
    assert (q.worker, q.workers_left) == ("b", 0) and d.last_quit
    assert d.to_json() == [
        {"index": 0, "worker": "a", "at": 102.043, "workers_left": 1},
        {"index": 1, "worker": "b", "at": 105.0, "workers_left": 0},
    ]


def test_a_silent_worker_the_master_forgets_did_not_quit_and_a_new_one_is_no_quit_either() -> None:
    d = Departures()
    d.observe(100.0, {"a": (0, False), "b": (1, False)})
    d.observe(104.0, {"a": (0, True), "b": (1, False)})  # a stops answering (runtime/silences.py's)
    assert d.observe(165.0, {"b": (1, False), "c": (2, False)}) == []  # a forgotten after 60 s, c joins
    assert d.quits == []
    (q,) = d.observe(166.0, {"c": (2, True)})  # b quits while c is silent: none answers
    assert q.worker == "b" and q.workers_left == 0


@pytest.mark.parametrize(
    ("facts", "cause"),
    [
        ({}, None),  # the plan's end: the shape stopped the test
        ({"by_plan": False}, EndCause.MASTER_STOPPED),
        ({"by_plan": False, "headless": False}, None),  # the web UI's stop button: the user's
        ({"by_plan": False, "shape_running": False}, None),  # no shape: Locust's own -t ends it
        ({"by_plan": False, "interrupted": True}, None),  # a signal, every request failed: said already
        ({"by_plan": False, "answering": 0, "last_quit": True}, EndCause.WORKERS_QUIT),
        ({"by_plan": False, "answering": 0, "last_quit": True, "headless": False}, EndCause.WORKERS_QUIT),
        ({"by_plan": False, "answering": 0}, None),  # every worker silent: the silences' at the stop
        ({"answering": 0, "last_quit": True}, None),  # the plan ended as the last one quit
    ],
)
def test_why_a_test_stopping_now_ended_early(facts: dict[str, Any], cause: EndCause | None) -> None:
    given = {
        "interrupted": False,
        "by_plan": True,
        "shape_running": True,
        "headless": True,
        "answering": 1,
        "last_quit": False,
    }
    assert early_cause(**{**given, **facts}) is cause


def test_the_line_says_what_ended_the_load_from_when_and_how_much_of_the_plan_ran() -> None:
    last = WorkerQuit(index=0, worker="w0", at=102.4, workers_left=0)
    assert ended_line(EndCause.WORKERS_QUIT, last, 100.0, 102.4, 18.0, 0) == (
        "the last worker quit (worker 0 (w0), 2.4 s into the test): the load ran 2.4 s of 18.0 s"
    )
    assert ended_line(EndCause.WORKERS_QUIT, last, 100.0, 102.4, None, 0).endswith("the load ran 2.4 s")
    assert ended_line(EndCause.MASTER_STOPPED, None, 100.0, 105.0, 18.0, 2) == (
        "the master stopped the test before its planned end (5.0 s into the test, 2 worker(s) "
        "answering): the load ran 5.0 s of 18.0 s"
    )
    assert not EndCause.SIGNAL.early and all(c.early for c in EndCause if c is not EndCause.SIGNAL)


# -- the master's check at test_stopping, on Locust's real runners ---------------------------------


class Idle(User):
    wait_time = constant(1)

    @task
    def nothing(self) -> None:
        pass


class MasterOf:
    """What ``mark_early_end`` reads of a master's node: a real MasterFleet on the pair's master."""

    def __init__(self, pair: Pair) -> None:
        self.environment = pair.master.environment
        self.role = Role.MASTER
        self.run_config = build_config({"run_time": 18, "headless": True}, environ={})
        assert self.run_config.headless
        self.live = LiveState()
        self.fleet = MasterFleet(
            self.environment, lambda: build_load_plan(self.run_config.load), lambda r: None
        )
        plan = build_load_plan(self.run_config.load)
        context = RunContext(
            config=self.run_config, role=Role.MASTER, plan=plan, client=None, start_time=1000.0
        )
        self.results = SimpleNamespace(running=True, start_time=1000.0, context=context)
        self.environment.events.test_stopping.add_listener(lambda **_: mark_early_end(self))


def _started(pair: Pair) -> MasterOf:
    node = MasterOf(pair)
    pair.master.start(len(pair.workers), 10)
    settle(0.2)
    assert pair.master.state in (locust.runners.STATE_RUNNING, locust.runners.STATE_SPAWNING)
    node.fleet.note_departures(1000.0)  # the fleet's watch, once: every worker answering
    return node


def test_the_only_worker_quitting_interrupts_the_test_exit_8() -> None:
    with fleet_of(workers=1, user_classes=[Idle]) as pair:
        node = _started(pair)
        worker = pair.workers[0]
        pair.send_raw(worker, "quit", None)  # Locust's handler: "The last worker quit, stopping test."
        settle(0.2)
        assert node.live.interrupt_cause is EndCause.WORKERS_QUIT
        assert node.live.interrupt_exit_code == LOAD_ENDED_EARLY_EXIT == 8
        (q,) = node.fleet.departures.quits
        assert q.worker == worker.client_id and q.workers_left == 0 and node.live.interrupted_at == q.at
        assert node.live.interrupted is not None
        assert node.live.interrupted.startswith(f"the last worker quit (worker 0 ({worker.client_id}), ")
        assert node.live.interrupted.endswith(" of 18.0 s")


def test_one_of_two_workers_quitting_is_noted_and_the_plans_own_stop_is_no_early_end() -> None:
    with fleet_of(workers=2, user_classes=[Idle]) as pair:
        node = _started(pair)
        pair.send_raw(pair.workers[0], "quit", None)
        settle(0.2)
        (q,) = node.fleet.note_departures(1000.0)
        assert q.worker == pair.workers[0].client_id and q.workers_left == 1
        assert node.live.interrupted is None and pair.master.state != locust.runners.STATE_STOPPED
        # the shape's own stop (its plan ended): stop() from the shape's greenlet
        pair.master.shape_greenlet = gevent.spawn(pair.master.stop)
        pair.master.shape_greenlet.join()
        assert node.live.interrupted is None


def test_a_headless_master_stopping_its_test_while_the_shape_runs_is_an_early_end() -> None:
    with fleet_of(workers=1, user_classes=[Idle]) as pair:
        node = _started(pair)
        pair.master.shape_greenlet = gevent.spawn(gevent.sleep, 30)  # the shape still runs
        pair.master.stop()  # from elsewhere: not the plan's end, not a signal, no worker gone
        assert node.live.interrupt_cause is EndCause.MASTER_STOPPED
        assert node.live.interrupted is not None and node.live.interrupted.startswith(
            "the master stopped the test before its planned end"
        )


def test_arrivals_not_sent_are_the_departed_workers_share_from_its_quit_to_the_end() -> None:
    """Worker ``index`` of W had share ``index % W``: its arrivals due from the quit (seen by the
    master) to the end of the test, which no worker left sends."""

    class _Every:  # an arrival every 0.1 s, 10 s; worker k of W: every W-th from the k-th
        def for_worker(self, index: int, count: int):  # type: ignore[no-untyped-def]
            return ((i * 0.1, None) for i in range(index, 100, count))

        def describe(self) -> dict:
            return {}

    quit_at_5 = WorkerQuit(index=2, worker="w2", at=1005.0, workers_left=1)
    # share 0 of 2 (index 2 % 2): offsets 5.0, 5.2, ... 9.8 -> 25 of them
    assert arrivals_not_sent(_Every(), [quit_at_5], 2, 1000.0, 20.0) == 25
    assert arrivals_not_sent(_Every(), [quit_at_5], 2, 1000.0, 6.0) == 5  # the test ended at 6 s
    assert arrivals_not_sent(_Every(), [], 2, 1000.0, 20.0) == 0
