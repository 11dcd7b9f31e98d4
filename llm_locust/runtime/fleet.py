"""The master and its workers: what llm-locust sends between them, and what it knows of all of them.

Locust's runners carry users and stats; llm-locust adds three custom messages on the same channel:

- the plan's start (``PLAN``, master to workers): every worker's stages and arrival
  schedule run on the master's ``t0`` and worker count;
- a rate search's steps so far (``SEARCH``, master to workers): every sender's stepped
  arrivals follow the search;
- the records (:mod:`llm_locust.runtime.distributed`, workers to master): each worker's outbox
  to the master's inbox, with its in-flight count and health intervals;
- a worker that stopped its load on its own (``STOPPED``, worker to master: it heard no
  heartbeat, :mod:`llm_locust.runtime.master_watch`): the summary's ``workers_stopped_early``.

A master also watches which of its workers quit during a test (Locust's own ``quit``,
:mod:`llm_locust.runtime.departures`): the summary's ``workers_quit``.

Each message is a typed class of :mod:`llm_locust.runtime.messages`, read back with its checks.

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

import logging
import time
from collections.abc import Callable, Mapping, Sequence

import gevent

from llm_locust.client import health
from llm_locust.config.jsontypes import JsonObject, JsonValue
from llm_locust.load.plan import LoadPlan
from llm_locust.load.stepped import SteppedRates
from llm_locust.results.ending import WorkerQuit
from llm_locust.runtime import distributed, stopping
from llm_locust.runtime.departures import Departures
from llm_locust.runtime.messages import PLAN, SEARCH, STOPPED, PlanStart, RateSteps, StoppedEarly
from llm_locust.runtime.requests import Requests
from llm_locust.runtime.runners import master_runner, runner_of
from llm_locust.runtime.session import TestResults
from llm_locust.runtime.silences import Silences

__all__ = ["Fleet", "MasterFleet", "OnPlanStart", "WorkerFleet"]

log = logging.getLogger("llm_locust")
#: How often the runner's user count is sampled for the stages' levels (seconds).
LEVEL_SAMPLE_S = 0.1
#: How often a master looks for workers that quit (seconds).
DEPARTURES_CHECK_S = 0.1
#: The next test's plan start, worker count and schedule end, as the master announced them.
OnPlanStart = Callable[[PlanStart], None]


class Fleet:
    """This process's view of every process that sends: on the local runner, itself alone; the
    master's and a worker's add their messages (:class:`MasterFleet`, :class:`WorkerFleet`)."""

    outbox: distributed.Outbox | None = None  # a worker's records to the master
    inbox: distributed.Inbox | None = None  # the master's records from its workers

    def __init__(
        self, environment: Environment, requests: Requests | None, plan: Callable[[], LoadPlan]
    ) -> None:
        """``requests``: this process's, where it sends (a worker, the local runner)."""
        self.environment, self.requests, self._plan = environment, requests, plan
        self._health_sink: Callable[[Mapping[str, float | str]], None] | None = None

    # -- the plan's start and a rate search's steps --------------------------------------
    def announce_plan_start(self, t0: float, workers: int, end: float | None = None) -> None:
        """The plan starts at ``t0`` on ``workers`` processes and its schedule ends ``end`` seconds
        later (``None``: no end of its own); the master tells its workers."""

    def announce_rate_steps(self, steps: Sequence[Sequence[float]], stopped_at: float | None) -> None:
        """A rate search's steps so far (offsets from ``t0``) and its stop, for every sender."""
        arrivals = self._plan().arrivals
        if isinstance(arrivals, SteppedRates):
            arrivals.announce(steps, stopped_at)

    # -- questions about every process ---------------------------------------------------
    def workers_without_final(self) -> list[str]:
        """Connected workers whose final batch of records has not arrived (the master's)."""
        return []

    def worker_count(self) -> int:
        return 1

    def in_flight_before(self, when: float) -> int | None:
        """Requests sent before ``when`` still in flight, over every process (``None``: not yet
        known: a worker has not reported since ``when``)."""
        assert self.requests is not None
        return self.requests.in_flight_before(when)

    def total_in_flight(self) -> int:
        assert self.requests is not None
        return self.requests.in_flight

    def record_health(self, results: TestResults, start: float) -> None:
        """Write the load processes' health intervals into ``results`` (``health.jsonl``) as they
        arrive, starting with those that ended after ``start``."""
        self.stop_health()
        for interval in self.health_intervals(start):
            results.take_health(interval)
        self._health_sink = results.take_health
        self._health_to(results.take_health)

    def _health_to(self, sink: Callable[[Mapping[str, float | str]], None]) -> None:
        health.monitor().subscribe(sink)

    def stop_health(self) -> None:
        """The results are closing: no more health lines."""
        sink, self._health_sink = self._health_sink, None
        if sink is not None:
            self._health_off(sink)

    def _health_off(self, sink: Callable[[Mapping[str, float | str]], None]) -> None:
        health.monitor().unsubscribe(sink)

    def summary_blocks(self) -> JsonObject:
        """What the fleet adds to a test's summary (the master's blocks)."""
        return {}

    def health_intervals(self, start: float | None = None) -> Sequence[Mapping[str, float | str]]:
        """The health intervals (ending after ``start``, if given) of the processes that time
        requests: this process's own (:mod:`llm_locust.client.health`); a master's, its workers'."""
        own = health.monitor().intervals
        return list(own) if start is None else health.since(own, start)

    def _cpu(self) -> tuple[float, bool]:
        """The CPU of the processes that send, and whether Locust warned of it."""
        runner = runner_of(self.environment)
        return runner.current_cpu_usage, runner.cpu_warning_emitted

    def watch_load(self, results: TestResults, current: Callable[[], TestResults | None]) -> None:
        """While ``results`` is the current test's and runs: sample the users (the stages' levels,
        the config block) and the CPU of the processes that send (the workers', or this one's)."""
        runner = runner_of(self.environment)
        while current() is results and results.running:
            cpu, warned = self._cpu()
            results.observe(time.time(), runner.user_count, cpu, warned)
            gevent.sleep(LEVEL_SAMPLE_S)


