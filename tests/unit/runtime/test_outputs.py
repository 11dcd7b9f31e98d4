"""The live outputs' wiring (runtime/outputs.py) in process: the aggregate is a sink of the node's
bus, and the gauges read the node where results are kept: on a master, its workers (Locust's real
runners over the in-memory channel, fake_rpc.py) and what they report in flight."""

from __future__ import annotations

from locust.env import Environment

from llm_locust.runtime.nodes import LocalNode, MasterNode, WorkerNode
from llm_locust.runtime.outputs import NodeView, install_outputs
from tests.unit.runtime.fake_rpc import fleet_of, settle


def test_the_aggregate_takes_every_row_the_bus_publishes() -> None:
    environment = Environment(user_classes=[])
    environment.create_local_runner()
    node = LocalNode(environment)
    outputs = install_outputs(node)
    node.bus.open()
    for tokens, outcome in ((4, "ok"), (6, "ok"), (0, "http_5xx")):
        node.deliver({"outcome": outcome, "completion_tokens": tokens})
    totals = outputs.aggregate.snapshot()["totals"]
    assert totals["completed"] == 2 and totals["failed"] == 1 and totals["generation_tokens"] == 10
    outputs.exporter.stop()


def test_a_masters_gauges_count_its_workers_and_what_they_have_in_flight() -> None:
    with fleet_of(workers=2) as pair:
        master = MasterNode(pair.master.environment)
        workers = [WorkerNode(w.environment) for w in pair.workers]
        view = NodeView(master)
        for worker, n in zip(workers, (2, 5), strict=True):
            worker.front.requests.in_flight = n
            worker.outbox.flush()  # the in-flight count travels with each batch
        settle()
        gauges = view.gauges()
        assert gauges.workers == 2 and gauges.in_flight == 2 + 5
        assert gauges.stage == -1 and gauges.stage_label == ""  # no stage before the shape's first
        assert view.results_folder() is None  # no test yet


def test_a_masters_aggregate_takes_its_workers_counted_gaps() -> None:
    """The second tier wired to the live outputs (issue 29 §3): the worker counts its rows' gaps,
    the master's aggregate merges them: the same ITL counts as the rows' own gaps."""
    with fleet_of(workers=1) as pair:
        master = MasterNode(pair.master.environment)
        (worker,) = [WorkerNode(w.environment) for w in pair.workers]
        outputs = install_outputs(master)
        master.bus.open()
        gaps = [0.01, 0.025, 0.02, 0.3]
        for _ in range(3):
            worker.outbox.add({"outcome": "ok", "completion_tokens": 5, "ttft": 0.1, "itl": list(gaps)})
        worker.outbox.flush()
        settle()
        agg = outputs.aggregate
        assert agg.completed == 3 and agg.overall["itl"].count == 12 and agg.buckets["itl"].count == 12
        assert agg.buckets["itl"].cumulative()[1] == 9  # le 0.025: 0.01, 0.02 and 0.025, three times each
        outputs.exporter.stop()
