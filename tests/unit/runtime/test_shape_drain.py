"""An open-loop test ends when its workers' requests in flight have finished, in process: the
master's shape (runtime/shape.py) after the last arrival reads the master's count of what its
workers have in flight (their batches over the fake RPC channel, fake_rpc.py)."""

from __future__ import annotations

from locust.argument_parser import get_empty_argument_parser, setup_parser_arguments

import sys
import time

import pytest

from llm_locust.config.register import register
from llm_locust.runtime.node import ATTRIBUTE
from llm_locust.runtime.nodes import MasterNode, WorkerNode
from llm_locust.runtime.prepare import prepare_or_exit
from llm_locust.runtime.shape import LLMShape
from tests.unit.runtime.fake_rpc import fleet_of, settle


class Shape(LLMShape):
    pass


def test_the_shape_drains_while_the_workers_have_requests_in_flight(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["locust"])
    parser = get_empty_argument_parser()
    setup_parser_arguments(parser)
    register(parser)
    options = parser.parse_args(
        ["-f", "x.py", "--host", "http://127.0.0.1:9", "--request-rate", "2", "-t", "5s"]
    )
    with fleet_of(workers=2) as pair:
        pair.master.environment.parsed_options = options
        master = MasterNode(pair.master.environment)
        master.adopt(prepare_or_exit(options, master.role))
        setattr(pair.master.environment, ATTRIBUTE, master)
        workers = [WorkerNode(w.environment) for w in pair.workers]
        assert master.plan.open_loop and master.plan.stages is not None
        shape = Shape()
        shape.runner = pair.master
        shape._fresh, shape._t0 = False, time.time() - 60  # the plan's 5 s ended long ago

        def report(*in_flight: int) -> None:
            for ext, n in zip(workers, in_flight, strict=True):
                ext.front.requests.in_flight = n
                ext.outbox.flush()
            settle()

        report(3, 1)
        assert master.fleet.total_in_flight() == 4
        assert shape.tick() == (pair.master.user_count, 1.0)  # keeps the dispatchers on
        report(0, 1)
        assert shape.tick() == (pair.master.user_count, 1.0)  # one still streams
        report(0, 0)
        assert shape.tick() is None  # all finished: the test ends
