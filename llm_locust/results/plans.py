"""Deployment plans compared: each plan's capacity, cost and headroom, the cheapest that meets the demand.

Input: the plan file and, per plan, the search its capacity search wrote (the ``search`` block of
``DIR/<plan>/summary.json``, a :class:`~llm_locust.results.search_model.SearchResult`). Every
number below comes from a measured search step of that folder (its stage index is kept),
converted to deployment time when the target was the simulator at ``--speedup K``
(``time_scale``, :func:`llm_locust.results.timescale.search_in_deployment_time`): latencies x K,
rates and throughputs / K, concurrency unchanged (a closed-loop test is time-scale invariant).

Capacity is measured in the demand's unit, one number everywhere (the table, the verdict, the
progress line): when the search ran in that unit (users; concurrency by users without think
time, each holding one request in flight; a rate) it is the capacity step's level; otherwise
(a concurrency demand with thinking users) the step's time-weighted mean of requests in flight.
A plan **meets** the demand when a step at or above the demand passed; the search measures the
demand itself whenever its bracket contains it (:mod:`llm_locust.load.search`), so a demand
left inside the bracket (a step limit) is undecided, and counted as not met. A plan whose
search **withheld** its answer (a step invalid twice: :mod:`llm_locust.results.probe`) has no
capacity; when such a plan is as cheap as the cheapest plan that meets the demand, or none
meets it, the comparison's answer is withheld too, unless a valid step of it at or below the
demand failed (it is then shown not to meet the demand, whatever its capacity). Each plan
lists the steps that decided it (``decided_by``) and whether the run held each valid. The
cheapest plan is the lowest $/hour among those that meet it (ties: the lower cost per 1M
tokens at the demand).

Pure module: no Locust, no network.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llm_locust.config.demand import Demand
from llm_locust.config.plans import Plan, PlanFile
from llm_locust.load.search import StopReason, Verdict
from llm_locust.results.capacity import amount, bracket, measure
from llm_locust.results.capacity_model import (
    CapacityReport,
    DemandUnit,
    PlanResult,
    PlanSearch,
    Scaling,
    ScalingDimension,
    TimeScale,
)
from llm_locust.results.cost import (
    cost_per_million,
    headroom,
    interpolate,
    per_gpu,
    scaling_efficiency,
    tokens_per_user,
)
from llm_locust.results.probe import show_value
from llm_locust.results.search_model import JudgedStep, SearchResult, SloTerm
from llm_locust.results.search_result import deciders_text
from llm_locust.results.timescale import capacity_time_scale, search_in_deployment_time

__all__ = [
    "compare_plans",
    "format_comparison",
    "plan_fields",
    "plan_result",
]


def plan_result(plan: Plan, demand: Demand, search: SearchResult, time_scale: float = 1.0) -> PlanResult:
    """One plan's row: capacity, per-GPU numbers, cost at capacity and at the demand, verdict
    (every number in deployment time: ``search`` measured at ``time_scale`` x, converted)."""
    real = search_in_deployment_time(search, time_scale)
    steps, withheld = real.steps, real.withheld
    # a withheld answer rests on no step: neither its capacity step nor its bound
    best, upper = (None, None) if withheld else (real.highest_pass, real.upper)
    passes = (
        []
        if withheld
        else [p for p in steps if p.verdict == Verdict.PASS and (upper is None or p.level < upper.level)]
    )
    by_level = real.demand is not None
    capacity = None if best is None else measure(demand, best, by_level)
    points = [(m, p.output_throughput) for p in passes if (m := measure(demand, p, by_level)) is not None]
    at_demand = interpolate(points, demand.value)
    deciders = list(real.decided_by)  # in the plan's time scale (a rate step's level and label)
    out = None if best is None else best.output_throughput
    good = None if best is None else best.goodput_output_tokens_per_s
    tpot = None if best is None else best.median_tpot_ms
    result = PlanResult(
        **plan_fields(plan),
        time_scale=time_scale,
        search=PlanSearch(
            kind=real.kind,
            capacity=real.capacity,
            stop_reason=real.stop_reason,
            settled_precision=real.settled_precision,
            stop=real.stop,
        ),
        withheld=withheld,
        decided_by=deciders,
        decided_by_valid_steps=bool(deciders) and all(d.valid for d in deciders),
        invalid_steps=sum(1 for p in steps if p.verdict == Verdict.INVALID),
        shown_short=_shown_short(demand, steps, by_level),
        by_level=by_level,
        steps=steps,
        capacity_step=best,
        upper_step=upper,
        capacity_below=_settled_bound(real, demand, by_level, capacity),
        capacity=capacity,
        capacity_unit=DemandUnit(demand.kind),
        demand=demand.value,
        headroom=None if capacity is None else headroom(capacity, demand.value),
        meets=best is not None and any((measure(demand, p, by_level) or 0) >= demand.value for p in passes),
        cost_per_million_at_demand=cost_per_million(plan.gpu_hour_cost, plan.gpus, at_demand),
        output_throughput_at_demand=at_demand,
        # at capacity: the capacity step's measures (none without one)
        request_throughput=None if best is None else best.request_throughput,
        output_throughput=out,
        goodput_output_tokens_per_s=good,
        mean_in_flight=None if best is None else best.mean_in_flight,
        output_throughput_per_gpu=per_gpu(out, plan.gpus),
        goodput_per_gpu=per_gpu(good, plan.gpus),
        tokens_per_user=tokens_per_user(None if tpot is None else tpot / 1000.0),
        cost_per_million_at_capacity=cost_per_million(plan.gpu_hour_cost, plan.gpus, out),
    )
    result.verdict = verdict_sentence(result, demand, passes)
    return result


def _settled_bound(
    search: SearchResult, demand: Demand, by_level: bool, capacity: float | None
) -> float | None:
    """The bracket's upper end when the search stopped at its settled precision (short of the
    demand), else ``None``: the capacity is then only known to lie below it."""
    if search.stop_reason != StopReason.SETTLED or search.upper is None or capacity is None:
        return None
    return measure(demand, search.upper, by_level)


def plan_fields(plan: Plan) -> dict[str, Any]:
    """What the plan file says of a plan, as every row of the comparison carries it."""
    return {
        "name": plan.name,
        "endpoints": list(plan.endpoints),
        "replicas": plan.replicas,
        "gpus": plan.gpus,
        "gpus_per_replica": plan.gpus_per_replica,
        "gpu": plan.gpu,
        "model": plan.model,
        "gpu_hour_cost": plan.gpu_hour_cost,
        "dollars_per_hour": plan.gpu_hour_cost * plan.gpus,
    }


def _shown_short(demand: Demand, steps: Sequence[JudgedStep], by_level: bool) -> bool:
    """Did a valid step at or below the demand fail? Then the plan does not meet the demand,
    whatever its withheld capacity is (a level that fails is not carried at a higher one)."""
    return any(
        p.verdict == Verdict.FAIL and (measure(demand, p, by_level) or float("inf")) <= demand.value
        for p in steps
    )


def _unit(demand: Demand, value: float) -> str:
    return amount(demand.kind, value)


def _tightest(step: JudgedStep) -> SloTerm | None:
    terms = [t for t in step.terms if t.margin is not None]
    return min(terms, key=lambda t: t.margin or 0.0) if terms else None


def _term_text(term: SloTerm) -> str:
    return f"{term.name.upper().replace('_', ' ')} {show_value(term.name, term.value, term.threshold)}"


def verdict_sentence(result: PlanResult, demand: Demand, passes: Sequence[JudgedStep]) -> str:
    """``meets 50 concurrent: E2E P95 27.1 s at 56, capacity 56; $1.23 per 1M output tokens`` or
    ``fails 50 concurrent: E2E P95 31.2 s at 28 concurrent (capacity 24)``."""
    want = demand.text()
    capacity, by_level = result.capacity, result.by_level
    if result.withheld:
        return f"not judged against {want}: {result.withheld}"
    if result.meets and capacity is not None:
        lowest = min(
            (p for p in passes if (measure(demand, p, by_level) or 0) >= demand.value), key=lambda p: p.level
        )
        term = _tightest(lowest)
        where = (
            f"{_term_text(term)} at {_unit(demand, measure(demand, lowest, by_level) or 0)}"
            if term
            else "passes"
        )
        cost = result.cost_per_million_at_demand
        price = f"; ${cost:.2f} per 1M output tokens at the demand" if cost is not None else ""
        return f"meets {want}: {where}, capacity {_unit(demand, capacity)}{price}"
    upper = result.upper_step
    cap = "no step was shown to pass" if capacity is None else f"capacity {_unit(demand, capacity)}"
    if capacity is not None and result.capacity_below is not None:
        settled = result.search.settled_precision or 0
        cap = (
            f"capacity {bracket(demand.kind, capacity, result.capacity_below)}: "
            f"bracketed to {100 * settled:.0f} % only, as it cannot meet the demand"
        )
    if upper is None:
        return f"not shown to meet {want}: {cap}; stopped: {result.search.stop}"
    at = measure(demand, upper, by_level)
    if at is None:  # no mean in flight was measured: say the level as it is
        return f"not shown to meet {want}: {upper.label} is {upper.verdict} ({upper.reason}); {cap}"
    if capacity is not None and at > demand.value:
        verb = "fails" if upper.verdict == Verdict.FAIL else "is inconclusive"
        return f"undecided for {want}: {cap}, and {upper.label} (above the demand) {verb}"
    if upper.verdict == Verdict.INCONCLUSIVE:
        return f"not shown to meet {want}: {_unit(demand, at)} is inconclusive ({upper.reason}); {cap}"
    broke = next((t for t in upper.terms if t.verdict == Verdict.FAIL), None) or _tightest(upper)
    shown = _term_text(broke) if broke else upper.reason
    return f"fails {want}: {shown} at {_unit(demand, at)} ({cap})"


def _scaling(results: Sequence[PlanResult]) -> list[Scaling]:
    """Pairs of plans (same GPU and model labels) differing only in replicas or GPUs per replica."""
    out = []
    for i, a in enumerate(results):
        for b in results[i + 1 :]:
            if (a.gpu, a.model) != (b.gpu, b.model) or not a.capacity or not b.capacity:
                continue
            if a.gpus_per_replica == b.gpus_per_replica and a.replicas != b.replicas:
                what, ra, rb = ScalingDimension.REPLICAS, a.replicas, b.replicas
            elif a.replicas == b.replicas and a.gpus_per_replica != b.gpus_per_replica:
                what, ra, rb = ScalingDimension.GPUS_PER_REPLICA, a.gpus_per_replica, b.gpus_per_replica
            else:
                continue
            small, big = (a, b) if ra < rb else (b, a)
            rs, rb_ = (ra, rb) if ra < rb else (rb, ra)
            assert small.capacity and big.capacity  # both checked above
            ratios = efficiencies = None
            if small.capacity_below is not None or big.capacity_below is not None:
                # a bracket [capacity, capacity_below): the ratio from both ends, not the lower one
                small_hi, big_hi = small.capacity_below or small.capacity, big.capacity_below or big.capacity
                ratios = (big.capacity / small_hi, big_hi / small.capacity)
                efficiencies = (
                    scaling_efficiency(small_hi, rs, big.capacity, rb_),
                    scaling_efficiency(small.capacity, rs, big_hi, rb_),
                )
            out.append(
                Scaling(
                    plans=(small.name, big.name),
                    differs_in=what,
                    resource_ratio=rb_ / rs,
                    capacity_ratio=big.capacity / small.capacity,
                    efficiency=scaling_efficiency(small.capacity, rs, big.capacity, rb_),
                    capacity_ratio_range=ratios,
                    efficiency_range=efficiencies,
                )
            )
    return out


def compare_plans(
    file: PlanFile, searches: Mapping[str, SearchResult], scales: Mapping[str, float]
) -> CapacityReport:
    """``capacity.json``: every plan's result, the cheapest that meets the demand, scaling pairs."""
    results = [
        plan_result(p, file.demand, searches[p.name], scales.get(p.name, 1.0))
        for p in file.plans
        if p.name in searches
    ]
    meeting = [r for r in results if r.meets]
    cheapest = min(
        meeting, key=lambda r: (r.dollars_per_hour, r.cost_per_million_at_demand or 0.0), default=None
    )
    price = float("inf") if cheapest is None else cheapest.dollars_per_hour
    blocking = [r for r in results if r.withheld and r.dollars_per_hour <= price and not r.shown_short]
    if blocking:  # a plan that might be the answer has no valid answer: the comparison has none either
        names = ", ".join(r.name for r in blocking)
        lines = "its line" if len(blocking) == 1 else "their lines"
        why = f"could not be measured validly on this run; see {lines}"
        if cheapest is None:  # none meets: any plan without a valid answer might
            answer = f"answer withheld: no plan measured validly meets {file.demand.text()}; {names} {why}"
        else:
            answer = (
                f"answer withheld: {names} (as cheap as or cheaper than {cheapest.name}, which meets "
                f"{file.demand.text()}) {why}"
            )
        cheapest = None
    elif cheapest is not None:
        answer = (
            f"{cheapest.name} is the cheapest plan that meets {file.demand.text()} "
            f"(${cheapest.dollars_per_hour:.2f}/hour)"
        )
    else:
        answer = f"no plan meets {file.demand.text()}"
    return CapacityReport(
        demand={k: v for k, v in file.demand.to_json().items() if isinstance(v, (str, int, float))},
        demand_text=file.demand.text(),
        slo=file.slo.to_json(),
        plans=results,
        cheapest=None if cheapest is None else cheapest.name,
        withheld=bool(blocking),
        answer=answer,
        scaling=_scaling(results),
        time_scale=TimeScale.model_validate(capacity_time_scale({r.name: r.time_scale for r in results})),
    )


