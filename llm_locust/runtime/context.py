"""The run context: what one test runs with, fixed when it starts.

One :class:`RunContext` per test and process, built at ``test_start`` and never changed: the
validated configuration, the role, the load plan and its start ``t0`` (fixed by the shape on
the master or local runner, sent to the workers), how many workers share the open-loop
schedule and which one this is, the HTTP client's settings (the model resolved), the
workload, and what the server said about itself. Everything a request needs to know about
its test comes from here; what changes while a test runs (the stage the shape is in, the
requests in flight, whether the load is stopping) is the node's :class:`LiveState`
(:mod:`llm_locust.runtime.node`), changed only by the runtime.

Pure module: no Locust, no network.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from llm_locust.config.model import RunConfig
from llm_locust.config.role import Role
from llm_locust.load.plan import LoadPlan
from llm_locust.load.stages import Stage
from llm_locust.results.ending import EndCause

if TYPE_CHECKING:  # the client's module is the network; the context only holds its settings
    from llm_locust.client.streaming import ClientConfig
    from llm_locust.workload.build import BuiltWorkload

__all__ = ["LiveState", "RunContext"]


@dataclass(frozen=True)
class RunContext:
    """One test in one process (see the module docstring)."""

    config: RunConfig
    role: Role
    plan: LoadPlan
    client: ClientConfig | None  # the HTTP client's settings, the model resolved
    workload: BuiltWorkload | None = None
    t0: float | None = None  # the plan's start, wall clock (staged plans)
    #: where the open-loop schedule ends, seconds from ``t0``: the master's plan's end (a worker's
    #: own plan has no ``-t``); ``None``: the plan's own
    plan_end: float | None = None
    workers: int = 1  # processes sharing the open-loop schedule
    slot: int = 0  # this process's index among them
    worker_index: int = 0  # Locust's index of this worker (request streams)
    server: Mapping[str, Any] = field(default_factory=dict)  # the target's facts
    test: int = 1  # the process's n-th test
    start_time: float = 0.0  # wall clock, test_start

    @property
    def staged(self) -> bool:
        return self.plan.stages is not None and self.t0 is not None

    def stage_at(self, wall_time: float) -> tuple[Stage | None, bool]:
        """The stage a request sent at ``wall_time`` belongs to, and whether it was in warm-up."""
        if self.plan.stages is None or self.t0 is None:
            return None, False
        return self.stage_after(max(wall_time - self.t0, 0.0))

    def stage_after(self, elapsed_s: float) -> tuple[Stage | None, bool]:
        """The stage ``elapsed_s`` into the plan (an open-loop arrival's own schedule offset: exact,
        where a wall-clock time converted back can land a hair before a stage boundary)."""
        if self.plan.stages is None:
            return None, False
        stage, in_stage = self.plan.stages.stage_at(elapsed_s)
        if stage is None:
            return None, False
        return stage, stage.in_warmup(in_stage)


@dataclass
class LiveState:
    """What changes while a test runs; changed by the runtime only."""

    stage: Stage | None = None  # the stage the shape is in (master, local)
    stopping: bool = False  # the load is stopping: send nothing new
    interrupted: str | None = None  # what stopped the run, in one line (a signal's name)
    interrupt_exit_code: int | None = None
    interrupt_cause: EndCause | None = None
    interrupted_at: float | None = None  # Unix time
    pending_t0: float | None = None  # the next test's plan start (the shape, or the master)
    pending_workers: int = 1
    pending_end: float | None = None  # where its schedule ends, seconds from t0 (the master's plan's)

    def stop(self) -> None:
        """The load is stopping (Locust's ``test_stopping``, a lost master): send nothing new."""
        self.stopping = True

    def interrupt(self, reason: str, exit_code: int, cause: EndCause, at: float | None = None) -> None:
        """What stopped the run (``reason``: one line; ``cause``, at ``at``: now if not given) and
        the exit code it asks for; the first one stands."""
        if self.interrupted is None:
            self.interrupted, self.interrupt_exit_code = reason, exit_code
            self.interrupt_cause, self.interrupted_at = cause, time.time() if at is None else at

    def clear_interrupt(self) -> None:
        """A test's summary is out: the next test (the web UI's) starts uninterrupted."""
        self.interrupted = self.interrupt_exit_code = self.interrupt_cause = self.interrupted_at = None
