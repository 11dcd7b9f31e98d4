"""The plan comparison, typed: ``capacity.json`` (:func:`llm_locust.results.plans.compare_plans`).

- :class:`PlanResult`: one plan's row: its deployment (endpoints, GPUs, $/hour), its searched
  steps in deployment time (:class:`~llm_locust.results.search_model.JudgedStep`), the capacity in
  the demand's unit, the steps that decided it and whether each was valid, the cost terms, the
  verdict against the demand; ``predicted``: a capacity predicted from an engine model calibrated
  on a measured plan instead of measured (:class:`Predicted`, absent on a measured plan; such
  rows are listed under ``predicted_plans``, never among ``plans``).
- :class:`CapacityReport`: the demand, the SLO, every plan, the cheapest that meets the demand
  (or why none does, or why the answer is withheld), the scaling pairs and the time scale
  (:class:`TimeScale`: one clock per file).

Serialized with the keys ``capacity.json`` has always had, plus ``schema_version``; read
tolerantly (see :mod:`llm_locust.results.search_model`). The JSON Schema
(``docs/schemas/capacity.v1.json``) is generated from these models.

Pure module: no Locust, no network.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import Field, JsonValue, ValidationError

from llm_locust.config.balance import BalancePolicy, BalanceScope
from llm_locust.config.stage_kind import StageKind
from llm_locust.load.search import StopReason, Verdict
from llm_locust.results.search_model import Decider, JudgedStep, Model

__all__ = [
    "CAPACITY_SCHEMA_VERSION",
    "CapacityFileError",
    "CapacityReport",
    "Clock",
    "DemandUnit",
    "PlanResult",
    "PlanSearch",
    "Predicted",
    "PredictedStep",
    "PredictedVerdict",
    "Rejudged",
    "Scaling",
    "ScalingDimension",
    "SimulatorClock",
    "TimeScale",
    "load_capacity",
]

#: ``capacity.json``'s schema version (``docs/schemas/capacity.v<N>.json``).
CAPACITY_SCHEMA_VERSION: Literal[1] = 1


class DemandUnit(StrEnum):
    """The unit a capacity is measured in: the demand's (:class:`llm_locust.config.demand.Demand`)."""

    USERS = "users"
    CONCURRENCY = "concurrency"
    RATE = "rate"


class Clock(StrEnum):
    DEPLOYMENT = "deployment"


class ScalingDimension(StrEnum):
    REPLICAS = "replicas"
    GPUS_PER_REPLICA = "gpus_per_replica"


class PlanSearch(Model):
    """The plan's search in brief, in deployment time: its kind, capacity, why it stopped."""

    kind: StageKind | None = None
    capacity: float | None = None
    stop_reason: StopReason | None = None
    stop: str | None = None
    settled_precision: float | None = None  # the precision once the demand was shown not met


class SimulatorClock(Model):
    """How well the plan's simulators kept their schedule (``llm_sim_schedule_*``), per endpoint."""

    endpoints: dict[str, dict[str, float] | None] = Field(default_factory=dict)
    fell_behind: bool = False


class PredictedVerdict(StrEnum):
    """A predicted capacity's interval against the demand."""

    MEETS = "meets"  # the whole interval at or above the demand
    MISSES = "misses"  # the whole interval below it
    UNCERTAIN = "uncertain"


class PredictedStep(Model):
    """A step of the search run on the engine model (virtual time), and the requests it judged."""

    level: float
    verdict: Verdict
    requests: int | None = None


class Predicted(Model):
    """A capacity predicted from an engine model calibrated on a measured plan (``predict_from:``),
    not measured: the plan it came from, the interval over the model's parameter draws, the verdict."""

    from_: str = Field(alias="from")
    interval: list[float] = Field(default_factory=list)
    interval_source: str = ""
    verdict: PredictedVerdict
    workload: dict[str, JsonValue] = Field(default_factory=dict)
    model_file: str | None = None
    runs: list[str] = Field(default_factory=list)
    not_identified: list[str] = Field(default_factory=list)
    steps: list[PredictedStep] = Field(default_factory=list)
    virtual_seconds_per_step: float | None = None
    balance: BalancePolicy | None = None  # the balancer the replicas stood behind (the search's)
    balance_scope: BalanceScope | None = None


