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

from collections.abc import Callable
from dataclasses import dataclass

from llm_locust.config.burst import BurstSpec
from llm_locust.config.demand import Demand, DemandKind
from llm_locust.config.jsontypes import JsonObject
from llm_locust.config.model import LoadConfig, LoadMode
from llm_locust.config.stage_kind import StageKind
from llm_locust.load.arrivals import parse_arrival
from llm_locust.load.search import SearchSpec, SearchStages
from llm_locust.load.sources import ArrivalSource, RateArrivals, TraceArrivals
from llm_locust.load.stages import StagePlan, parse_matrix, parse_ramp, parse_rate_ramp
from llm_locust.load.stepped import SteppedRates
from llm_locust.load.trace_reuse import with_sessions
from llm_locust.load.traces import Trace, TraceError, load_trace

__all__ = [
    "FOREVER",
    "OPEN_LOOP_LEAD",
    "LoadPlan",
    "LoadPlanError",
    "build_load_plan",
    "replay_span",
]

FOREVER = 10.0 * 365 * 24 * 3600  # "until stopped": long enough, and still a finite number
#: Open loop: the schedule starts this long after the test, so every worker's dispatcher
#: is spawned and waiting before the first arrival is due.
OPEN_LOOP_LEAD = 1.0


class LoadPlanError(ValueError):
    """A bad load-model option; the message names the flag."""


@dataclass(frozen=True)
class LoadPlan:
    """What load to apply, stage by stage. ``stages is None``: Locust's own ``-u/-r/-t``;
    ``arrivals`` set: open loop (the stages are ``rate`` stages). A capacity search
    (``search``) has :class:`~llm_locust.load.search.SearchStages`, which grow as the search
    decides (``runtime/search.py``), and for a rate search :class:`~llm_locust.load.stepped.SteppedRates`."""

    stages: StagePlan | None = None
    arrivals: ArrivalSource | None = None
    max_concurrency: int | None = None
    seed: int = 0
    burst: BurstSpec | None = None  # waves on top of the base load (load/bursts.py)
    search: SearchSpec | None = None

    @property
    def open_loop(self) -> bool:
        return self.arrivals is not None

    @property
    def schedule_end(self) -> float | None:
        """Where the staged schedule ends, seconds from ``t0`` (``-t`` for ``--request-rate``, a
        trace's span); ``None``: Locust's own options, or a search (its steps and stop go to the
        workers as they are decided)."""
        if self.stages is None or self.search is not None:
            return None
        return self.stages.total_s

    def describe(self) -> JsonObject:
        out: JsonObject = {"mode": "open" if self.open_loop else "closed"}
        if self.arrivals is not None:
            out.update(self.arrivals.describe())
        if self.max_concurrency:
            out["max_concurrency"] = self.max_concurrency
        if self.burst is not None:
            out["burst"] = {
                "every_s": self.burst.every_s,
                "size": self.burst.size,
                "start_s": self.burst.start_s,
            }
        if self.search is not None:
            spec = self.search
            out["search"] = {
                "kind": spec.kind,
                "min": spec.minimum,
                "max": spec.maximum,
                "precision": spec.precision,
            }
        return out


def build_load_plan(load: LoadConfig, seed: int = 0, thinking: bool = False) -> LoadPlan:
    """The plan for ``load`` (``seed``: ``--seed``; ``thinking``: closed-loop users pause between
    requests, ``--think-time``); raises :class:`LoadPlanError` with one line.

    Open loop: ``-t`` sets the schedule's length (the test ends when the schedule is done
    and the requests in flight have finished, so the last arrivals are measured like the
    first); without ``-t`` the schedule runs until the test is stopped.
    """
    try:
        return _build(load, seed, thinking)
    except LoadPlanError:
        raise
    except (ValueError, OSError, TraceError) as exc:
        message = str(exc).splitlines()[0]
        if isinstance(exc, TraceError) and not message.startswith("-"):
            message = f"--trace: {message}"
        raise LoadPlanError(message) from None


Stages = tuple[StagePlan, ArrivalSource | None]


def _ramp(load: LoadConfig, seed: int) -> Stages:
    return parse_ramp(list(load.ramp or ()), load.step_time, load.spawn_rate, load.warmup), None


