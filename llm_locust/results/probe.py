"""A capacity-search step judged (the search's result and sentence: ``results/search_result.py``).

A step is judged from its stage entry (:func:`llm_locust.results.stages.stage_entry`, the same
evaluation as every end-of-run stage verdict: the same measured window, the same SLO
aggregates, the same 95 % interval per SLO line and its verdict, :mod:`llm_locust.results.confidence`):

- ``invalid`` (:class:`Invalidity`): the run does not hold the step as a measurement: the stage
  did not run at its level (``results.validity``), the load generator was saturated or stalled
  over its window (``results.saturation``, :func:`gate`), or it still had too few requests for
  its SLO lines after running on for them. Neither a pass nor a fail: the search re-runs the
  level once, then withholds its answer (:func:`llm_locust.results.search_result.withheld_text`);
- ``fail``: some line's interval lies wholly on the failing side of its threshold, or every
  request of the step failed (the level is beyond what the server serves);
- ``pass``: every line's interval lies wholly on the passing side;
- ``inconclusive``: otherwise; the reason names the first undecided line and what it lacks.

A step with requests of its window still in flight when it had to be judged (see
``runtime/search.py``: the search waits for them, up to a limit) cannot pass: the slowest
requests would be the missing ones.

Each line's *margin* is its headroom as a fraction, comparable across lines: for a latency line
``(threshold - value) / threshold`` (0.3: 30 % under the threshold; negative: over it), for
``success`` the share of the allowed failures left, ``(value - threshold) / (1 - threshold)``
(1: no failure; 0: exactly at the limit; negative: over it). The term that *broke first* is,
at the lowest failing level, the failing line with the lowest margin; the *tightest* term of a
passing level is its line with the lowest margin.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llm_locust.config.slo import SloLine, SloSpec, parse_slo
from llm_locust.load.search import Verdict
from llm_locust.results.confidence import min_samples, min_successes
from llm_locust.results.saturation import saturated_reason
from llm_locust.results.search_model import ClientHealth, Invalidity, JudgedStep, SloTerm, Window
from llm_locust.results.shown import fixed

__all__ = [
    "MAX_WINDOW_STEPS",
    "Invalidity",
    "composed_reason",
    "extension_s",
    "fail_text",
    "gate",
    "judge_step",
    "margin_key",
    "needed_samples",
    "sample_extension_s",
    "short_of_samples",
    "show_value",
    "step_line",
    "term_line",
    "term_reason",
    "term_results",
    "why_text",
]


#: What to do, per :class:`Invalidity` (a saturated client's advice is in its reason).
REMEDY = {
    Invalidity.LEVEL: "add workers, or run on a quieter host",
    Invalidity.CLIENT: "",
    Invalidity.SAMPLES: "lengthen the step (--step-time)",
}


def show_value(name: str, value: float | None, threshold: float | None = None) -> str:
    """An SLO line's value in its unit: ``99.50 %`` for success, ``2.10 s`` or ``850 ms``; beside
    its ``threshold``, with the digits that show it on its own side of it (``95.3 ms`` against
    0.095 s, ``30.004 s`` against 30 s: :func:`~llm_locust.results.shown.fixed`)."""
    if value is None:
        return "-"
    if name == "success":
        scale, digits, unit = 100.0, 2, "%"
    else:
        scale, digits, unit = (1.0, 2, "s") if abs(value) >= 1 else (1000.0, 0, "ms")
    return f"{fixed(value * scale, digits, None if threshold is None else threshold * scale)} {unit}"


def _margin(line: SloLine, value: float | None) -> float | None:
    if value is None:
        return None
    if line.metric == "success":
        return (value - line.threshold) / (1 - line.threshold) if line.threshold < 1 else None
    return (line.threshold - value) / line.threshold if line.threshold > 0 else None


def why_text(line: SloLine, n: int, interval: Sequence[float | None]) -> str:
    """Why ``line`` is undecided from ``n`` values whose 95 % interval is ``interval``, in the
    time scale of ``line``'s threshold and of ``interval`` (composed from the exact values)."""
    lo, hi = interval
    if line.metric == "success":
        if lo is None:
            return "success: no requests"
        shown = f"{show_value('success', lo, line.threshold)}-{show_value('success', hi, line.threshold)}"
        below = show_value("success", line.threshold)
        return f"success: its interval {shown} reaches below {below} ({n} requests)"
    stat = line.stat or "max"
    if hi is None and stat.startswith("p") and 0 < float(stat[1:]) < 100:
        need = min_samples(float(stat[1:]) / 100.0)
        return f"{line.name}: {n} values cannot bound a {stat.upper()} from above (it needs {need})"
    if lo is None or hi is None:
        return f"{line.name}: {n} values give no interval"
    return (
        f"{line.name}: its interval {show_value(line.name, lo, line.threshold)}-"
        f"{show_value(line.name, hi, line.threshold)} "
        f"straddles {show_value(line.name, line.threshold)}"
    )


