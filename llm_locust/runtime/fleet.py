"""The master and its workers: what llm-locust sends between them, and what it knows of all of them.

Locust's runners carry users and stats; llm-locust adds three custom messages on the same channel:

- the plan's start (``PLAN_MESSAGE``, master to workers): every worker's stages and arrival
  schedule run on the master's ``t0`` and worker count;
- a rate search's steps so far (``SEARCH_MESSAGE``, master to workers): every sender's stepped
  arrivals follow the search;
- the records (:mod:`llm_locust.runtime.distributed`, workers to master): each worker's outbox
  to the master's inbox, with its in-flight count and health intervals;
- a worker that stopped its load on its own (``STOPPED_MESSAGE``, worker to master: it heard no
  heartbeat, :mod:`llm_locust.runtime.master_watch`): the summary's ``workers_stopped_early``.

A :class:`Fleet` answers the questions that span every process on any role (on a local runner
the fleet is this one process): requests in flight, the workers whose final batch is missing,
the health intervals of the processes that time requests (also written to the results'
``health.jsonl`` as they arrive, :meth:`Fleet.record_health`), and on a master whether it keeps
up with its workers' records (the summary's ``master`` block, :mod:`llm_locust.runtime.ingest`).
"""

from __future__ import annotations

import locust.runners
from locust.env import Environment
from locust.rpc import Message

import time
from collections.abc import Callable
from typing import Any

import gevent

from llm_locust import health
from llm_locust.config.role import Role
from llm_locust.load.plan import LoadPlan
from llm_locust.load.stepped import SteppedRates
from llm_locust.runtime import distributed, stopping
from llm_locust.runtime.requests import Requests
from llm_locust.runtime.runners import master_runner, runner_of
from llm_locust.runtime.search import SEARCH_MESSAGE
from llm_locust.runtime.session import TestResults

__all__ = ["PLAN_MESSAGE", "Fleet", "PlanStart"]

PLAN_MESSAGE = "llm_locust_plan"
STOPPED_MESSAGE = "llm_locust_stopped_early"
#: How often the runner's user count is sampled for the stages' levels (seconds).
LEVEL_SAMPLE_S = 0.1
#: The next test's plan start and worker count, as the master announced them.
PlanStart = Callable[[float, int], None]