def _matrix(load: LoadConfig, seed: int) -> Stages:
    assert load.matrix is not None
    stages = parse_matrix(load.matrix, load.step_time, load.spawn_rate, load.warmup)
    return stages, _rates(load, stages, seed) if stages[0].rate is not None else None


def _rate_ramp(load: LoadConfig, seed: int) -> Stages:
    stages = parse_rate_ramp(list(load.rate_ramp or ()), load.step_time, load.warmup)
    return stages, _rates(load, stages, seed)


def _request_rate(load: LoadConfig, seed: int) -> Stages:
    assert load.request_rate is not None
    stages = parse_rate_ramp([load.request_rate], load.run_time or FOREVER, load.warmup)
    return stages, _rates(load, stages, seed)


def _replay(load: LoadConfig, seed: int) -> Stages:
    trace, reuse = with_sessions(_trace(load, seed), load.trace_block_tokens)
    stages = parse_rate_ramp([len(trace.entries) / (span := replay_span(trace))], span, load.warmup)
    return stages, TraceArrivals(trace, reuse)


def replay_span(trace: Trace) -> float:
    """The replay's stage: the trace's last offset plus one mean gap between arrivals. A stage is
    ``[start, end)``, so one ending at the last offset left the last arrival outside it (and out of
    every statistic); with one more gap, ``n`` arrivals span ``n`` gaps and the stage's rate is the
    gaps' own, ``(n - 1) / last``."""
    n, last = len(trace.entries), trace.duration_s
    if n < 2 or last <= 0:
        return max(last, 1e-3)
    return last * n / (n - 1)


def _rates(load: LoadConfig, stages: StagePlan, seed: int) -> RateArrivals:
    return RateArrivals(parse_arrival(load.arrival, 1.0, load.burstiness), stages, seed)


#: The load model of each option (``LoadConfig.mode``); a new model is one entry.
MODELS: dict[LoadMode, Callable[[LoadConfig, int], Stages]] = {
    LoadMode.RAMP: _ramp,
    LoadMode.MATRIX: _matrix,
    LoadMode.RATE_RAMP: _rate_ramp,
    LoadMode.REQUEST_RATE: _request_rate,
    LoadMode.TRACE: _replay,
}


def search_demand(kind: StageKind, demand: Demand | None, thinking: bool) -> float | None:
    """``--demand`` as a level of a ``kind`` search, when it is in the search's unit: users (of a
    users demand; or of a concurrency demand when users do not think, each then holding one
    request in flight), or req/s of a rate demand; else ``None``."""
    if demand is None:
        return None
    if kind is StageKind.USERS and (
        demand.kind is DemandKind.USERS or (demand.kind is DemandKind.CONCURRENCY and not thinking)
    ):
        return demand.value
    return demand.value if kind is StageKind.RATE and demand.kind is DemandKind.RATE else None


def _search(load: LoadConfig, seed: int, thinking: bool = False) -> LoadPlan:
    assert load.search is not None
    minimum = load.search_min if load.search_min is not None else 1.0
    spec = SearchSpec(
        load.search,
        minimum,
        load.search_max,
        load.search_precision,
        load.search_max_steps,
        load.search_extensions,
        demand=search_demand(load.search, load.demand, thinking),
        settled_precision=load.search_settled_precision,
    )
    stages = SearchStages(spec, load.warmup, FOREVER)
    arrivals = (
        SteppedRates(parse_arrival(load.arrival, 1.0, load.burstiness), seed)
        if spec.kind is StageKind.RATE
        else None
    )
    return LoadPlan(stages, arrivals, load.max_concurrency, seed, burst=load.burst, search=spec)


def _build(load: LoadConfig, seed: int, thinking: bool = False) -> LoadPlan:
    if load.mode is LoadMode.SEARCH:
        return _search(load, seed, thinking)
    if load.mode is None:
        return LoadPlan(max_concurrency=load.max_concurrency, seed=seed, burst=load.burst)
    stages, arrivals = MODELS[load.mode](load, seed)
    return LoadPlan(stages, arrivals, load.max_concurrency, seed, burst=load.burst)


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