def term_results(spec: SloSpec, slo_json: dict[str, Any]) -> list[SloTerm]:
    """Per request SLO line: value, threshold, margin, and the 95 % interval, verdict and reason
    the stage's evaluation gave it (:func:`llm_locust.results.slo.evaluate`). Lines on the
    server's metrics or on drift need a run's series: a search step is judged without them."""
    out = []
    for line, judged in zip(spec.lines, slo_json["objectives"], strict=True):
        if judged.get("kind", "request") != "request":
            continue
        value, n = judged["measured"], judged["n"]
        interval = (judged["interval"][0], judged["interval"][1])
        term = Verdict(judged["verdict"])
        note = judged.get("note") or ""
        why = (
            (
                note
                if note and line.text in note
                else f"{line.name}: {note}"
                if note
                else why_text(line, n, interval)
            )
            if term == Verdict.INCONCLUSIVE
            else ""
        )
        out.append(
            SloTerm(
                objective=line.text,
                name=line.name,
                op=line.op,
                threshold=line.threshold,
                value=value,
                margin=_margin(line, value),
                interval=list(interval),
                n=n,
                verdict=term,
                why=why,
            )
        )
    return out


def term_line(term: SloTerm) -> SloLine | None:
    """The SLO line a term judged (from its objective's text; ``None``: not one that parses)."""
    try:
        return parse_slo([term.objective]).lines[0]
    except ValueError:
        return None


def fail_text(term: SloTerm) -> str:
    """``e2e_p95 3.60 s misses e2e_p95<=3s``: a failing term, from its exact value."""
    return f"{term.name} {show_value(term.name, term.value, term.threshold)} misses {term.objective}"


def term_reason(verdict: str, terms: Sequence[SloTerm]) -> str | None:
    """The reason a step judged ``verdict`` takes from its SLO ``terms``: a failure's, the failing
    term with the lowest margin (:func:`fail_text`); an inconclusive step's, its first undecided
    term's why. ``None`` when no term gives it one (a pass; a step whose every request failed)."""
    if verdict == Verdict.FAIL:
        failing = [t for t in terms if t.verdict == Verdict.FAIL]
        return fail_text(min(failing, key=margin_key)) if failing else None
    if verdict == Verdict.INCONCLUSIVE:
        return next((t.why for t in terms if t.verdict == Verdict.INCONCLUSIVE), None)
    return None


def _too_few(reason: str) -> str:
    return f"too few requests after {MAX_WINDOW_STEPS:g} step times ({reason})"


def composed_reason(probe: JudgedStep) -> str:
    """``probe``'s reason as :func:`judge_step` and :func:`gate` compose it, from its terms as they
    are now (a step converted to another time scale: :mod:`llm_locust.results.timescale`). A
    reason no SLO term is in is kept as written: every request failed, requests still in flight,
    the level not applied, and the load generator's own health (its wall clock)."""
    reason, terms = probe.reason, probe.terms
    if probe.verdict == Verdict.INVALID:
        if probe.invalidity != Invalidity.SAMPLES:
            return reason
        inner = term_reason(probe.judged_as or Verdict.INCONCLUSIVE, terms)
        return reason if inner is None else _too_few(inner)
    if probe.verdict == Verdict.FAIL and (probe.failed or 0) and not (probe.completed or 0):
        return reason
    composed = term_reason(probe.verdict, terms)
    return reason if composed is None else composed