class WorkerFleet(Fleet):
    """A worker's: its records to the master; the plan's start, a rate search's steps and the
    stop from the master."""

    outbox: distributed.Outbox

    def __init__(
        self,
        environment: Environment,
        requests: Requests,
        plan: Callable[[], LoadPlan],
        on_plan_start: OnPlanStart,
    ) -> None:
        """``on_plan_start``: the master fixed the next test's plan start, worker count and end."""
        super().__init__(environment, requests, plan)
        self._on_plan_start = on_plan_start
        runner = runner_of(environment)
        self.outbox = distributed.Outbox(
            runner.send_message, in_flight=lambda: requests.in_flight, oldest=requests.oldest
        )
        runner.register_message(PLAN, self._on_plan_message)
        runner.register_message(SEARCH, self._on_search_message)
        runner.register_message(stopping.STOP_MESSAGE, stopping.on_stop_message, concurrent=True)

    def _on_plan_message(self, environment: Environment, msg: Message, **_: object) -> None:
        start = PlanStart.from_data(msg.data)
        self._on_plan_start(start)
        arrivals = self._plan().arrivals
        if isinstance(arrivals, SteppedRates):
            arrivals.reset(start.t0)

    def _on_search_message(self, environment: Environment, msg: Message, **_: object) -> None:
        arrivals = self._plan().arrivals
        if isinstance(arrivals, SteppedRates):
            steps = RateSteps.from_data(msg.data)
            arrivals.announce(steps.steps, steps.stopped_at)

    def tell_stopped_early(self, at: float, why: str) -> None:
        """This worker stopped its load on its own at ``at`` (Unix time): tell the master, if it hears."""
        runner_of(self.environment).send_message(STOPPED, StoppedEarly(at, why).to_data())