class Fleet:
    """This process's view of the master and its workers (see the module docstring)."""

    def __init__(
        self,
        environment: Environment,
        role: Role,
        requests: Requests | None,
        plan: Callable[[], LoadPlan],
        *,
        on_plan_start: PlanStart = lambda t0, workers: None,
        deliver: Callable[[dict[str, Any]], None] = lambda row: None,
        on_final_batch: Callable[[], None] = lambda: None,
    ) -> None:
        """``requests``: this process's, where it sends (a worker, the local runner); a worker
        hears the plan's start (``on_plan_start``), a master delivers its workers' rows
        (``deliver``) and hears each final batch (``on_final_batch``)."""
        self.environment, self.role, self.requests = environment, role, requests
        self._plan, self._on_plan_start, self._on_final_batch = plan, on_plan_start, on_final_batch
        self.outbox: distributed.Outbox | None = None  # a worker's records to the master
        self.inbox: distributed.Inbox | None = None  # the master's records from its workers
        self._health_sink: Callable[[dict[str, Any]], None] | None = None
        self.stopped_early: list[dict[str, Any]] = []  # the master's: since the last summary
        runner = runner_of(environment)
        if role == Role.WORKER:
            assert requests is not None
            self.outbox = distributed.Outbox(
                runner.send_message, in_flight=lambda: requests.in_flight, oldest=requests.oldest
            )
            runner.register_message(PLAN_MESSAGE, self._on_plan_message)
            runner.register_message(SEARCH_MESSAGE, self._on_search_message)
            runner.register_message(stopping.STOP_MESSAGE, stopping.on_stop_message, concurrent=True)
        elif role == Role.MASTER:
            self.inbox = distributed.Inbox(deliver)
            runner.register_message(distributed.MESSAGE_TYPE, self._on_worker_message)
            runner.register_message(STOPPED_MESSAGE, self._on_stopped_early)

    # -- master to workers -------------------------------------------------------------
    def announce_plan_start(self, t0: float, workers: int) -> None:
        if self.role == Role.MASTER:
            runner_of(self.environment).send_message(PLAN_MESSAGE, {"t0": t0, "workers": workers})

    def _on_plan_message(self, environment: Environment, msg: Message, **_: object) -> None:
        self._on_plan_start(msg.data["t0"], int(msg.data["workers"]))
        arrivals = self._plan().arrivals
        if isinstance(arrivals, SteppedRates):
            arrivals.reset(msg.data["t0"])

    def announce_rate_steps(self, steps: list[Any], stopped_at: float | None) -> None:
        """A rate search's steps so far (offsets from ``t0``) and its stop, for every sender."""
        arrivals = self._plan().arrivals
        if isinstance(arrivals, SteppedRates):
            arrivals.announce(steps, stopped_at)
        if self.role == Role.MASTER:
            data = {"steps": list(steps), "stopped_at": stopped_at}
            runner_of(self.environment).send_message(SEARCH_MESSAGE, data)

    def _on_search_message(self, environment: Environment, msg: Message, **_: object) -> None:
        arrivals = self._plan().arrivals
        if isinstance(arrivals, SteppedRates):
            arrivals.announce(msg.data["steps"], msg.data["stopped_at"])

    # -- workers to master -------------------------------------------------------------
    def _on_worker_message(self, environment: Environment, msg: Message, **_: object) -> None:
        assert self.inbox is not None
        self.inbox.handle(msg.node_id, msg.data)
        if msg.data.get("final"):
            self._on_final_batch()

    def tell_stopped_early(self, at: float, why: str) -> None:
        """A worker stopped its load on its own at ``at`` (Unix time): tell the master, if it hears."""
        if self.role == Role.WORKER:
            runner_of(self.environment).send_message(STOPPED_MESSAGE, {"at": at, "why": why})

    def _on_stopped_early(self, environment: Environment, msg: Message, **_: object) -> None:
        index = master_runner(self.environment).get_worker_index(msg.node_id)
        entry = {"worker": msg.node_id, "index": index, "at": round(float(msg.data["at"]), 3)}
        self.stopped_early.append({**entry, "why": str(msg.data["why"])})

    def _alive(self) -> set[str]:
        runner = master_runner(self.environment)
        return {c.id for c in runner.clients.values() if c.state != locust.runners.STATE_MISSING}

    def workers_without_final(self) -> list[str]:
        """Connected workers whose final batch of records has not arrived."""
        if self.inbox is None:
            return []
        return sorted(self._alive() - self.inbox.finals)

    # -- questions about every process ---------------------------------------------------
    def worker_count(self) -> int:
        runner = self.environment.runner
        return max(int(getattr(runner, "worker_count", 1)), 1) if self.role == Role.MASTER else 1

    def in_flight_before(self, when: float) -> int | None:
        """Requests sent before ``when`` still in flight, over every process (``None``: not yet
        known: a worker has not reported since ``when``)."""
        if self.inbox is not None:
            return self.inbox.in_flight_before(when, self._alive())
        assert self.requests is not None
        return self.requests.in_flight_before(when)

    def total_in_flight(self) -> int:
        if self.inbox is not None:
            return self.inbox.total_in_flight()
        assert self.requests is not None
        return self.requests.in_flight

    def record_health(self, results: Any, start: float) -> None:
        """Write the load processes' health intervals into ``results`` (``health.jsonl``) as they
        arrive, starting with those that ended after ``start``."""
        self.stop_health()
        for interval in self.health_intervals(start):
            results.take_health(interval)
        self._health_sink = results.take_health
        if self.inbox is not None:
            self.inbox.health_sink = results.take_health
        else:
            health.monitor().subscribe(results.take_health)

    def stop_health(self) -> None:
        """The results are closing: no more health lines."""
        sink, self._health_sink = self._health_sink, None
        if sink is None:
            return
        if self.inbox is not None:
            self.inbox.health_sink = lambda interval: None
        else:
            health.monitor().unsubscribe(sink)

    def summary_blocks(self) -> dict[str, Any]:
        """What the fleet adds to a test's summary: on a master, its ``master`` block and the
        workers that stopped their load on their own since the last summary."""
        if self.inbox is None:
            return {}
        stopped, self.stopped_early = self.stopped_early, []
        return {"master": self.inbox.ingest.block(), "workers_stopped_early": stopped}

    def health_intervals(self, start: float | None = None) -> list[dict[str, Any]]:
        """The health intervals (ending after ``start``, if given) of the processes that time
        requests: the workers' (shipped with their records), or this process's own
        (:mod:`llm_locust.health`)."""
        if self.inbox is not None:
            return self.inbox.health_intervals(start)
        own = health.monitor().intervals
        return list(own) if start is None else health.since(own, start)

    def watch_load(self, results: TestResults, current: Callable[[], TestResults | None]) -> None:
        """While ``results`` is the current test's and runs: sample the users (the stages' levels,
        the config block) and the CPU of the processes that send (the workers', or this one's)."""
        runner = runner_of(self.environment)
        while current() is results and results.running:
            if self.role == Role.MASTER:
                master = master_runner(self.environment)
                cpu = max((c.cpu_usage for c in master.clients.values()), default=0.0)
                warned = master.cpu_warning_emitted or master.worker_cpu_warning_emitted
            else:
                cpu, warned = runner.current_cpu_usage, runner.cpu_warning_emitted
            results.observe(time.time(), runner.user_count, cpu, warned)
            gevent.sleep(LEVEL_SAMPLE_S)
