"""``capacity.html``: the decision page of a capacity comparison (``llm-locust capacity``).

The answer first (the cheapest plan that meets the demand, its headroom and its $ per 1M output
tokens at the demand, or why no plan does), then capacity against the demand, each plan's TTFT
and E2E P95 against the load, throughput per GPU against throughput per user, cost against the
load, scaling between plans, and a table of every number with where it came from. One
self-contained page (:func:`llm_locust.report.html.render_page`: ECharts inlined, no request).

Pure module: files in, a file out; no Locust, no network.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from llm_locust.report import decision_charts as dc
from llm_locust.report.decision import Decision, Latency, PlanView, StepView, Verdict, load_decision
from llm_locust.report.echarts import drawn
from llm_locust.report.html import Section, render_page
from llm_locust.results.capacity import amount
from llm_locust.results.search_result import deciders_text

__all__ = ["DECISION_FILE", "build_decision_page", "write_decision_page"]

DECISION_FILE = "capacity.html"


def _num(value: float | None, fmt: str = "{:.1f}") -> str:
    return "-" if value is None else fmt.format(value)


def _badge(verdict: Verdict | str) -> str:
    text = verdict.value if isinstance(verdict, Verdict) else verdict
    return f'<span class="badge {escape(text)}">{escape(text)}</span>'


def time_note(d: Decision) -> str:
    """What a sped-up simulator means for the numbers, or nothing for real deployments."""
    if not d.time_scales:
        return ""
    shown = ", ".join(f"{k:g}x" for k in d.time_scales)
    names = ", ".join(p.result.name for p in d.plans if p.result.time_scale != 1)
    return (
        f'<p class="note"><b>Simulated at {shown} real time</b> ({escape(names)}): every number on this '
        "page is in deployment time (latencies multiplied, rates and throughputs divided by the "
        "speed-up); the plan folders hold the measured wall-clock numbers. The simulator is a rehearsal "
        "model, not a prediction.</p>"
    )


def _bracket(d: Decision, p: PlanView) -> str:
    if p.result.capacity is None:
        return "no step passed"
    unit = p.result.capacity_unit.value
    low = amount(unit, p.result.capacity).split(" ")[0]  # the table's digits (``53``, ``21.9``)
    if p.upper is None:
        return f"at least {low} (no step above it failed)"
    return f"{low} to {amount(unit, p.upper).split(' ')[0]}"


def answer_block(d: Decision) -> str:
    parts = []
    if d.cheapest is not None:
        r = d.plan(d.cheapest).result
        parts.append(
            f'<p class="answer pass">{escape(r.name)}: the cheapest plan that meets {escape(d.demand_text)}, '
            f"${r.dollars_per_hour:.2f}/hour ({r.gpus} GPU x ${r.gpu_hour_cost:g}), headroom "
            f"{_num(r.headroom, '{:+.0%}')}, ${_num(r.cost_per_million_at_demand, '{:.2f}')} per 1M output "
            "tokens at the demand.</p>"
        )
    elif d.withheld:
        parts.append(
            f'<p class="answer withheld">{escape(d.answer[:1].upper() + d.answer[1:])}. A plan as cheap or '
            "cheaper than any that meets the demand has no valid measurement on this run (its steps "
            "were invalid: see below); measure again on a quieter host.</p>"
        )
    else:
        close = max(
            (p for p in d.plans if p.result.capacity is not None),
            key=lambda p: p.result.capacity or 0,
            default=None,
        )
        nearest = (
            f" The closest is {escape(close.result.name)}: capacity {close.result.capacity:.1f} against "
            f"{d.demand:g} ({_num(close.result.headroom, '{:+.0%}')})."
            if close is not None
            else ""
        )
        parts.append(
            f'<p class="answer fail">No plan meets {escape(d.demand_text)} within the SLO.{nearest} '
            "A bigger plan, or a looser SLO, is needed; why each plan falls short:</p>"
        )
    parts.append(
        f"<p>SLO: <code>{escape(', '.join(d.slo))}</code>; demand: {escape(d.demand_text)} "
        f"(capacity in {escape(dc.UNIT_AXIS[d.demand_kind])}).</p>"
    )
    parts.append("<ul>" + "".join(_verdict_item(p) for p in d.plans) + "</ul>")
    for name, error in d.not_measured.items():
        parts.append(f"<p><b>{escape(name)}</b>: not measured: {escape(error)}</p>")
    parts.append(time_note(d) + rejudged_note(d))
    return "".join(parts) + plan_table(d)


def _verdict_item(p: PlanView) -> str:
    """The plan's verdict and the steps it rests on, in the words of ``llm-locust capacity``'s table."""
    more = f"; <b>{escape(p.result.unmeasured)}</b>" if p.result.unmeasured else ""
    decided = deciders_text(p.result.decided_by)
    rests = f' <span class="deciders">({escape(decided)})</span>' if decided else ""
    return f"<li><b>{escape(p.result.name)}</b>: {escape(p.result.verdict)}{more}{rests}</li>"


def rejudged_note(d: Decision) -> str:
    """A comparison judged again by ``llm-locust rejudge``: under what, from where, what it cannot tell."""
    if not d.rejudged:
        return ""
    r = d.rejudged
    was = ", ".join(r.original_slo or ())
    return (
        f'<p class="note"><b>Judged again without new load</b> from the requests recorded in '
        f"<code>{escape(r.from_)}</code>, under <code>{escape(', '.join(r.slo))}"
        f"</code> (the run's SLO: <code>{escape(was)}</code>). The levels measured are the ones the "
        "original search chose; a level it never measured is named, not guessed.</p>"
    )


def plan_table(d: Decision) -> str:
    head = (
        "<tr><th>plan</th><th>GPUs (replicas x per replica)</th><th>$/hour</th>"
        "<th>capacity (highest pass to lowest not passed)</th>"
        "<th>headroom</th><th>$/1M at the demand</th><th>$/1M at capacity</th><th>tok/s/GPU at capacity</th>"
        "<th>tok/s/user at capacity</th><th>meets</th></tr>"
    )
    rows = []
    for p in d.plans:
        r = p.result
        shape = f"{r.replicas} x {r.gpus_per_replica}"
        rows.append(
            f"<tr><td>{escape(r.name)}{' (cheapest)' if r.name == d.cheapest else ''}</td>"
            f"<td>{r.gpus} ({shape})</td><td>{r.dollars_per_hour:.2f}</td><td>{escape(_bracket(d, p))}</td>"
            f"<td>{_num(r.headroom, '{:+.0%}')}</td><td>{_num(r.cost_per_million_at_demand, '{:.2f}')}</td>"
            f"<td>{_num(r.cost_per_million_at_capacity, '{:.2f}')}</td>"
            f"<td>{_num(r.output_throughput_per_gpu)}</td><td>{_num(r.tokens_per_user)}</td>"
            f"<td>{_badge('withheld' if r.withheld else 'pass' if r.meets else 'fail')}</td></tr>"
        )
    return f'<table class="plans">{head}{"".join(rows)}</table>'


def predicted_table(d: Decision) -> str:
    """The plans predicted, not measured (``predict_from``), each with its interval."""
    if not d.predicted:
        return ""
    head = (
        "<tr><th>plan (PREDICTED)</th><th>predicted from</th><th>GPUs (replicas)</th><th>$/hour</th>"
        "<th>capacity (range over the model's parameter draws)</th><th>headroom</th><th>demand</th></tr>"
    )
    rows = [
        f"<tr><td>{escape(p.name)} <b>(predicted)</b></td><td>{escape(p.from_plan)}</td>"
        f"<td>{p.gpus} ({p.replicas})</td><td>{p.dollars_per_hour:.2f}</td>"
        f"<td>{_num(p.capacity, '{:g}')} ({p.low:g} to {p.high:g})</td><td>{_num(p.headroom, '{:+.0%}')}</td>"
        f"<td>{escape(p.outcome)}</td></tr>"
        for p in d.predicted
    ]
    notes = "".join(
        f"<li>{escape(p.verdict)} (model: <code>{escape(p.model_file)}</code>)</li>" for p in d.predicted
    )
    return (
        '<p class="note">Not measured: predicted by the engine model calibrated on the named plan\'s '
        "search (<code>llm-locust calibrate</code>), the same search run on it in virtual time. A "
        "prediction is never the answer above; it says which plan to measure next.</p>"
        f'<table class="plans">{head}{"".join(rows)}</table><ul>{notes}</ul>'
    )


def _notes(plan: PlanView) -> str:
    """The steps that decide nothing (invalid) or could not be decided (inconclusive), and why."""
    odd = [s for s in plan.steps if s.step.verdict in (Verdict.INVALID, Verdict.INCONCLUSIVE)]
    sim = (
        f'<p class="muted">{escape(plan.result.name)}: its simulator fell behind its schedule (the host was '
        "overloaded): the simulated server ran slow; the steps are still valid measurements of the client, "
        "and its capacity is if anything understated (a lower bound).</p>"
        if plan.simulator_fell_behind
        else ""
    )
    if not odd:
        return sim
    items = "".join(
        f"<li>{escape(s.step.label)} {_badge(s.step.verdict)}: {escape(s.step.reason)}</li>" for s in odd
    )
    return (
        f"<p><b>{escape(plan.result.name)}</b>: steps not decided by their numbers:</p><ul>{items}</ul>{sim}"
    )


def _latency_cell(lat: Latency | None) -> str:
    if lat is None:
        return "-"
    if lat.low_s is None:
        return f"{lat.p95_s:.2f}"
    high = "open" if lat.high_s is None else f"{lat.high_s:.2f}"
    return f"{lat.p95_s:.2f} [{lat.low_s:.2f}, {high}]"


def steps_table(d: Decision) -> str:
    head = (
        "<tr><th>plan</th><th>step (level)</th><th>verdict</th><th>in flight</th><th>req/s</th>"
        "<th>out tok/s</th><th>goodput tok/s</th><th>TTFT P95 s [95 % CI]</th><th>E2E P95 s [95 % CI]</th>"
        "<th>median TPOT ms</th><th>tok/s/GPU</th><th>$/1M</th><th>requests</th><th>source</th>"
        "<th>reason</th></tr>"
    )
    rows = []
    for p in d.plans:
        for s in p.steps:
            mark = " (capacity)" if s.step.index == p.capacity_index else ""
            mark += " (lowest not passed)" if s.step.index == p.upper_index else ""
            deciders = [x for x in p.result.decided_by if x.index == s.step.index]
            mark += "".join(f" (decides: {x.role}{'' if x.valid else ', INVALID'})" for x in deciders)
            rows.append(_step_row(p, s, mark))
    sources = sorted({lat.source for p in d.plans for s in p.steps for lat in (s.ttft, s.e2e) if lat})
    legend = "".join(f"<li>{escape(x)}</li>" for x in sources)
    return (
        f'<table class="steps">{head}{"".join(rows)}</table>'
        '<p class="muted">Steps sorted by level. In flight: the step\'s time-weighted mean of requests '
        "in flight (the load of a concurrency demand; a rate demand's is req/s, a users demand's the "
        "level); $/1M: the plan's $/hour over its output tokens per hour at that step. "
        f'Latency sources:</p><ul class="muted">{legend}</ul>'
    )


def _step_row(p: PlanView, s: StepView, mark: str) -> str:
    cells = [
        escape(p.result.name),
        escape(s.step.label + mark),
        _badge(s.step.verdict),
        _num(s.step.mean_in_flight),
        _num(s.step.request_throughput, "{:.3f}"),
        _num(s.step.output_throughput, "{:.0f}"),
        _num(s.step.goodput_output_tokens_per_s, "{:.0f}"),
        _latency_cell(s.ttft),
        _latency_cell(s.e2e),
        _num(s.step.median_tpot_ms),
        _num(s.output_per_gpu),
        _num(s.cost_per_million, "{:.2f}"),
        _num(s.step.requests, "{:d}"),
        f"<code>{escape(s.source)}</code>",
        escape(s.step.reason),
    ]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def _scaling_text(d: Decision) -> str:
    what = {"replicas": "replicas", "gpus_per_replica": "GPUs per replica"}
    items = "".join(
        f"<li>{escape(s.plans[1])} against {escape(s.plans[0])}: {s.resource_ratio:g}x "
        f"{what.get(s.differs_in, s.differs_in)}, {escape(s.ratio_text())}</li>"
        for s in d.scaling
    )
    return (
        f"<ul>{items}</ul>"
        if items
        else '<p class="muted">No two plans differ only in replicas or GPUs per replica.</p>'
    )


def build_decision_page(d: Decision) -> str:
    per_plan = drawn(
        [
            (f"latency-{m}-{i}", dc.latency_chart(d, p, m))
            for i, p in enumerate(d.plans)
            for m in ("ttft", "e2e")
        ]
    )
    legend = (
        '<p class="muted">Each point is a search step (sorted by level, not in the order searched) at its '
        "measured load; error bars: 95 % distribution-free intervals of the P95 (a stub up: too few "
        "requests to bound it). "
        "Point shapes, by the verdict of the chart's own SLO line at that step (the step's when it is "
        "not an SLO line): pass (circle, green), fail (triangle, red), inconclusive (diamond, orange); "
        "an invalid step: hollow, grey, not joined (its numbers decide nothing). Red dashed: the SLO; "
        "green: the capacity; blue dotted: the demand.</p>"
    )
    sections: list[Section] = [
        ("The answer", answer_block(d), [], ""),
        (
            "Capacity against the demand",
            "",
            drawn([("capacity", dc.capacity_chart(d))]),
            '<p class="muted">Bar: the highest step shown to pass. Bracket: up to the lowest step not '
            "shown to pass (failed, or stayed inconclusive); the capacity lies in between. Blue dotted: "
            "the demand.</p>",
        ),
        ("Latency against load, per plan", legend, per_plan, "".join(_notes(p) for p in d.plans)),
        (
            "Throughput and cost",
            "",
            drawn([("frontier", dc.frontier_chart(d)), ("cost", dc.cost_chart(d))]),
            '<p class="muted">Valid steps only, sorted by level. Throughput per user: 1 / the step\'s '
            "median TPOT.</p>",
        ),
        ("Scaling between plans", "", drawn([("scaling", dc.scaling_chart(d))]), _scaling_text(d)),
        ("Every number and where it came from", steps_table(d), [], ""),
    ]
    if d.predicted:  # beside the measured capacities, before the per-plan detail
        sections.insert(2, ("Predicted plans (not measured)", predicted_table(d), [], ""))
    subtitle = f"{len(d.plans)} plan(s) in {d.directory}"
    return render_page(f"Capacity decision: {d.demand_text}", subtitle, sections)


def write_decision_page(directory: str | Path, output: str | Path | None = None) -> Path:
    """``DIR/capacity.html`` (or ``output``) of the capacity folder ``directory``, written atomically."""
    page = build_decision_page(load_decision(directory))
    path = Path(output) if output is not None else Path(directory) / DECISION_FILE
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(path)
    return path