class MasterFleet(Fleet):
    """The master's: its workers' records, in-flight counts and health; the plan's start and a
    rate search's steps to them."""

    inbox: distributed.Inbox

    def __init__(
        self,
        environment: Environment,
        plan: Callable[[], LoadPlan],
        deliver: Callable[[JsonObject], None],
        on_final_batch: Callable[[], None] = lambda: None,
    ) -> None:
        """``deliver``: each of the workers' rows; ``on_final_batch``: a worker's last arrived."""
        super().__init__(environment, None, plan)
        self._on_final_batch = on_final_batch
        self.stopped_early: list[JsonValue] = []  # since the last summary
        self.silences = Silences()  # the current test's workers that stopped answering
        self.departures = Departures()  # ... and those that quit
        self.inbox = distributed.Inbox(deliver)
        runner = runner_of(environment)
        runner.register_message(distributed.MESSAGE_TYPE, self._on_worker_message)
        runner.register_message(STOPPED, self._on_stopped_early)

    def announce_plan_start(self, t0: float, workers: int, end: float | None = None) -> None:
        runner_of(self.environment).send_message(PLAN, PlanStart(t0, workers, end).to_data())

    def announce_rate_steps(self, steps: Sequence[Sequence[float]], stopped_at: float | None) -> None:
        super().announce_rate_steps(steps, stopped_at)
        data = RateSteps([(float(start), float(rate)) for start, rate in steps], stopped_at).to_data()
        runner_of(self.environment).send_message(SEARCH, data)

    def _on_worker_message(self, environment: Environment, msg: Message, **_: object) -> None:
        batch = self.inbox.handle(msg.node_id, msg.data)
        if batch is not None and batch.final:
            self._on_final_batch()

    def _on_stopped_early(self, environment: Environment, msg: Message, **_: object) -> None:
        index = master_runner(self.environment).get_worker_index(msg.node_id)
        stopped = StoppedEarly.from_data(msg.data)
        entry = {"worker": msg.node_id, "index": index, "at": round(stopped.at, 3)}
        self.stopped_early.append({**entry, "why": stopped.why})

    def _alive(self) -> set[str]:
        runner = master_runner(self.environment)
        return {c.id for c in runner.clients.values() if c.state != locust.runners.STATE_MISSING}

    def workers_without_final(self) -> list[str]:
        return sorted(self._alive() - self.inbox.finals)

    def workers(self) -> dict[str, tuple[int, bool]]:
        """Each worker the master knows: its index, and whether Locust counts it missing."""
        runner = master_runner(self.environment)
        missing = locust.runners.STATE_MISSING
        return {c.id: (runner.get_worker_index(c.id), c.state == missing) for c in runner.clients.values()}

    def note_departures(self, start: float) -> list[WorkerQuit]:
        """The workers that quit since the last look (a test that began at ``start``), logged."""
        quits = self.departures.observe(time.time(), self.workers())
        for q in quits:
            log.warning(
                "llm-locust: worker %d (%s) quit %.1f s into the test: %d worker(s) carry the load from now",
                q.index,
                q.worker,
                q.at - start,
                q.workers_left,
            )
        return quits

    def watch_departures(self, start: float, running: Callable[[], bool]) -> None:
        """While ``running()`` (the test runs and its load is not stopping): look for workers that quit."""
        while running():
            self.note_departures(start)
            gevent.sleep(DEPARTURES_CHECK_S)

    def workers_missing(self) -> list[str]:
        """Workers Locust counts missing (no heartbeat for 3 s): when the last one goes, Locust
        stops the test."""
        runner = master_runner(self.environment)
        return sorted(c.id for c in runner.clients.values() if c.state == locust.runners.STATE_MISSING)

    def worker_count(self) -> int:
        return max(int(getattr(self.environment.runner, "worker_count", 1)), 1)

    def in_flight_before(self, when: float) -> int | None:
        return self.inbox.in_flight_before(when, self._alive())

    def total_in_flight(self) -> int:
        return self.inbox.total_in_flight()

    def _health_to(self, sink: Callable[[Mapping[str, float | str]], None]) -> None:
        self.inbox.health_sink = sink

    def _health_off(self, sink: Callable[[Mapping[str, float | str]], None]) -> None:
        self.inbox.health_sink = lambda interval: None

    def summary_blocks(self) -> JsonObject:
        """The ``master`` block and the workers that stopped their load on their own since the
        last summary."""
        stopped, self.stopped_early = self.stopped_early, []
        return {
            "master": self.inbox.ingest.block(),
            "workers_stopped_early": stopped,
            "workers_silent": [*self.silences.to_json()],
            "workers_quit": [*self.departures.to_json()],
        }

    def health_intervals(self, start: float | None = None) -> Sequence[Mapping[str, float | str]]:
        return self.inbox.health_intervals(start)  # shipped with the workers' records

    def _cpu(self) -> tuple[float, bool]:
        master = master_runner(self.environment)
        cpu = max((c.cpu_usage for c in master.clients.values()), default=0.0)
        return cpu, master.cpu_warning_emitted or master.worker_cpu_warning_emitted
