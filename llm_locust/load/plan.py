"""The load model of a run, from its typed options: closed-loop stages, open-loop rates, or a trace.

Every process (local, master, each worker) builds the same :class:`LoadPlan` from the same
:class:`~llm_locust.config.model.LoadConfig`, once per configuration (a trace file is read
once per process); only the plan's start time ``t0`` (wall clock) is decided by the process that
runs the shape and shared with the workers. Everything else, which stage a request
belongs to, whether it falls in warm-up, when each open-loop arrival is due, follows
from ``(plan, t0)`` and needs no further coordination.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llm_locust.config.model import LoadConfig
from llm_locust.load.arrivals import (
    ArrivalProcess,
    ArrivalSchedule,
    RateStep,
    parse_arrival,
    split_for_worker,
)
from llm_locust.load.stages import (
    Stage,
    StagePlan,
    parse_matrix,
    parse_ramp,
    parse_rate_ramp,
    stage_at,
)
from llm_locust.load.traces import Trace, TraceError, load_trace

__all__ = [
    "FOREVER",
    "OPEN_LOOP_LEAD",
    "LoadPlan",
    "LoadPlanError",
    "build_load_plan",
    "stage_of",
]

FOREVER = 10.0 * 365 * 24 * 3600  # "until stopped": long enough, and still a finite number
#: Open loop: the schedule starts this long after the test, so every worker's dispatcher
#: is spawned and waiting before the first arrival is due.
OPEN_LOOP_LEAD = 1.0


class LoadPlanError(ValueError):
    """A bad load-model option; the message names the flag."""


@dataclass
class LoadPlan:
    """What load to apply, stage by stage. ``stages is None``: Locust's own ``-u/-r/-t``."""

    stages: StagePlan | None = None
    arrival: ArrivalProcess | None = None  # open loop when set
    trace: Trace | None = None
    max_concurrency: int | None = None
    seed: int = 0

    @property
    def open_loop(self) -> bool:
        return self.arrival is not None or self.trace is not None

    def stage_at(self, elapsed: float) -> tuple[Stage | None, float]:
        if self.stages is None:
            return None, elapsed
        return stage_at(self.stages, elapsed)

    def schedule(self, worker_index: int = 0, worker_count: int = 1) -> ArrivalSchedule:
        """This worker's share of the open-loop arrivals (offsets in seconds from ``t0``)."""
        assert self.arrival is not None and self.stages is not None
        steps = tuple(RateStep(s.target, s.duration_s) for s in self.stages)
        schedule = ArrivalSchedule(self.arrival, steps, self.seed)
        return split_for_worker(schedule, worker_index, worker_count)

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": "open" if self.open_loop else "closed"}
        if self.arrival is not None:
            out["arrival"] = {"kind": self.arrival.kind, "burstiness": self.arrival.burstiness}
        if self.trace is not None:
            out["trace"] = self.trace.describe()
        if self.max_concurrency:
            out["max_concurrency"] = self.max_concurrency
        return out


def build_load_plan(load: LoadConfig, seed: int = 0) -> LoadPlan:
    """The plan for ``load`` (``seed``: ``--seed``); raises :class:`LoadPlanError` with one line.

    Open loop: ``-t`` sets the schedule's length (the test ends when the schedule is done
    and the requests in flight have finished, so the last arrivals are measured like the
    first); without ``-t`` the schedule runs until the test is stopped.
    """
    try:
        return _build(load, seed)
    except LoadPlanError:
        raise
    except (ValueError, OSError, TraceError) as exc:
        message = str(exc).splitlines()[0]
        if isinstance(exc, TraceError) and not message.startswith("-"):
            message = f"--trace: {message}"
        raise LoadPlanError(message) from None


def _build(load: LoadConfig, seed: int) -> LoadPlan:
    step, warmup, mode = load.step_time, load.warmup, load.mode
    plan = LoadPlan(max_concurrency=load.max_concurrency, seed=seed)
    if mode == "--ramp":
        plan.stages = parse_ramp(list(load.ramp or ()), step, load.spawn_rate, warmup)
    elif mode == "--matrix":
        assert load.matrix is not None
        plan.stages = parse_matrix(load.matrix, step, load.spawn_rate, warmup)
    elif mode == "--rate-ramp":
        plan.stages = parse_rate_ramp(list(load.rate_ramp or ()), step, warmup)
    elif mode == "--request-rate":
        assert load.request_rate is not None
        duration = load.run_time or FOREVER
        plan.stages = parse_rate_ramp([load.request_rate], duration, warmup)
    elif mode == "--trace":
        plan.trace = _trace(load, seed)
        duration = max(plan.trace.duration_s, 1e-3)
        plan.stages = parse_rate_ramp([len(plan.trace.entries) / duration], duration, warmup)
    if plan.stages is not None and plan.stages[0].kind == "rate" and plan.trace is None:
        plan.arrival = parse_arrival(load.arrival, 1.0, load.burstiness)
    return plan


def _trace(load: LoadConfig, seed: int) -> Trace:
    assert load.trace is not None
    return load_trace(
        load.trace,
        load.trace_format,
        time_scale=load.time_scale,
        start_s=load.trace_start or 0.0,
        duration_s=load.trace_duration,
        limit=load.trace_limit,
        spread=load.trace_spread,
        slot_s=load.trace_slot,
        seed=seed,
    )


def stage_of(plan: LoadPlan, t0: float, wall_time: float) -> tuple[Stage | None, bool]:
    """The stage a request sent at ``wall_time`` belongs to, and whether it was in warm-up."""
    stage, in_stage = plan.stage_at(wall_time - t0)
    if stage is None:
        return None, False
    return stage, stage.in_warmup(in_stage)