def needed_samples(term: SloTerm) -> int:
    """The fewest values with which ``term`` could pass at all (0: no such floor)."""
    name, threshold = term.name, term.threshold
    if name == "success":
        return min_successes(threshold) if 0 < threshold < 1 and term.op == ">=" else 0
    stat = name.split("_")[1] if "_" in name else "max"
    if stat.startswith("p") and 0 < float(stat[1:]) < 100:
        return min_samples(float(stat[1:]) / 100.0)
    return 2 if stat == "mean" else 0


#: An extension to reach a sample size runs this much longer than the measured rate says.
EXTENSION_MARGIN = 1.1


def extension_s(probe: JudgedStep, step_time_s: float) -> float:
    """How long an inconclusive step runs on: until every undecided line has the values it needs
    to pass at all, at the step's measured rate (+10 %; between a quarter and four step times); a
    whole step time when it has them already (more requests narrow the intervals)."""
    window = probe.window_s or step_time_s
    longest = 0.0
    for term in probe.terms:
        need, have = needed_samples(term), term.n
        if term.verdict == Verdict.INCONCLUSIVE and need > have:
            longest = max(longest, (need - have) * window / max(have, 1) * EXTENSION_MARGIN)
    return step_time_s if longest == 0 else min(max(longest, step_time_s / 4), 4 * step_time_s)


#: A step short of the requests its SLO lines need runs on, up to this many step times in all.
MAX_WINDOW_STEPS = 4.0


def short_of_samples(probe: JudgedStep) -> bool:
    """Is ``probe`` inconclusive only because some line has fewer values than it needs to pass
    at all (a P95 from 40 requests, a 99 % success ratio from 300)?"""
    if probe.verdict != Verdict.INCONCLUSIVE or probe.unsettled:
        return False
    undecided = [t for t in probe.terms if t.verdict == Verdict.INCONCLUSIVE]
    return bool(undecided) and any(needed_samples(t) > t.n for t in undecided)


def sample_extension_s(probe: JudgedStep, step_time_s: float) -> float | None:
    """How long a step short of samples runs on before it is judged again: the time its short
    lines take to have the values they need (:func:`extension_s`), within ``MAX_WINDOW_STEPS``
    step times of window in all; ``None`` when it is not short of samples, or has had its time.
    This is not one of ``--search-extensions`` (those are for intervals that straddle a
    threshold): a step is never judged on fewer requests than its SLO needs while it may run on."""
    if not short_of_samples(probe):
        return None
    left = MAX_WINDOW_STEPS * step_time_s - (probe.window_s or 0.0)
    if left <= 0:
        return None
    return min(extension_s(probe, step_time_s), left)


def judge_step(entry: dict[str, Any], spec: SloSpec, extensions: int = 0, unsettled: int = 0) -> JudgedStep:
    """One search step from its stage ``entry``; ``unsettled``: requests of its window still in
    flight when it was judged."""
    terms = term_results(spec, entry["slo"])
    verdicts = [t.verdict for t in terms]
    completed, failed = entry.get("completed") or 0, entry.get("failed") or 0
    invalidity = None
    if entry.get("verdict") == Verdict.INVALID:
        verdict_, reason = Verdict.INVALID, entry.get("invalid_reason", "")
        invalidity = Invalidity.CLIENT if reason.startswith("client saturated") else Invalidity.LEVEL
    elif failed and not completed:
        errors = entry.get("errors") or {}
        most = max(errors.items(), key=lambda kv: kv[1], default=("error", failed))
        verdict_ = Verdict.FAIL
        reason = f"every request failed ({failed}; most often {most[0]} x{most[1]})"
    elif Verdict.FAIL in verdicts:
        verdict_, reason = Verdict.FAIL, term_reason(Verdict.FAIL, terms) or ""
    elif all(v == Verdict.PASS for v in verdicts):
        verdict_, reason = Verdict.PASS, ""
    else:
        verdict_, reason = Verdict.INCONCLUSIVE, term_reason(Verdict.INCONCLUSIVE, terms) or ""
    if unsettled and verdict_ == Verdict.PASS:
        verdict_ = Verdict.INCONCLUSIVE
        reason = f"{unsettled} requests of the step were still in flight when it was judged"
    law = entry.get("littles_law") or {}
    slo, window = entry["slo"], entry.get("window")
    return JudgedStep(
        index=entry["index"],
        label=entry["label"],
        level=entry["target"],
        verdict=verdict_,
        reason=reason,
        invalidity=invalidity,
        window=None if window is None else Window(start=window["start"], end=window["end"]),
        extensions=extensions,
        unsettled=unsettled,
        requests=slo["requests"],
        window_s=slo["duration_s"],
        request_throughput=entry["request_throughput"],
        output_throughput=entry["output_throughput"],
        goodput_rps=slo["goodput_rps"],
        goodput_output_tokens_per_s=slo["goodput_output_tokens_per_s"],
        mean_in_flight=law.get("mean_in_flight"),
        arrival_rate=law.get("arrival_rate"),
        median_tpot_ms=entry.get("median_tpot_ms"),
        p95_ttft_ms=entry.get("p95_ttft_ms"),
        p95_e2el_ms=entry.get("p95_e2el_ms"),
        completed=entry.get("completed"),
        failed=entry.get("failed"),
        # completed requests whose latencies were left out: the client stalled inside them
        client_stalled=entry.get("client_stalled"),
        terms=terms,
    )


