"""The decision page's data: ``capacity.json`` and its plan folders read into one view model.

``llm-locust capacity`` writes ``capacity.json`` (:func:`llm_locust.results.plans.compare_plans`,
typed by :class:`llm_locust.results.capacity_model.CapacityReport`): the demand, the SLO, every
plan's searched steps (in deployment time), its capacity, cost and verdict, the steps that decided
it, the cheapest plan that meets the demand and the scaling pairs. :func:`load_decision` reads it
through that model (an older file: its missing keys defaulted; a file that is not one: one
:class:`DecisionError` line), and each plan's ``summary.json`` for what ``capacity.json`` does not
carry, and gives :class:`Decision`: every number the page shows, each step with where it came
from (plan folder, stage).

A step's TTFT and E2E P95 and their 95 % intervals are the step's SLO lines as judged (already in
deployment time); a P95 that is not an SLO line is the plan summary's stage P95 (wall clock,
times the plan's time scale), shown without an interval.

Pure module: files in, no Locust, no network.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, ValidationError

from llm_locust.config.demand import DemandKind, parse_demand
from llm_locust.load.search import Verdict
from llm_locust.results.capacity import measure
from llm_locust.results.capacity_model import (
    CapacityFileError,
    CapacityReport,
    PlanResult,
    Rejudged,
    Scaling,
    load_capacity,
)
from llm_locust.results.cost import cost_per_million, per_gpu, tokens_per_user
from llm_locust.results.search_model import JudgedStep
from llm_locust.results.summary_model import RunSummary, StageRow

if TYPE_CHECKING:
    from llm_locust.config.demand import Demand

__all__ = [
    "CAPACITY_FILE",
    "Decision",
    "DecisionError",
    "Latency",
    "PlanView",
    "Scaling",
    "StepView",
    "Verdict",
    "decision_from",
    "is_capacity_folder",
    "load_decision",
]

CAPACITY_FILE = "capacity.json"


class DecisionError(ValueError):
    """A capacity folder the page cannot use (one line, naming the file)."""


class _Loose(BaseModel):
    """A view of the page, built from the typed ``capacity.json`` (never read from a file)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Latency(_Loose):
    """A step's P95 of one latency, in deployment time, with its 95 % interval when it is an SLO line."""

    p95_s: float
    low_s: float | None = None
    high_s: float | None = None
    threshold_s: float | None = None
    verdict: Verdict | None = None  # this SLO line's own verdict at the step (None: not a line)
    source: str


class StepView(_Loose):
    """A judged step (:class:`JudgedStep`, in deployment time) and what the page derives of it."""

    step: JudgedStep
    load: float | None = None  # in the demand's unit
    tokens_per_user: float | None = None
    output_per_gpu: float | None = None
    cost_per_million: float | None = None
    ttft: Latency | None = None
    e2e: Latency | None = None
    source: str


class PlanView(_Loose):
    """A plan of the comparison (:class:`PlanResult`) and what the page derives of it: the folder
    its files are in, the bound in the demand's unit, its steps in level order."""

    result: PlanResult
    folder: str
    upper: float | None = None  # the lowest step not shown to pass, in the demand's unit
    steps: list[StepView]

    @property
    def upper_verdict(self) -> Verdict | None:
        upper = self.result.upper_step
        return None if upper is None else upper.verdict

    @property
    def capacity_index(self) -> int | None:
        best = self.result.capacity_step
        return None if best is None else best.index

    @property
    def upper_index(self) -> int | None:
        upper = self.result.upper_step
        return None if upper is None else upper.index

    @property
    def simulator_fell_behind(self) -> bool:
        clock = self.result.simulator_clock
        return clock is not None and clock.fell_behind


class PredictedView(_Loose):
    """A plan with ``predict_from``: predicted by the engine model calibrated on a measured plan
    (``capacity.json``'s ``predicted_plans``, :mod:`llm_locust.results.predicted_plans`)."""

    name: str
    from_plan: str
    replicas: int
    gpus: int
    dollars_per_hour: float
    capacity: float | None = None
    low: float
    high: float
    headroom: float | None = None
    outcome: str  # meets, misses, uncertain (over the whole interval)
    verdict: str
    model_file: str = ""

    @classmethod
    def of(cls, row: PlanResult) -> PredictedView:
        p = row.predicted
        if p is None or len(p.interval) != 2:
            raise ValueError(f"predicted plan {row.name}: no predicted block with an interval")
        return cls(
            name=row.name, from_plan=p.from_, replicas=row.replicas, gpus=row.gpus,
            dollars_per_hour=row.dollars_per_hour, capacity=row.capacity, low=p.interval[0],
            high=p.interval[1], headroom=row.headroom, outcome=p.verdict.value, verdict=row.verdict,
            model_file=p.model_file or "",
        )  # fmt: skip


