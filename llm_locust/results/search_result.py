"""A capacity search's result as ``summary.json``, the table and the web UI show it: the bracket
(highest pass, lowest step not shown to pass), the steps that decided it and whether the run held
them valid, the stop, the sentence, the live probe table's row, and the one line of an answer
withheld. Each step is judged in :mod:`llm_locust.results.probe`.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from collections.abc import Sequence

from llm_locust.config.stage_kind import StageKind
from llm_locust.load.search import NOT_PASSED, STOP_REASONS, SearchSpec, StopReason, Verdict
from llm_locust.results.probe import REMEDY, Invalidity, margin_key
from llm_locust.results.search_model import Decider, DeciderRole, JudgedStep, SearchResult

__all__ = [
    "deciders_text",
    "deciding_steps",
    "probe_row",
    "search_result",
    "search_sentence",
    "withheld_text",
]


def withheld_text(probes: Sequence[JudgedStep]) -> str:
    """The one line of a search that stopped on invalid steps: why and what to do first, then
    which level (the cause is what a reader acts on)."""
    last = probes[-1]
    runs = sum(1 for p in probes if p.level == last.level and p.verdict == Verdict.INVALID)
    remedy = REMEDY.get(last.invalidity or Invalidity.LEVEL, "")
    return (
        f"answer withheld: {last.reason}" + (f"; {remedy}" if remedy else "") + f" ({last.label} "
        f"invalid {runs} times: no step above it can be measured on this run)"
    )


def deciding_steps(result: SearchResult) -> list[Decider]:
    """The steps a search's answer rests on (the highest pass, the lowest step not shown to pass,
    the step at the demand), each with whether the run held it valid."""
    out: list[Decider] = []
    for role, step in ((DeciderRole.CAPACITY, result.highest_pass), (DeciderRole.BOUND, result.upper)):
        if step is not None:
            out.append(_decider(role, step))
    demand = result.demand_step
    if demand is not None and all(d.index != demand.index for d in out):
        out.append(_decider(DeciderRole.DEMAND, demand))
    return out


def _decider(role: DeciderRole, step: JudgedStep) -> Decider:
    return Decider(
        role=role,
        index=step.index,
        label=step.label,
        level=step.level,
        verdict=step.verdict,
        valid=step.valid,
        requests=step.requests if "requests" in step.model_fields_set else None,
        client_saturated=step.client is not None and step.client.saturated,
    )


def deciders_text(deciders: Sequence[Decider]) -> str:
    """``decided by users=32 (pass, valid) and users=64 (fail, valid)``."""
    if not deciders:
        return ""
    shown = [f"{d.label} ({d.verdict}, {'valid' if d.valid else 'INVALID'})" for d in deciders]
    return "decided by " + (", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) > 1 else shown[0])


def _lowest(probes: Sequence[JudgedStep], verdicts: tuple[str, ...]) -> JudgedStep | None:
    return min((p for p in probes if p.verdict in verdicts), key=lambda p: p.level, default=None)


def search_result(
    spec: SearchSpec, probes: Sequence[JudgedStep], stop_reason: str | None, step_time_s: float
) -> SearchResult:
    """The ``search`` block of ``summary.json``: the bracket, every probe, the stop reason.

    ``highest_pass``: the highest step shown to pass below ``upper``, the lowest step not shown
    to pass (a failure or a step that stayed inconclusive); ``lowest_fail``: the lowest failure.
    """
    upper = _lowest(probes, NOT_PASSED)
    lowest_fail = _lowest(probes, (Verdict.FAIL,))
    passes = [p for p in probes if p.verdict == Verdict.PASS and (upper is None or p.level < upper.level)]
    highest_pass = max(passes, key=lambda p: p.level) if passes else None
    withheld = stop_reason == StopReason.INVALID
    if withheld:  # invalid twice: nothing of this run is read as a capacity
        highest_pass = None
    valid = [p for p in probes if p.verdict != Verdict.INVALID]
    at_demand = [p for p in valid if spec.demand is not None and p.level == spec.level_of_demand()]
    result = SearchResult(
        kind=spec.kind,
        min=spec.minimum,
        max=spec.maximum,
        precision=spec.precision,
        settled_precision=spec.settled_precision,
        max_steps=spec.max_steps,
        max_extensions=spec.max_extensions,
        step_time_s=step_time_s,
        steps=list(probes),
        highest_pass=highest_pass,
        upper=upper,
        lowest_fail=lowest_fail,
        capacity=None if highest_pass is None else highest_pass.level,
        demand=spec.demand,
        demand_step=at_demand[-1] if at_demand else None,
        stop_reason=None if stop_reason is None else StopReason(stop_reason),
        stop=STOP_REASONS[StopReason(stop_reason)] if stop_reason else "the run ended before the search did",
        broke_first=_broke_first(lowest_fail),
        withheld=withheld_text(probes) if withheld and probes else None,
        invalid_steps=sum(1 for p in probes if p.verdict == Verdict.INVALID),
    )
    result.decided_by = [] if withheld else deciding_steps(result)
    result.sentence = search_sentence(result)
    return result


def probe_row(probe: JudgedStep) -> dict[str, str | float | int | None]:
    """One row of the live probe table (web UI): level, req/s, TTFT and E2E P95 (s), success
    ratio, verdict, the SLO term that decided a step not shown to pass and why, and how often the
    step ran on (for samples, ``runs_on``; straddling, ``extensions``)."""
    completed, failed = probe.completed or 0, probe.failed or 0
    term = ""
    if probe.verdict == Verdict.FAIL:
        term = _broke_first(probe) or ""
    elif probe.verdict == Verdict.INCONCLUSIVE:
        term = next((t.name for t in probe.terms if t.verdict == Verdict.INCONCLUSIVE), "")
    return {
        "label": probe.label,
        "level": probe.level,
        "phase": probe.phase.value if probe.phase is not None else "",
        "requests": probe.requests,
        "request_throughput": probe.request_throughput,
        "ttft_p95_s": _seconds(probe.p95_ttft_ms),
        "e2e_p95_s": _seconds(probe.p95_e2el_ms),
        "success": completed / (completed + failed) if completed + failed else None,
        "verdict": probe.verdict.value,
        "term": term,
        "reason": probe.reason,
        "runs_on": probe.sample_extensions,
        "extensions": probe.extensions,
    }


def _seconds(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000.0


def _broke_first(probe: JudgedStep | None) -> str | None:
    if probe is None:
        return None
    failing = [t for t in probe.terms if t.verdict == Verdict.FAIL]
    return min(failing, key=margin_key).name if failing else None


def _level(kind: StageKind, level: float) -> str:
    if kind is StageKind.USERS:
        return "1 user" if level == 1 else f"{int(level)} users"
    return f"{level:g} req/s"


def search_sentence(result: SearchResult) -> str:
    """ "capacity 24 users within the SLO (1.89 req/s, 410 output tok/s); 28 users fails:
    e2e_p95 34.6 s misses e2e_p95<=30s; stopped: ..."."""
    kind, best, upper = result.kind, result.highest_pass, result.upper
    if result.withheld:
        return result.withheld
    if best is None:
        text = "no search step was shown to meet the SLO"
    else:
        text = (
            f"capacity {_level(kind, best.level)} within the SLO ({best.request_throughput:.2f} req/s, "
            f"{best.output_throughput:.0f} output tok/s)"
        )
    if upper is not None:
        word = "fails" if upper.verdict == Verdict.FAIL else "is inconclusive"
        text += f"; {_level(kind, upper.level)} {word}: {upper.reason}"
    decided = deciders_text(result.decided_by)
    if decided:
        text += f"; {decided}"
    return f"{text}; stopped: {result.stop}"
