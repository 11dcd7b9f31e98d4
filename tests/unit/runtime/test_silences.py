"""The master's record of its workers' silences (runtime/silences.py), with states and times
given by hand; and, on Locust's real master and worker runners (in-memory RPC), that the test
stays on while its only worker is missing and stops when told to."""

from __future__ import annotations

import locust.runners
from locust import User, constant, task

import logging

import gevent
import pytest

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


def test_an_only_worker_missing_then_answering_again_leaves_no_untrue_line_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Locust's master logged "The last worker went missing, stopping test." while the test went on
    (kept), then, at the heartbeat that ended the silence, warned "You can't start a distributed
    test before at least one worker processes has connected" (its re-dispatch ran while the worker
    still counted as missing) in a test its worker had joined before it began. Its true lines stay."""
    with fleet_of(workers=1, user_classes=[Idle]) as pair:
        master, (worker,) = pair.master, pair.workers
        keep_test_while_workers_missing(master, lambda: master.worker_count == 0)
        master.start(1, 10)
        settle()
        caplog.set_level(logging.INFO, logger="locust.runners")
        worker.greenlet.kill(block=True)  # it sends nothing more (its heartbeats included)
        for client in master.clients.values():  # what three missed heartbeats leave
            client.heartbeat = -1
        gevent.sleep(locust.runners.HEARTBEAT_INTERVAL + 0.3)  # one turn of the loop
        assert [c.state for c in master.clients.values()] == [locust.runners.STATE_MISSING]
        beat = {"state": locust.runners.STATE_RUNNING, "current_cpu_usage": 1.0, "current_memory_usage": 1}
        pair.send_raw(worker, "heartbeat", beat)  # it answers again
        settle()
        assert [c.state for c in master.clients.values()] == [locust.runners.STATE_RUNNING]
        assert master.state in (locust.runners.STATE_RUNNING, locust.runners.STATE_SPAWNING)
        said = [r.getMessage() for r in caplog.records if r.name == "locust.runners"]
        assert any("failed to send heartbeat, setting state to missing" in m for m in said), said
        assert any("self-healed with heartbeat" in m for m in said), said
        assert not [m for m in said if "stopping test" in m or "can't start a distributed test" in m], said
        master.stop()
        settle()
        for client in master.clients.values():
            client.state = locust.runners.STATE_MISSING
        caplog.clear()
        master.start(1, 10)  # no worker answering, and no test under way: Locust's warning is true
        assert "can't start a distributed test before at least one worker" in caplog.text
