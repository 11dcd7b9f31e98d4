"""The load model of a run, from its options: closed-loop stages, open-loop rates, or a trace.

Every process (local, master, each worker) builds the same :class:`LoadPlan` from the same
options; only the plan's start time ``t0`` (wall clock) is decided by the process that
runs the shape and shared with the workers. Everything else, which stage a request
belongs to, whether it falls in warm-up, when each open-loop arrival is due, follows
from ``(plan, t0)`` and needs no further coordination.

Pure module: no Locust, no network.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

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
    parse_duration,
    parse_matrix,
    parse_ramp,
    parse_rate_ramp,
    stage_at,
)
from llm_locust.load.traces import Trace, load_trace

__all__ = [
    "FOREVER",
    "OPEN_LOOP_LEAD",
    "LoadPlan",
    "LoadPlanError",
    "build_load_plan",
    "stage_of",
    "take_run_time",
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


def take_run_time(options: Any) -> None:
    """Open loop: ``-t`` sets the schedule's length instead of killing the test at that time.

    The shape then ends the test when the schedule is done and the requests still in
    flight have finished, so the last arrivals are measured like the first.
    """
    open_loop = (
        getattr(options, "request_rate", None)
        or getattr(options, "trace", None)
        or getattr(options, "rate_ramp", None)
    )
    if open_loop and getattr(options, "run_time", None):
        options.open_loop_run_time, options.run_time = options.run_time, None


_FROM_OPTIONS: Any = object()


def build_load_plan(options: Any, spawn_rate: float | None = _FROM_OPTIONS) -> LoadPlan:
    """The plan for parsed options; raises :class:`LoadPlanError` with a one-line message.

    ``spawn_rate`` is the one the user gave (``None``: none, so each stage reaches its level
    in about a second). By default it is read from ``options.spawn_rate``, which is right
    only until Locust fills in its own default of 1 for a headless start (after ``init``):
    later callers pass what they recorded at ``init``.
    """
    chosen = [flag for flag, name in _MODES if getattr(options, name, None)]
    if len(chosen) > 1:
        raise LoadPlanError(f"{chosen[0]} and {chosen[1]} cannot be combined: choose one load model")
    if spawn_rate is _FROM_OPTIONS:
        spawn_rate = getattr(options, "spawn_rate", None)
    try:
        return _build(options, chosen[0] if chosen else None, spawn_rate)
    except LoadPlanError:
        raise
    except (ValueError, OSError) as exc:
        raise LoadPlanError(str(exc).splitlines()[0]) from None


_MODES = (
    ("--ramp", "ramp"),
    ("--matrix", "matrix"),
    ("--request-rate", "request_rate"),
    ("--rate-ramp", "rate_ramp"),
    ("--trace", "trace"),
)


def _build(options: Any, mode: str | None, spawn_rate: float | None) -> LoadPlan:
    step = options.step_time
    warmup = options.warmup
    seed = int(getattr(options, "seed", 0) or 0)
    plan = LoadPlan(max_concurrency=options.max_concurrency, seed=seed)
    if mode == "--ramp":
        plan.stages = parse_ramp(options.ramp, step, spawn_rate, warmup)
    elif mode == "--matrix":
        plan.stages = parse_matrix(options.matrix, step, spawn_rate, warmup)
    elif mode in ("--request-rate", "--rate-ramp"):
        plan.stages = _rate_stages(options, mode, step, warmup)
    elif mode == "--trace":
        if getattr(options, "dataset", None):
            raise LoadPlanError(
                "--trace takes its lengths from the trace: it cannot be combined with --dataset"
            )
        plan.trace = _trace(options, seed)
        duration = max(plan.trace.duration_s, 1e-3)
        plan.stages = parse_rate_ramp([len(plan.trace.entries) / duration], duration, warmup)
    if plan.stages is not None and plan.stages[0].kind == "rate" and plan.trace is None:
        plan.arrival = parse_arrival(options.arrival, 1.0, options.burstiness)
    elif options.max_concurrency and not plan.open_loop:
        raise LoadPlanError(
            "--max-concurrency applies to open-loop modes (--request-rate, --rate-ramp, --trace)"
        )
    return plan


def _rate_stages(options: Any, mode: str, step: Any, warmup: Any) -> StagePlan:
    if mode == "--rate-ramp":
        return parse_rate_ramp(options.rate_ramp, step, warmup)
    rate = float(options.request_rate)
    if not (math.isfinite(rate) and rate > 0):
        raise LoadPlanError(f"--request-rate: must be a positive number of requests per second, got {rate}")
    run_time = getattr(options, "open_loop_run_time", None) or getattr(options, "run_time", None)
    duration = float(run_time) if run_time else FOREVER
    return parse_rate_ramp([rate], duration, warmup)


def _trace(options: Any, seed: int) -> Trace:
    def seconds(text: Any, flag: str) -> float | None:
        return None if text in (None, "") else parse_duration(text, flag)

    return load_trace(
        options.trace,
        options.trace_format,
        time_scale=options.time_scale,
        start_s=seconds(options.trace_start, "--trace-start") or 0.0,
        duration_s=seconds(options.trace_duration, "--trace-duration"),
        limit=options.trace_limit,
        spread=options.trace_spread,
        slot_s=options.trace_slot,
        seed=seed,
    )


def stage_of(plan: LoadPlan, t0: float, wall_time: float) -> tuple[Stage | None, bool]:
    """The stage a request sent at ``wall_time`` belongs to, and whether it was in warm-up."""
    stage, in_stage = plan.stage_at(wall_time - t0)
    if stage is None:
        return None, False
    return stage, stage.in_warmup(in_stage)
