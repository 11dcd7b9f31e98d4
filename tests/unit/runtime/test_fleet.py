"""The master's and the workers' message handling (runtime/fleet.py), in process.

Locust's real runners on an in-memory channel (tests/unit/runtime/fake_rpc.py): a worker's
records reach the master's sink once, the final batch is seen, the master counts what its
workers have in flight, the plan's start and a rate search's steps reach every worker.
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import gevent
import gevent.event
import pytest

from llm_locust.config.role import Role
from llm_locust.record import RequestRecord
from llm_locust.runtime import distributed
from llm_locust.runtime.fleet import Fleet, MasterFleet, WorkerFleet
from llm_locust.runtime.messages import PlanStart
from llm_locust.runtime.requests import Requests
from tests.unit.runtime.fake_rpc import Pair, fleet_of, settle


class Node:
    """One process's fleet and what its callbacks saw."""

    def __init__(self, runner: Any, role: Role) -> None:
        self.delivered: list[dict[str, Any]] = []
        self.plan_starts: list[tuple[float, int, float | None]] = []
        self.finals = 0
        self.plan = SimpleNamespace(arrivals=None)
        self.requests = Requests(runner.environment, self._row, f"{role}")
        plan = lambda: self.plan  # noqa: E731
        if role is Role.MASTER:
            self.fleet: Fleet = MasterFleet(runner.environment, plan, self.delivered.append, self._final)  # type: ignore[arg-type,return-value]
        else:
            self.fleet = WorkerFleet(runner.environment, self.requests, plan, self._plan_start)  # type: ignore[arg-type]

    def _plan_start(self, start: PlanStart) -> None:
        self.plan_starts.append((start.t0, start.workers, start.end))

    def _row(self, row: dict[str, Any]) -> None:
        """A finished request's row: a worker's to its outbox (as the extension wires it)."""
        if self.fleet.outbox is not None:
            self.fleet.outbox.add(row)
        else:
            self.delivered.append(row)

    def _final(self) -> None:
        self.finals += 1


def nodes(pair: Pair) -> tuple[Node, list[Node]]:
    return Node(pair.master, Role.MASTER), [Node(w, Role.WORKER) for w in pair.workers]


def test_a_workers_rows_reach_the_master_once_even_when_a_batch_is_resent() -> None:
    with fleet_of(workers=2) as pair:
        master, (w1, w2) = nodes(pair)
        assert w1.fleet.outbox is not None and w2.fleet.outbox is not None
        w1.fleet.outbox.add({"request_id": "a-0", "e2e": 1.5})
        w1.fleet.outbox.add({"request_id": "a-1", "e2e": 2.5})
        w2.fleet.outbox.add({"request_id": "b-0", "e2e": 0.5})
        w1.fleet.outbox.flush()
        w2.fleet.outbox.flush()
        settle()
        # the same batch again on the wire (a worker that retried after a lost connection)
        pair.send_raw(pair.workers[0], distributed.MESSAGE_TYPE, {"seq": 1, "rows": [{"request_id": "a-0"}]})
        settle()
        ids = sorted(r["request_id"] for r in master.delivered)
        assert ids == ["a-0", "a-1", "b-0"]
        by_id = {r["request_id"]: r for r in master.delivered}
        assert by_id["a-1"]["worker"] == pair.workers[0].client_id  # tagged with its sender
        assert by_id["b-0"]["worker"] == pair.workers[1].client_id
        assert by_id["a-1"]["e2e"] == 2.5  # the row as sent, through msgpack
        assert w1.delivered == [] and w2.delivered == []  # a worker keeps nothing itself


def test_the_final_batch_is_seen_and_only_missing_workers_are_listed() -> None:
    with fleet_of(workers=2) as pair:
        master, (w1, w2) = nodes(pair)
        ids = sorted(w.client_id for w in pair.workers)
        assert master.fleet.workers_without_final() == ids  # nothing final yet
        assert w1.fleet.outbox is not None and w2.fleet.outbox is not None
        w1.fleet.outbox.add({"request_id": "a-last"})
        w1.fleet.outbox.stop()  # the worker's test_stop: what is left, marked final
        settle()
        assert master.finals == 1
        assert [r["request_id"] for r in master.delivered] == ["a-last"]
        assert master.fleet.workers_without_final() == [pair.workers[1].client_id]
        w2.fleet.outbox.stop()  # an empty final batch still counts
        settle()
        assert master.finals == 2 and master.fleet.workers_without_final() == []