class Decision(_Loose):
    directory: str
    demand_kind: DemandKind
    demand: float
    demand_text: str
    slo: list[str]
    answer: str
    cheapest: str | None = None
    plans: list[PlanView]
    scaling: list[Scaling] = []
    not_measured: dict[str, str] = {}
    withheld: bool = False  # the comparison's answer withheld (a plan that might be the answer has none)
    rejudged: Rejudged | None = None  # llm-locust rejudge: the SLO and demand, the folder read
    predicted: list[PredictedView] = []  # predict_from plans: not measured, never the answer

    @property
    def time_scales(self) -> list[float]:
        return sorted({p.result.time_scale for p in self.plans if p.result.time_scale != 1})

    def plan(self, name: str) -> PlanView:
        return next(p for p in self.plans if p.result.name == name)


def is_capacity_folder(directory: str | Path) -> bool:
    return (Path(directory) / CAPACITY_FILE).is_file()


def _latency(step: JudgedStep, stage: StageRow | None, metric: str, k: float) -> Latency | None:
    """``metric`` (ttft or e2e) P95 of a step: its SLO line when it has one, else the stage's P95."""
    term = next((t for t in step.terms if t.name == f"{metric}_p95"), None)
    if term is not None and term.value is not None:
        low, high = [*term.interval, None, None][:2]
        return Latency(
            p95_s=term.value,
            low_s=low,
            high_s=high,
            threshold_s=term.threshold,
            verdict=term.verdict,
            source=f"SLO line {metric}_p95 as judged (95 % interval: order statistics)",
        )
    value = None if stage is None else stage.ms("p95", "e2el" if metric == "e2e" else "ttft")
    if value is None:
        return None
    scaled = f" x{k:g}" if k != 1 else ""
    return Latency(
        p95_s=value / 1000.0 * k, source=f"summary.json stage P95{scaled} (not an SLO line: no interval)"
    )


def _load(demand: Demand, plan: PlanResult, step: JudgedStep) -> float | None:
    """A step's load in the demand's unit (:func:`llm_locust.results.capacity.measure`)."""
    return measure(demand, step, plan.by_level)


def _step(plan: PlanResult, step: JudgedStep, stages: dict[int, StageRow], demand: Demand) -> StepView:
    k = plan.time_scale or 1.0
    tpot, out = step.median_tpot_ms, step.output_throughput
    folder_name = Path(plan.folder or plan.name).name
    return StepView(
        step=step,
        load=_load(demand, plan, step),
        tokens_per_user=tokens_per_user(None if not tpot else tpot / 1000.0),
        output_per_gpu=per_gpu(out, plan.gpus),
        cost_per_million=cost_per_million(plan.gpu_hour_cost, plan.gpus, out),
        ttft=_latency(step, stages.get(step.index), "ttft", k),
        e2e=_latency(step, stages.get(step.index), "e2e", k),
        source=f"{folder_name}/summary.json stage {step.index} ({step.label})",
    )


def _stages(folder: Path) -> dict[int, StageRow]:
    """The plan summary's stages by index (none when the folder is not at hand or its summary
    does not read as one)."""
    try:
        summary = RunSummary.model_validate_json((folder / "summary.json").read_bytes())
    except (OSError, ValidationError):
        return {}
    return {s.index: s for s in summary.stages or ()}


def _plan(root: Path, plan: PlanResult, demand: Demand) -> PlanView:
    folder = Path(plan.folder or plan.name)
    if not folder.is_dir():  # a capacity folder moved or copied: its plans are beside capacity.json
        folder = root / plan.name
    stages = _stages(folder)
    steps = sorted(
        (_step(plan, s, stages, demand) for s in plan.steps), key=lambda s: (s.step.level, s.step.index)
    )
    upper = plan.upper_step
    return PlanView(
        result=plan,
        folder=str(folder),
        upper=None if upper is None else _load(demand, plan, upper),
        steps=steps,
    )


def decision_from(report: CapacityReport, directory: str | Path) -> Decision:
    """The page's model of a ``capacity.json`` content (``directory``: where its plan folders are)."""
    root = Path(directory)
    try:
        demand = parse_demand(report.demand)
    except ValueError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DecisionError(f"{root / CAPACITY_FILE}: not a capacity comparison ({first})") from None
    return Decision(
        directory=str(root),
        demand_kind=demand.kind,
        demand=demand.value,
        demand_text=report.demand_text or demand.text(),
        slo=list(report.slo),
        answer=report.answer,
        cheapest=report.cheapest,
        plans=[_plan(root, p, demand) for p in report.plans],
        scaling=list(report.scaling),
        not_measured=dict(report.not_measured),
        withheld=report.withheld,
        rejudged=report.rejudged,
        predicted=[PredictedView.of(r) for r in report.predicted_plans],
    )


def load_decision(directory: str | Path) -> Decision:
    """Read ``DIR/capacity.json`` and its plan folders; raises :class:`DecisionError`."""
    root = Path(directory)
    try:
        report = load_capacity(root / CAPACITY_FILE)
    except CapacityFileError as exc:
        raise DecisionError(str(exc)) from None
    return decision_from(report, root)
