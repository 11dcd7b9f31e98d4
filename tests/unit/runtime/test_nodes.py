"""The nodes' wiring (runtime/nodes.py), in process: one node per role on Locust's real runners
joined by the in-memory channel (tests/unit/runtime/fake_rpc.py).

A worker's finished request goes requests -> idle fold -> outbox -> the wire -> the master's
inbox -> its search gate -> its bus, and is published there once; the master writes its
summary only once the test has stopped and every worker's final batch is in.
"""

from __future__ import annotations

from locust.env import Environment

import time
from types import SimpleNamespace
from typing import Any

import pytest

from llm_locust.config.role import Role
from llm_locust.record import RequestRecord
from llm_locust.runtime.front import LoadFront
from llm_locust.runtime.node import role_of
from llm_locust.runtime.nodes import LocalNode, MasterNode, WorkerNode, make_node
from tests.unit.runtime.fake_rpc import Pair, fleet_of, settle


class _Client:
    """A request that ends at once, 3 tokens streamed."""

    def send(self, body: Any, record: RequestRecord, keep_text: bool = False) -> str:
        record.wall_start, record.t_sent = time.time(), time.perf_counter()
        record.t_first_token = record.t_sent + 0.01
        record.chunk_times = [record.t_first_token, record.t_sent + 0.02, record.t_sent + 0.03]
        record.t_end, record.completion_tokens = record.t_sent + 0.03, 3
        return ""


def _nodes(pair: Pair) -> tuple[MasterNode, list[WorkerNode]]:
    master, workers = make_node(pair.master.environment), [make_node(w.environment) for w in pair.workers]
    assert isinstance(master, MasterNode) and all(isinstance(w, WorkerNode) for w in workers)
    return master, workers  # type: ignore[return-value]


def _send(front: LoadFront, n: int) -> None:
    """``n`` requests of a test, through the worker's own request path."""
    context = SimpleNamespace(staged=False, client=SimpleNamespace(endpoint="chat"))
    spec = SimpleNamespace(
        target_input_tokens=None, target_output_tokens=None, session_id=None, turn=None, info=None
    )
    for _ in range(n):
        record = front.requests.new_record(context, spec)  # type: ignore[arg-type]
        front.requests.send(context, _Client(), {}, record)  # type: ignore[arg-type]


def test_each_role_gets_its_own_row_path() -> None:
    local = Environment(user_classes=[])
    local.create_local_runner()
    assert role_of(local.runner) is Role.LOCAL
    node = make_node(local)
    assert isinstance(node, LocalNode) and node.role is Role.LOCAL
    assert node.front is not None and node.fleet.outbox is None and node.fleet.inbox is None
    assert node.front.requests.deliver == node.deliver  # its rows into its own sinks
    with fleet_of(workers=1) as pair:
        master, (worker,) = _nodes(pair)
        assert (master.role, worker.role) == (Role.MASTER, Role.WORKER)
        assert master.inbox is master.fleet.inbox and master.fleet.outbox is None and master.front is None
        assert worker.outbox is worker.fleet.outbox and worker.fleet.inbox is None
        assert not hasattr(worker, "bus") and not hasattr(worker, "results")  # a worker keeps no results
        assert worker.front.requests.node == pair.workers[0].client_id  # the record ids' prefix


def test_a_workers_request_is_published_once_on_the_masters_bus() -> None:
    with fleet_of(workers=2) as pair:
        master, workers = _nodes(pair)
        published: list[dict[str, Any]] = []
        master.bus.subscribe(published.append)
        master.bus.open()  # as a test's start opens it
        for worker, n in zip(workers, (3, 2), strict=True):
            _send(worker.front, n)
            worker.front.folder.drain()  # the rows, handed on in the loop's idle time
            worker.outbox.flush()
        settle()
        ids = sorted(r["request_id"] for r in published)
        expected = sorted(f"{pair.workers[w].client_id}-{i}" for w, n in ((0, 3), (1, 2)) for i in range(n))
        assert ids == expected and master.bus.published == 5
        assert {r["worker"] for r in published} == {w.client_id for w in pair.workers}
        assert published[0]["completion_tokens"] == 3 and published[0]["e2e"] == pytest.approx(0.03)


def test_the_master_summarises_once_the_test_stopped_and_every_final_batch_is_in() -> None:
    with fleet_of(workers=2) as pair:
        master, workers = _nodes(pair)
        finalized: list[int] = []
        master.finalize = lambda: finalized.append(1)  # type: ignore[method-assign]
        master.bus.open()
        taken: list[dict[str, Any]] = []
        master.results = SimpleNamespace(stop_time=None, take=taken.append)  # type: ignore[assignment]
        workers[0].outbox.stop()  # a final batch before the master's own test stopped
        settle()
        assert finalized == []
        master.results.stop_time = time.time()  # type: ignore[union-attr]
        workers[1].outbox.add({"request_id": "last"})
        workers[1].outbox.stop()
        settle()
        assert finalized == [1]  # the last final batch, after the stop: the summary now
        assert [r["request_id"] for r in taken] == ["last"]  # its rows reached the results first
        assert master.fleet.workers_without_final() == []


def test_a_workers_gaps_reach_the_master_counted_unless_it_needs_the_values() -> None:
    """The live view's second tier wired (issue 29 §3): the worker's outbox counts its rows' gaps
    and the master's bus hands the counts to the live aggregates, each row's gaps as JSON text;
    with an SLO line on ITL or a capacity search the master gets the values instead."""
    from llm_locust.config.slo import parse_slo
    from llm_locust.live.gap_counts import GapCounts
    from llm_locust.record import RawJson

    with fleet_of(workers=1) as pair:
        master, (worker,) = _nodes(pair)
        published: list[dict[str, Any]] = []
        counts: list[GapCounts] = []
        master.bus.subscribe(published.append)
        master.bus.subscribe_gaps(counts.append)
        master.bus.open()

        def one_batch() -> None:
            _send(worker.front, 2)
            worker.front.folder.drain()
            worker.outbox.flush()
            settle()

        one_batch()
        assert [type(r["itl"]) for r in published] == [RawJson, RawJson] and len(counts) == 1
        assert counts[0].log.count == 4  # 3 tokens a request: 2 gaps each
        master.run_config = master.run_config.model_copy(update={"slo": parse_slo("itl_p99<=50ms")})
        one_batch()
        assert published[2]["itl"] == pytest.approx([0.01, 0.01]) and len(counts) == 1
        master.run_config = master.run_config.model_copy(update={"slo": None})
        master.search = SimpleNamespace(place=lambda row: True, observe=lambda row: None)  # type: ignore[assignment]
        one_batch()
        assert isinstance(published[4]["itl"], list) and len(counts) == 1
