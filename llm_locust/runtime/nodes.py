"""The three nodes, one per role, as Locust has one runner per role; :func:`make_node` picks one.

- :class:`WorkerNode`: requests -> fold -> outbox (its front half, :mod:`llm_locust.runtime.front`);
  the plan's start and a rate search's steps come from the master.
- :class:`MasterNode`: inbox -> search gate -> bus -> results and live aggregates (its sinks,
  :mod:`llm_locust.runtime.sink`); at the stop it waits for every worker's final batch; a test
  whose workers all stop answering waits for them (:mod:`llm_locust.runtime.silences`).
- :class:`LocalNode`: the worker's front half with the master's sinks.
"""

from __future__ import annotations

from locust.env import Environment

import gevent

from llm_locust.client.preflight import server_facts
from llm_locust.config.jsontypes import JsonObject
from llm_locust.config.role import Role
from llm_locust.live.gap_counts import gap_edges
from llm_locust.runtime import silences, stopping
from llm_locust.runtime.context import RunContext
from llm_locust.runtime.departures import Departures
from llm_locust.runtime.fleet import Fleet, MasterFleet, WorkerFleet
from llm_locust.runtime.front import LoadFront, Row
from llm_locust.runtime.messages import PlanStart
from llm_locust.runtime.node import Node, role_of
from llm_locust.runtime.request_sources import client_config
from llm_locust.runtime.runners import worker_runner
from llm_locust.runtime.sink import SinkNode

__all__ = ["LocalNode", "MasterNode", "WorkerNode", "make_node"]


def make_node(environment: Environment) -> Node:
    """The node of the role of the runner Locust made (``init``)."""
    role = role_of(environment.runner)
    if role is Role.MASTER:
        return MasterNode(environment)
    if role is Role.WORKER:
        return WorkerNode(environment)
    return LocalNode(environment)


class WorkerNode(Node):
    """A worker: sends its share of the load; its rows go to the master."""

    role = Role.WORKER
    front: LoadFront
    fleet: WorkerFleet

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        node_id = worker_runner(environment).client_id
        self.front = LoadFront(environment, node_id, self._to_outbox, lambda: self.context, self.live)
        self.fleet = WorkerFleet(environment, self.front.requests, lambda: self.plan, self._plan_start)
        self.outbox = self.fleet.outbox
        self.outbox.gap_edges = lambda: gap_edges(self.run_config.slo, self.plan.search is not None)

    def _to_outbox(self, row: Row) -> None:
        self.outbox.add(row)

    def _plan_start(self, start: PlanStart) -> None:
        """The master fixed the next test's plan start, how many workers share it and where its
        schedule ends (this worker's plan has no ``-t``: Locust does not pass it to workers)."""
        self.live.pending_t0, self.live.pending_workers = start.t0, start.workers
        self.live.pending_end = start.end

    def _started(self, context: RunContext) -> None:
        self.front.start(context)
        self.outbox.start()

    def on_test_stop(self) -> None:
        self.front.finish(float(self.environment.stop_timeout or 0))  # its records go out too
        stopping.report_locust_stats(self.environment.runner)  # before the final batch
        self.outbox.stop()


class MasterNode(SinkNode):
    """The master: its workers' rows into its results; it sends no request itself."""

    role = Role.MASTER
    fleet: MasterFleet

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        self.fleet = MasterFleet(environment, lambda: self.plan, self.deliver, self._final_batch)
        self.inbox = self.fleet.inbox
        self.inbox.gap_edges = lambda: gap_edges(self.run_config.slo, self.search is not None)
        self.inbox.deliver_gaps = self.bus.publish_gaps

    def _started(self, context: RunContext) -> None:
        self.inbox.reset()
        self.fleet.silences = silences.Silences()
        self.fleet.departures = Departures()
        self._open_results(context)
        results = self.results

        def running() -> bool:  # this test's, and its load is not stopping
            return (
                self.results is results and results is not None and results.running and not self.live.stopping
            )

        gevent.spawn(self.fleet.watch_departures, context.start_time, running)

    def on_test_stopping(self) -> None:
        stopping.mark_early_end(self)  # before the load is marked stopping: a worker quit, the master...
        super().on_test_stopping()

    def _final_batch(self) -> None:
        """A worker's final batch arrived: the summary once the test stopped and none is missing."""
        stopped = self.results is not None and self.results.stop_time is not None
        if stopped and not self.fleet.workers_without_final():
            self.finalize()

    def _await_workers(self) -> None:
        stopping.collect_final_batches(self)  # bounded by the drain
        if self.results is not None:  # no worker answering at the end: the run lost its load
            silences.at_stop(self, self.fleet.silences, self.results)

    def _summary_extra(self) -> JsonObject:
        return {
            "workers_without_final_batch": [*self.fleet.workers_without_final()],
            "workers_missing": [*self.fleet.workers_missing()],
        }


class LocalNode(SinkNode):
    """The local runner: the worker's front half with the master's sinks."""

    role = Role.LOCAL
    front: LoadFront

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        self.front = LoadFront(environment, Role.LOCAL.value, self.deliver, lambda: self.context, self.live)
        self.fleet = Fleet(environment, self.front.requests, lambda: self.plan)

    def check_target(self) -> None:
        """The target checked at ``init`` (headless), then the first test's workload built once
        against it, before Locust starts the test and its ``-t`` clock: with ``--tokenizer
        server`` the build asks the server to count every corpus piece (0.8-4.7 s against the
        simulator on this 2-core host); the test's own build then takes the costed prompt text
        kept by the process's factory and only draws its salt."""
        super().check_target()
        result = self.preflight_result
        if result is None or not result.ok:
            return
        config = self.run_config
        client = client_config(config.request, self.environment.host or config.host)
        self.front.workload(config, client, server_facts(result, client))

    def _started(self, context: RunContext) -> None:
        self.front.start(context)
        self._open_results(context)

    def _drain_rows(self) -> None:
        self.front.folder.drain()

    def on_test_stop(self) -> None:
        self.front.finish(float(self.environment.stop_timeout or 0))
        super().on_test_stop()