def _cell(value: float | None, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def _shown(result: PlanResult, key: str, fmt: str | None) -> str:
    """A table cell; the capacity as the verdict says it (``22``, not ``22.0`` or ``21.9``)."""
    value = getattr(result, key)
    if fmt is None:
        shown = "-" if value is None else amount(result.capacity_unit, value).split(" ")[0]
        if value is not None and key == "capacity" and result.capacity_below is not None:
            shown += "-<" + amount(result.capacity_unit, result.capacity_below).split(" ")[0]
        return shown
    return _cell(value, fmt)


#: The comparison table's numeric columns: title, attribute of a plan result, format, width.
_COLUMNS = (
    ("GPUs", "gpus", "{}", 5),
    ("capacity", "capacity", None, 10),
    ("req/s", "request_throughput", "{:.2f}", 8),
    ("out tok/s", "output_throughput", "{:.0f}", 10),
    ("goodput", "goodput_output_tokens_per_s", "{:.0f}", 9),
    ("tok/s/GPU", "output_throughput_per_gpu", "{:.1f}", 10),
    ("tok/s/user", "tokens_per_user", "{:.1f}", 11),
    ("$/1M@cap", "cost_per_million_at_capacity", "{:.2f}", 9),
    ("$/1M@dem", "cost_per_million_at_demand", "{:.2f}", 9),
    ("headroom", "headroom", "{:+.0%}", 9),
)


def format_comparison(report: CapacityReport) -> str:
    """The table printed by ``llm-locust capacity``: one row per plan, the verdicts, the answer."""
    head = f"{'plan':<18}" + "".join(f"{title:>{width}}" for title, _, _, width in _COLUMNS)
    unit = report.plans[0].capacity_unit.value if report.plans else ""
    lines = [
        f"demand: {report.demand_text} (capacity in {unit}); SLO: {', '.join(report.slo)}",
        head,
        "-" * len(head),
    ]
    for r in report.plans:
        cells = "".join(f"{_shown(r, key, fmt):>{width}}" for _, key, fmt, width in _COLUMNS)
        lines.append(f"{r.name[:17]:<18}{cells}")
    lines.append("")
    lines.append("goodput: output tok/s of the requests that met every SLO line")
    if any(r.cost_per_million_at_demand is None for r in report.plans):
        lines.append("$/1M@dem -: the plan is not shown to carry the demand, so it has no cost there")
    lines += [f"{r.name}: {r.verdict}" for r in report.plans]
    for r in report.plans:
        decided = deciders_text(r.decided_by)
        if decided:
            lines.append(f"{r.name}: {decided}")
    for pair in report.scaling:
        what = "replicas" if pair.differs_in == ScalingDimension.REPLICAS else "GPUs per replica"
        ratio = f"{pair.resource_ratio:g}x {what}, {pair.ratio_text()}"
        lines.append(f"scaling {pair.plans[1]} vs {pair.plans[0]}: {ratio}")
    lines.append(
        report.answer if report.withheld else f"answer: {report.answer}"
    )  # not "answer: answer withheld"
    return "\n".join(lines)
