"""Predicted plans beside the measured ones: their rows of ``capacity.json`` and of the table.

A plan with ``predict_from: PLAN`` (:mod:`llm_locust.commands.capacity.predicted`) is answered by the engine
model calibrated on PLAN's search, not by a measurement. Its row has the keys of a measured
plan's (:func:`llm_locust.results.plans.plan_result`; numbers that only a measured step gives,
throughput and cost at capacity, are ``None``) plus a ``predicted`` block: the plan it was
predicted from, the capacity's ``interval`` (the same search on the model's bootstrap parameter
draws), the demand's verdict (``meets`` only when the whole interval is at or above the demand,
``misses`` when it is wholly below, else ``uncertain``), the model file and the search steps (in
virtual time). Predicted rows are listed under ``predicted_plans``, never among ``plans``: the
cheapest plan, scaling efficiency and the answer are decided by measurements only.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from collections.abc import Sequence

from llm_locust.config.demand import Demand
from llm_locust.config.plans import Plan
from llm_locust.results.capacity import amount
from llm_locust.results.capacity_model import (
    DemandUnit,
    PlanResult,
    Predicted,
    PredictedVerdict,
)
from llm_locust.results.cost import headroom
from llm_locust.results.plans import plan_fields
from llm_locust.results.prediction_model import Prediction

__all__ = ["PREDICTED_MARK", "predicted_lines", "predicted_result"]

#: How the table marks a predicted row (beside its name) and its capacity.
PREDICTED_MARK = "~"


def predicted_result(plan: Plan, demand: Demand, prediction: Prediction) -> PlanResult:
    """The comparison's row of a predicted plan (see the module's docstring)."""
    assert plan.predict_from is not None
    capacity = prediction.capacity or None
    low, high = prediction.interval
    row = PlanResult(
        **plan_fields(plan),
        time_scale=1.0,
        capacity=capacity,
        capacity_unit=DemandUnit(demand.kind),
        demand=demand.value,
        headroom=None if capacity is None else headroom(capacity, demand.value),
        meets=prediction.verdict is PredictedVerdict.MEETS,
        request_throughput=None,
        output_throughput=None,
        output_throughput_per_gpu=None,
        cost_per_million_at_capacity=None,
        cost_per_million_at_demand=None,
        predicted=Predicted(
            **{"from": plan.predict_from},  # a keyword: by its alias
            interval=[low, high],
            interval_source=prediction.interval_source,
            verdict=prediction.verdict,
            workload=prediction.workload,
            model_file=prediction.model_file,
            runs=prediction.runs,
            not_identified=prediction.not_identified,
            steps=prediction.steps,
            virtual_seconds_per_step=prediction.virtual_seconds_per_step,
            balance=prediction.balance,
            balance_scope=prediction.balance_scope,
        ),
    )
    row.verdict = _sentence(row, demand)
    return row


#: How a predicted verdict reads in the row's sentence.
_VERBS = {
    PredictedVerdict.MEETS: "would meet",
    PredictedVerdict.MISSES: "would miss",
    PredictedVerdict.UNCERTAIN: "may or may not meet",
}


def _sentence(row: PlanResult, demand: Demand) -> str:
    p = row.predicted
    assert p is not None
    low, high = p.interval
    unit = demand.kind
    cap = "no level" if row.capacity is None else amount(unit, row.capacity)
    return (
        f"PREDICTED from {p.from_} (not measured): {_VERBS[p.verdict]} {demand.text()}: capacity {cap} "
        f"(range {amount(unit, low)}..{amount(unit, high)} over the model's parameter draws)"
    )


def predicted_lines(rows: Sequence[PlanResult]) -> list[str]:
    """The table's block of predicted plans: one row each, marked, with its interval."""
    if not rows:
        return []
    lines = [
        f"predicted, not measured ({PREDICTED_MARK}): the engine model calibrated on the plan named",
        f"{'plan':<20}{'from':<18}{'replicas':>9}{'GPUs':>6}{'capacity':>10}{'range':>14}{'$/hour':>9}",
    ]
    for r in rows:
        p = r.predicted
        assert p is not None
        low, high = p.interval
        cap = "-" if r.capacity is None else f"{r.capacity:g}"
        lines.append(
            f"{PREDICTED_MARK + r.name[:18]:<20}{p.from_[:17]:<18}{r.replicas:>9}{r.gpus:>6}"
            f"{cap:>10}{f'{low:g}..{high:g}':>14}{r.dollars_per_hour:>9.2f}"
        )
    lines += [f"{PREDICTED_MARK}{r.name}: {r.verdict}" for r in rows]
    return lines