class PlanResult(Model):
    """One plan of the comparison (every number in deployment time)."""

    name: str
    endpoints: list[str] = Field(default_factory=list)
    replicas: int = 1
    gpus: int
    gpus_per_replica: int = 1
    gpu: str | None = None
    model: str | None = None
    gpu_hour_cost: float
    dollars_per_hour: float
    time_scale: float = 1.0
    search: PlanSearch = PlanSearch()
    withheld: str | None = None  # the search withheld its answer (a step invalid twice): why
    decided_by: list[Decider] = Field(default_factory=list)
    decided_by_valid_steps: bool = False
    invalid_steps: int = 0
    shown_short: bool = False  # a valid step at or below the demand failed
    by_level: bool = False  # the search ran in the demand's unit: a step's load is its level
    steps: list[JudgedStep] = Field(default_factory=list)
    capacity_step: JudgedStep | None = None
    upper_step: JudgedStep | None = None
    #: the search stopped short of the demand at its coarser settled precision: the capacity is
    #: the bracket ``[capacity, capacity_below)``, not a number to the search's precision
    capacity_below: float | None = None
    capacity: float | None = None
    capacity_unit: DemandUnit
    demand: float
    headroom: float | None = None
    meets: bool = False
    cost_per_million_at_demand: float | None = None
    output_throughput_at_demand: float | None = None
    request_throughput: float | None = None
    output_throughput: float | None = None
    goodput_output_tokens_per_s: float | None = None
    mean_in_flight: float | None = None
    output_throughput_per_gpu: float | None = None
    goodput_per_gpu: float | None = None
    tokens_per_user: float | None = None
    cost_per_million_at_capacity: float | None = None
    verdict: str = ""
    folder: str | None = None  # the plan's results folder (set by llm-locust capacity)
    simulator_clock: SimulatorClock | None = None
    unmeasured: str | None = None  # re-judged: what the levels measured cannot tell
    predicted: Predicted | None = None


class Scaling(Model):
    """Two plans that differ only in replicas or GPUs per replica, and how capacity scaled."""

    plans: tuple[str, str]
    differs_in: ScalingDimension
    resource_ratio: float
    capacity_ratio: float  # from the plans' capacities (lower ends when bracketed)
    efficiency: float
    #: when either plan's capacity is only a bracket (``capacity_below``): the ratio and the
    #: efficiency from both ends of the brackets, lowest first (``None``: both capacities settled)
    capacity_ratio_range: tuple[float, float] | None = None
    efficiency_range: tuple[float, float] | None = None

    def ratio_text(self) -> str:
        """``capacity x2.21: 110% efficiency``, or the range when a capacity is only a bracket."""
        if self.capacity_ratio_range is None or self.efficiency_range is None:
            return f"capacity x{self.capacity_ratio:.2f}: {self.efficiency:.0%} efficiency"
        (rlo, rhi), (elo, ehi) = self.capacity_ratio_range, self.efficiency_range
        return (
            f"capacity x{rlo:.2f} to x{rhi:.2f}: {elo:.0%} to {ehi:.0%} efficiency "
            "(a capacity is only bracketed)"
        )


class TimeScale(Model):
    """Which clock the file's numbers are in, each plan's speed-up, and the note saying so."""

    clock: Clock = Clock.DEPLOYMENT
    speedups: dict[str, float] = Field(default_factory=dict)
    note: str = ""


class Rejudged(Model):
    """``llm-locust rejudge``: judged again from the records, no request sent."""

    from_: str = Field(alias="from")
    slo: list[str] = Field(default_factory=list)
    demand: dict[str, str | int | float] | None = None
    note: str = ""
    original_slo: list[str] | None = None
    original_demand: dict[str, str | int | float] | None = None


class CapacityReport(Model):
    """The content of ``capacity.json``."""

    schema_version: Literal[1] = CAPACITY_SCHEMA_VERSION
    demand: dict[str, str | int | float]
    demand_text: str
    slo: list[str]
    plans: list[PlanResult] = Field(default_factory=list)
    predicted_plans: list[PlanResult] = Field(default_factory=list)  # predict_from: never the answer
    cheapest: str | None = None
    withheld: bool = False  # a plan as cheap as the answer or cheaper has none: no answer
    answer: str
    scaling: list[Scaling] = Field(default_factory=list)
    time_scale: TimeScale = TimeScale()
    not_measured: dict[str, str] = Field(default_factory=dict)
    rejudged: Rejudged | None = None

    def model_post_init(self, context: object, /) -> None:
        self.model_fields_set.add("schema_version")  # always written, even when defaulted

    def plan(self, name: str) -> PlanResult:
        return next(p for p in self.plans if p.name == name)


class CapacityFileError(ValueError):
    """A ``capacity.json`` that cannot be read as a comparison (one line, naming the file)."""


def load_capacity(path: Path) -> CapacityReport:
    """``capacity.json`` at ``path`` as a :class:`CapacityReport` (an older file: its missing keys
    take their defaults); raises :class:`CapacityFileError`, one line naming the file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CapacityFileError(f"{path.parent}: no {path.name}") from None
    except (OSError, ValueError) as exc:
        raise CapacityFileError(f"{path}: cannot read ({exc})") from None
    if not isinstance(data, dict):
        raise CapacityFileError(f"{path}: not a capacity comparison (not a JSON object)")
    try:
        return CapacityReport.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the file"
        version = data.get("schema_version")
        newer = f" (schema_version {version}: this llm-locust reads 1)" if version not in (None, 1) else ""
        raise CapacityFileError(
            f"{path}: not a capacity comparison this version reads{newer}: {where}: {first['msg']}"
        ) from None
