"""Judge a finished run or capacity comparison again under another SLO or demand, without load.

Every recorded stage and search step is judged again from ``requests.jsonl`` over the window it
was judged on (:func:`llm_locust.results.rebuild.rebuild` with the new SLO: the same code as
``summarize DIR``), so the original SLO and demand give back the original numbers exactly. The
levels measured are the ones the run chose under its own SLO; a level it never measured cannot
be judged, and is named: "at least 21.7 concurrent (users=22): no step above users=22 was
measured". A capacity comparison (``capacity.json``) is compared again
(:func:`llm_locust.results.plans.compare_plans`) with each sped-up simulator's SLO divided by its
time scale, as ``llm-locust capacity`` ran it.

Nothing is written into the folder read; nothing is sent anywhere.
Pure module: files in, no Locust, no network.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llm_locust.config.demand import Demand, DemandKind, parse_demand
from llm_locust.config.plans import Plan, PlanFile
from llm_locust.config.slo import SloSpec, parse_slo, scaled_slo
from llm_locust.results.capacity import measure
from llm_locust.results.capacity_model import (
    CapacityFileError,
    CapacityReport,
    PlanResult,
    Rejudged,
    load_capacity,
)
from llm_locust.results.plans import compare_plans
from llm_locust.results.rebuild import RebuildError, rebuild
from llm_locust.results.search_model import SearchResult
from llm_locust.results.summary_model import RunSummary

__all__ = ["CAPACITY_FILE", "RejudgeError", "rejudge_capacity", "rejudge_run", "unmeasured"]

CAPACITY_FILE = "capacity.json"


class RejudgeError(ValueError):
    """A folder that cannot be judged again (one line, naming it)."""


def _unit(demand: Demand) -> str:
    return {DemandKind.CONCURRENCY: "concurrent", DemandKind.RATE: "req/s"}.get(demand.kind, "users")


def unmeasured(search: SearchResult, demand: Demand | None) -> str | None:
    """What the measured levels cannot tell under this SLO: a capacity above the highest step
    measured, or below the lowest; ``None`` when a failure above the capacity bounds it."""
    steps = [s for s in search.steps if s.valid]
    if not steps:
        return None
    best, upper = search.highest_pass, search.upper
    top = max(steps, key=lambda s: s.level)
    if best is not None and upper is None:
        at = None if demand is None else measure(demand, best)
        shown = best.label if at is None or demand is None else f"{at:.3g} {_unit(demand)} ({best.label})"
        return f"at least {shown}: no step above {top.label} was measured"
    low = min(steps, key=lambda s: s.level)
    if best is None and upper is not None and upper.level == low.level:
        return f"below {low.label}: no step below {low.label} was measured"
    return None


def _summary(folder: Path, slo: SloSpec, demand: Demand | None) -> RunSummary:
    try:
        return rebuild(folder, write=False, slo=slo, demand=demand)
    except RebuildError as exc:
        raise RejudgeError(str(exc)) from None
    except (OSError, ValueError, KeyError) as exc:
        raise RejudgeError(f"{folder}: cannot be judged again ({type(exc).__name__}: {exc})") from None


def _note(slo: SloSpec, demand: Demand | None, source: Path) -> dict[str, Any]:
    return {
        "from": str(source),
        "slo": slo.to_json(),
        "demand": None if demand is None else demand.to_json(),
        "note": "judged again from requests.jsonl, no request sent; the levels measured are the ones the "
        "run chose under its own SLO",
    }


def rejudge_run(directory: str | Path, slo: SloSpec, demand: Demand | None = None) -> RunSummary:
    """A single run's summary judged again (its SLO as given: the run's own clock)."""
    folder = Path(directory)
    summary = _summary(folder, slo, demand)
    note = _note(slo, demand, folder)
    if summary.search:
        note["unmeasured"] = unmeasured(summary.search, demand)
    summary.rejudged = note
    return summary


def _read_capacity(root: Path) -> CapacityReport:
    try:
        return load_capacity(root / CAPACITY_FILE)
    except CapacityFileError as exc:
        raise RejudgeError(str(exc)) from None


def _plan(result: PlanResult) -> Plan:
    keys = ("name", "endpoints", "gpus", "gpu_hour_cost", "gpu", "model")
    return Plan(**{k: getattr(result, k) for k in keys if getattr(result, k) is not None})


def rejudge_capacity(
    directory: str | Path, slo: SloSpec, demand: Demand | None = None
) -> tuple[CapacityReport, dict[str, RunSummary]]:
    """``capacity.json`` of the capacity folder ``directory`` judged again, and each plan's
    summary judged again (by plan name). The plans' ``folder`` keys still name the folders read."""
    root = Path(directory)
    report = _read_capacity(root)
    try:
        want = demand or parse_demand(report.demand)
        plans = [_plan(p) for p in report.plans]
        file = PlanFile(demand=want, slo=slo, plans=tuple(plans))
    except (KeyError, TypeError, ValueError) as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise RejudgeError(f"{root / CAPACITY_FILE}: cannot be compared again ({message})") from None
    same = slo.to_json() == report.slo
    searches: dict[str, SearchResult] = {}
    scales: dict[str, float] = {}
    summaries: dict[str, RunSummary] = {}
    for result in report.plans:
        folder = Path(result.folder or "")
        if not (folder / "requests.jsonl").is_file():  # moved: the plan folders are beside capacity.json
            folder = root / result.name
        k = result.time_scale or 1.0
        summary = _summary(folder, parse_slo(scaled_slo(slo, k)) if k != 1 else slo, None)
        if not summary.search:
            raise RejudgeError(f"{folder}: no capacity search to judge again (no search.json)")
        summary.rejudged = _note(slo, demand, folder)
        search = summary.search
        if not same:  # the search stopped for its own SLO; these are the levels it measured
            search = search.model_copy(
                update={"stop": "judged again under another SLO: the levels the search measured"}
            )
        searches[result.name], scales[result.name], summaries[result.name] = search, k, summary
    out = compare_plans(file, searches, scales)
    before = {p.name: p for p in report.plans}
    for row in out.plans:
        row.folder = before[row.name].folder
        row.simulator_clock = before[row.name].simulator_clock
        row.unmeasured = unmeasured(searches[row.name], want)
    out.not_measured = dict(report.not_measured)
    if same and report.predicted_plans:  # under another SLO they would need predicting again: dropped
        out.predicted_plans = list(report.predicted_plans)
    out.rejudged = Rejudged.model_validate(
        _note(slo, demand, root) | {"original_slo": report.slo, "original_demand": report.demand}
    )
    return out, summaries