#: A step whose load process stalled (its loop blocked: a pause of the process, swapping, a long
#: collection) for at least this share of its window is invalid. Its requests across the stall
#: are left out of its latencies, and those are the long ones, so the rest is no fair sample: a
#: 1.5-s SIGSTOP in a 5-s step was judged a pass or a fail on the others, or invalid, as the pause
#: fell against the health seconds (only a late p90 in 20 % of them counted).
STALLED_SHARE = 0.1


def gate(probe: JudgedStep, client: Mapping[str, Any] | None, step_time_s: float) -> JudgedStep:
    """``probe`` with the run's validity applied: ``invalid`` when the load generator was
    saturated or stalled over its window (``client``: :func:`~llm_locust.results.saturation.client_block`
    of the window; ``None`` when no health was measured), or when it is still short of the
    requests its SLO lines need and may not run on for them any longer. The verdict it had is
    kept in ``judged_as``."""
    out = (
        probe if client is None else probe.model_copy(update={"client": ClientHealth.model_validate(client)})
    )
    if out.verdict == Verdict.INVALID:
        return out
    invalid = {"judged_as": out.verdict, "verdict": Verdict.INVALID}
    if client is not None and client.get("saturated"):
        return out.model_copy(
            update={**invalid, "invalidity": Invalidity.CLIENT, "reason": saturated_reason(client)}
        )
    stall = float(client.get("stall_s") or 0.0) if client is not None else 0.0
    span = out.window.end - out.window.start if out.window is not None else step_time_s
    if stall > 0 and stall >= STALLED_SHARE * span:
        reason = (
            f"client stalled {stall:.1f} s of the step's {span:.0f} s (the load process did not run: "
            "paused, swapped out, a long collection): the requests across it are left out, the rest "
            "are no fair sample"
        )
        return out.model_copy(update={**invalid, "invalidity": Invalidity.CLIENT, "reason": reason})
    if short_of_samples(out) and sample_extension_s(out, step_time_s) is None:
        return out.model_copy(
            update={**invalid, "invalidity": Invalidity.SAMPLES, "reason": _too_few(out.reason)}
        )
    return out


def margin_key(term: SloTerm) -> float:
    """A term's margin for ordering (no margin: the lowest)."""
    return float(term.margin) if term.margin is not None else float("-inf")


def step_line(probe: JudgedStep) -> str:
    """A judged step in one line: ``users=32 fail (396 requests; e2e_p95 ...)``; an invalid one
    says its cause first, then what to do: ``users=32 invalid: host overloaded: ... (389 requests)``."""
    label, verdict, requests, reason = probe.label, probe.verdict, probe.requests, probe.reason
    if verdict == Verdict.INVALID and reason:
        return f"{label} invalid: {reason} ({requests} requests)"
    return f"{label} {verdict} ({requests} requests{f'; {reason}' if reason else ''})"
