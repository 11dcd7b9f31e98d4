"""Plans of ``llm-locust capacity`` that are predicted, not measured: ``predict_from: PLAN``.

A plan with ``predict_from: A`` (and its own ``replicas:`` or ``workload:`` changes) is answered
after plan A's search: the engine model is calibrated on the records of A's folder
(:func:`llm_locust.commands.calibrate.load_run`, :func:`llm_locust.results.calibrate.fit`; every search
step is a closed-loop level), then the SLO capacity of the changed plan is found by the same
search on that model in virtual time, with an interval from the model's bootstrap parameter
draws, each with its own workload seed (:func:`llm_locust.commands.predict.predict`). The model
is in deployment seconds (a simulator's speed-up is undone), so the prediction is too.

The result is the prediction's JSON (``kind: prediction``, ``capacity``, ``interval``, the
demand's ``verdict``) plus ``predict_from`` and the model file written beside it
(``DIR/<plan>/model.yaml``); :func:`llm_locust.results.plans.predicted_result` makes it a row
of the comparison, marked predicted.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from llm_locust.commands.calibrate import RunError, load_run
from llm_locust.commands.predict import LEVEL_LIMIT, LEVEL_REQUESTS, predict
from llm_locust.config.demand import DemandKind
from llm_locust.config.plans import Plan, PlanFile
from llm_locust.results.calibrate import CalibrationError, fit
from llm_locust.results.capacity_model import PlanResult
from llm_locust.results.predicted_plans import predicted_result
from llm_locust.results.prediction_model import Prediction
from llm_locust.results.search_model import SearchResult
from llm_locust.sim.predict import unsupported_lines

__all__ = ["DRAWS", "EXTRAPOLATION", "check_predictable", "predict_plan", "predicted_rows"]

#: Bootstrap parameter draws searched for a predicted plan's interval.
DRAWS = 10
VIRTUAL_SECONDS = 900.0
#: A predicted plan's search goes no higher than this many times the measured plan's highest level
#: (per replica).
EXTRAPOLATION = 4.0


def check_predictable(file: PlanFile) -> str | None:
    """Why the file's predicted plans cannot be predicted (one line), or ``None``."""
    if not any(p.predicted for p in file.plans):
        return None
    if file.demand.kind is DemandKind.RATE:
        return "predict_from: a rate demand needs an open-loop search, which a prediction does not run"
    if file.demand.kind is DemandKind.CONCURRENCY and (file.workload.think_time or file.demand.think):
        return "predict_from: a concurrency demand with thinking users: give the demand in users"
    bad = unsupported_lines(file.slo)
    if bad:
        return f"predict_from: a model judges request latencies only, not {', '.join(bad)}"
    for plan in file.plans:
        workload = _workload(file, plan)
        if plan.predicted and (workload["dataset"] or workload["prompt_tokens"]):
            return (
                f"plan {plan.name!r}: predict_from: a dataset or prompt_tokens workload cannot be predicted"
            )
    return None


def _workload(file: PlanFile, plan: Plan) -> dict[str, Any]:
    base = file.workload.model_dump()
    if plan.workload is not None:
        base.update(plan.workload.model_dump(exclude_unset=True))
    return base


def predict_plan(file: PlanFile, plan: Plan, root: Path) -> Prediction:
    """The prediction of ``plan`` from its measured plan's folder; ``ValueError`` (one line) when
    that folder cannot be calibrated from."""
    assert plan.predict_from is not None
    source = root / plan.predict_from
    try:
        records = load_run(source, 0)
        model = fit(records, [str(source)])
    except (RunError, CalibrationError) as e:
        raise ValueError(f"cannot calibrate on {plan.predict_from}: {e}") from None
    folder = root / plan.name
    folder.mkdir(parents=True, exist_ok=True)
    model_file = folder / "model.yaml"
    model.dump(model_file)
    model = type(model)(**{**model.__dict__, "source": str(model_file)})
    w = _workload(file, plan)
    # no further than 4 times the highest level measured, per replica: a model says little far
    # beyond the loads it was fitted on (and a level of thousands of users takes long to run)
    ceiling = EXTRAPOLATION * max(model.levels, default=1.0) * plan.replicas
    top = ceiling if file.search.max is None else min(file.search.max, ceiling)
    args = argparse.Namespace(
        workload=w["profile"] or "chat", input_tokens=w["input_tokens"], output_tokens=w["output_tokens"],
        max_tokens=w["max_tokens"], think_time=w["think_time"], replicas=plan.replicas,
        balance=file.search.balance, balance_scope=file.search.balance_scope,
        search_min=file.search.min, search_max=top, search_precision=file.search.precision,
        search_max_steps=file.search.max_steps, draws=DRAWS, virtual_seconds=VIRTUAL_SECONDS,
        level_requests=LEVEL_REQUESTS, level_limit=LEVEL_LIMIT, seed=w["seed"] or 0,
    )  # fmt: skip
    return predict(model, file.slo, file.demand, args)


def predicted_rows(
    file: PlanFile, root: Path, searches: Mapping[str, SearchResult], errors: dict[str, str],
    say: Callable[[str, str], None],
) -> list[PlanResult]:  # fmt: skip
    """The comparison's rows of the plans with ``predict_from``, once their measured plan's search
    is done; one that cannot be predicted gets an error line in ``errors`` instead."""
    rows = []
    for plan in file.plans:
        source = plan.predict_from
        if source is None:
            continue
        if source not in searches:
            errors[plan.name] = f"not predicted: {plan.predict_from} was not measured"
            continue
        if searches[source].withheld:
            errors[plan.name] = (
                f"not predicted: {plan.predict_from}'s answer was withheld (its steps were not valid "
                "measurements, so its records calibrate nothing)"
            )
            continue
        try:
            prediction = predict_plan(file, plan, root)
        except ValueError as exc:
            errors[plan.name] = f"not predicted: {exc}"
            continue
        rows.append(predicted_result(plan, file.demand, prediction))
        say(plan.name, rows[-1].verdict)
    return rows
