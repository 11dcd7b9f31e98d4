"""The master's record of its workers' silences (runtime/silences.py), with states and times
given by hand; and, on Locust's real master and worker runners (in-memory RPC), that the test
stays on while its only worker is missing and stops when told to."""

from __future__ import annotations

import locust.runners
from locust import User, constant, task

import gevent

from llm_locust.runtime.locust_adapter import keep_test_while_workers_missing
from llm_locust.runtime.silences import GRACE_S, Silences
from tests.unit.runtime.fake_rpc import fleet_of, settle


def test_locusts_grace_is_60_s() -> None:
    assert GRACE_S == 60.0  # HEARTBEAT_DEAD_INTERNAL (-60) heartbeat intervals (1 s)


def test_a_silence_runs_from_the_last_heartbeat_to_the_next() -> None:
    s = Silences(grace_s=60.0)
    assert s.observe(100.0, {"a": (0, False), "b": (1, False)}, {"a": 99.5, "b": 99.8}) == ([], [])
    began, ended = s.observe(104.0, {"a": (0, True), "b": (1, False)}, {"a": 100.2, "b": 103.9})
    assert [(x.worker, x.since, x.until) for x in began] == [("a", 100.2, None)] and ended == []
    assert not s.lost  # b still answers
    began, ended = s.observe(108.0, {"a": (0, False), "b": (1, False)}, {"a": 107.6, "b": 107.9})
    assert began == [] and [(x.worker, x.since, x.until) for x in ended] == [("a", 100.2, 107.6)]
    assert s.to_json() == [{"worker": "a", "index": 0, "since": 100.2, "until": 107.6}]


def test_no_worker_answering_is_lost_until_one_answers_or_the_grace_runs_out() -> None:
    s = Silences(grace_s=60.0)
    s.observe(100.0, {"a": (0, False)}, {"a": 99.9})
    s.observe(104.0, {"a": (0, True)}, {"a": 100.3})
    assert s.lost and s.lost_since == 104.0 and not s.out_of_grace(163.9) and s.out_of_grace(164.0)
    s.observe(110.0, {"a": (0, False)}, {"a": 109.7})
    assert not s.lost and not s.out_of_grace(1000.0)
    s.observe(120.0, {"a": (0, True)}, {"a": 116.1})
    s.observe(125.0, {}, {"a": 116.1})  # Locust forgot it: still no worker answers
    assert s.lost and s.lost_since == 120.0
    assert s.last_lost() is s.spells[-1] and s.spells[-1].since == 116.1


def test_the_line_says_who_went_last_from_when_and_how_much_of_the_run_had_load() -> None:
    s = Silences()
    s.observe(100.0, {"a": (0, False), "b": (1, False)}, {})
    s.observe(104.0, {"a": (0, True), "b": (1, False)}, {"a": 101.0})
    s.observe(108.0, {"a": (0, True), "b": (1, True)}, {"a": 101.0, "b": 105.5})
    assert s.lost_line(100.0, 118.0, 18) == (
        "every worker stopped answering (the last: worker 1 (b), silent from 5.5 s into the test): "
        "the load ran 5.5 s of 18.0 s"
    )
    assert s.lost_line(100.0, 118.0, None).endswith("the load ran 5.5 s of 18.0 s")


class Idle(User):
    wait_time = constant(1)

    @task
    def nothing(self) -> None:
        pass


def test_the_heartbeat_loops_stop_is_kept_while_asked_and_any_other_stop_happens() -> None:
    """Locust's heartbeat loop, with its interval shortened: the only worker stops answering,
    the loop would stop the test ("The last worker went missing"); kept, the test runs on."""
    with fleet_of(workers=1, user_classes=[Idle]) as pair:
        master, (worker,) = pair.master, pair.workers
        keep = [True]
        keep_test_while_workers_missing(master, lambda: keep[0])
        master.start(1, 10)
        settle()
        assert master.state in (locust.runners.STATE_RUNNING, locust.runners.STATE_SPAWNING)
        worker.greenlet.kill(block=True)  # it sends nothing more (its heartbeats included)
        for client in master.clients.values():  # what three missed heartbeats leave
            client.heartbeat = -1
        gevent.sleep(locust.runners.HEARTBEAT_INTERVAL + 0.3)  # one turn of the loop
        assert [c.state for c in master.clients.values()] == [locust.runners.STATE_MISSING]
        master.check_stopped()
        assert master.state in (locust.runners.STATE_RUNNING, locust.runners.STATE_SPAWNING)
        keep[0] = False
        master.stop()  # any other stop happens
        assert master.state in (locust.runners.STATE_STOPPED, locust.runners.STATE_STOPPING)