class _SlowClient:
    """A client whose requests last until released."""

    def __init__(self) -> None:
        self.release = gevent.event.Event()

    def send(self, body: Any, record: RequestRecord, keep_text: bool = False) -> str:
        record.wall_start = time.time()
        self.release.wait(5.0)
        record.outcome, record.message = "error", "released"
        return ""


def test_the_master_counts_what_its_workers_have_in_flight() -> None:
    with fleet_of(workers=2) as pair:
        master, (w1, w2) = nodes(pair)
        client = _SlowClient()
        context = SimpleNamespace(staged=False)
        before = time.time()
        sends = [
            gevent.spawn(w.requests.send, context, client, {}, RequestRecord(f"{i}", 0.0, 0.0))
            for w, i in ((w1, 1), (w1, 2), (w1, 3), (w2, 4))
        ]
        gevent.sleep(0)
        assert (w1.requests.in_flight, w2.requests.in_flight) == (3, 1)
        assert master.fleet.total_in_flight() == 0  # not reported yet
        assert master.fleet.in_flight_before(before + 60) is None  # no report after that moment yet
        gevent.sleep(0.01)
        between = time.time()  # after the four were sent, before the workers report
        gevent.sleep(0.01)
        for w in (w1, w2):
            assert w.fleet.outbox is not None
            w.fleet.outbox.flush()
        settle()
        assert master.fleet.total_in_flight() == 4
        # every worker reported after ``before - 1``; its requests were all sent after it
        assert master.fleet.in_flight_before(before - 1) == 0
        # ... and all four were sent before ``between``, which both reports follow
        assert master.fleet.in_flight_before(between) == 4
        client.release.set()
        gevent.joinall(sends, timeout=5)
        for w in (w1, w2):
            assert w.fleet.outbox is not None
            w.fleet.outbox.flush()
        settle()
        assert master.fleet.total_in_flight() == 0
        assert sorted(r["request_id"] for r in master.delivered) == ["1", "2", "3", "4"]


def test_the_plan_start_the_worker_count_and_the_schedule_end_reach_every_worker() -> None:
    with fleet_of(workers=2) as pair:
        master, workers = nodes(pair)
        assert master.fleet.worker_count() == 2
        assert workers[0].fleet.worker_count() == 1
        master.fleet.announce_plan_start(1234.5, 2, 8.0)  # -t 8s: a worker's own plan has no -t
        settle()
        assert [w.plan_starts for w in workers] == [[(1234.5, 2, 8.0)], [(1234.5, 2, 8.0)]]
        assert master.plan_starts == []  # the master fixed it: it is not told


def test_a_worker_that_stopped_early_is_listed_once_in_the_next_summary() -> None:
    with fleet_of(workers=2) as pair:
        master, (w1, _) = nodes(pair)
        w1.fleet.tell_stopped_early(1000.12345, "no heartbeat from the master for 5.1 s")
        settle()
        blocks = master.fleet.summary_blocks()
        index = pair.master.get_worker_index(pair.workers[0].client_id)
        assert blocks["workers_stopped_early"] == [
            {
                "worker": pair.workers[0].client_id,
                "index": index,
                "at": 1000.123,
                "why": "no heartbeat from the master for 5.1 s",
            }
        ]
        assert blocks["master"]["batches"] == 0
        assert master.fleet.summary_blocks()["workers_stopped_early"] == []  # since the last summary


@pytest.mark.parametrize("stopped_at", [None, 42.0])
def test_a_rate_searchs_steps_reach_every_worker(stopped_at: float | None) -> None:
    from llm_locust.load.stepped import SteppedRates

    with fleet_of(workers=1) as pair:
        master, (worker,) = nodes(pair)
        seen: list[tuple[Any, Any]] = []

        class Steps(SteppedRates):
            def __init__(self) -> None:
                pass

            def announce(self, steps: Any, stopped: Any) -> None:
                seen.append(([tuple(s) for s in steps], stopped))

        worker.plan.arrivals = Steps()
        master.fleet.announce_rate_steps([(0.5, 2.0), (30.5, 4.0)], stopped_at)
        settle()
        assert seen == [([(0.5, 2.0), (30.5, 4.0)], stopped_at)]
