"""A capacity-search step judged, and the search's result as ``summary.json`` and the table show it.

A step is judged from its stage entry (:func:`llm_locust.results.stages.stage_entry`, the same
evaluation as every end-of-run stage verdict: the same measured window, the same SLO
aggregates, the same 95 % interval per SLO line and its verdict, :mod:`llm_locust.results.confidence`):

- ``invalid`` (:class:`Invalidity`): the run does not hold the step as a measurement: the stage
  did not run at its level (``results.validity``), the load generator was saturated or stalled
  over its window (``results.saturation``, :func:`gate`), or it still had too few requests for
  its SLO lines after running on for them. Neither a pass nor a fail: the search re-runs the
  level once, then withholds its answer (:func:`withheld_text`);
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
from enum import StrEnum
from typing import Any

from llm_locust.config.slo import SloLine, SloSpec
from llm_locust.load.search import NOT_PASSED, STOP_REASONS, SearchSpec, StopReason, Verdict
from llm_locust.results.confidence import min_samples, min_successes
from llm_locust.results.saturation import saturated_reason

__all__ = [
    "MAX_WINDOW_STEPS",
    "Invalidity",
    "deciding_steps",
    "extension_s",
    "gate",
    "judge_step",
    "needed_samples",
    "probe_row",
    "sample_extension_s",
    "search_result",
    "short_of_samples",
    "show_value",
    "term_results",
    "withheld_text",
]


class Invalidity(StrEnum):
    """Why the run does not hold a step as a measurement, and what to do about it."""

    LEVEL = "level"  # the level was not applied (users not reached, rate not sent)
    CLIENT = "client"  # the load generator was saturated or stalled over the window
    SAMPLES = "samples"  # too few requests for the SLO's lines, after running on for them


#: What to do, per :class:`Invalidity` (a saturated client's advice is in its reason).
REMEDY = {
    Invalidity.LEVEL: "add workers, or run on a quieter host",
    Invalidity.CLIENT: "",
    Invalidity.SAMPLES: "lengthen the step (--step-time)",
}


def show_value(name: str, value: float | None) -> str:
    """An SLO line's value in its unit: ``99.50 %`` for success, ``2.10 s`` or ``850 ms``."""
    if value is None:
        return "-"
    if name == "success":
        return f"{value * 100:.2f} %"
    return f"{value:.2f} s" if abs(value) >= 1 else f"{value * 1000:.0f} ms"


def _margin(line: SloLine, value: float | None) -> float | None:
    if value is None:
        return None
    if line.metric == "success":
        return (value - line.threshold) / (1 - line.threshold) if line.threshold < 1 else None
    return (line.threshold - value) / line.threshold if line.threshold > 0 else None


def _why(line: SloLine, n: int, interval: tuple[float | None, float | None]) -> str:
    lo, hi = interval
    if line.metric == "success":
        if lo is None:
            return "success: no requests"
        shown = f"{show_value('success', lo)}-{show_value('success', hi)}"
        below = show_value("success", line.threshold)
        return f"success: its interval {shown} reaches below {below} ({n} requests)"
    stat = line.stat or "max"
    if hi is None and stat.startswith("p") and 0 < float(stat[1:]) < 100:
        need = min_samples(float(stat[1:]) / 100.0)
        return f"{line.name}: {n} values cannot bound a {stat.upper()} from above (it needs {need})"
    if lo is None or hi is None:
        return f"{line.name}: {n} values give no interval"
    return (
        f"{line.name}: its interval {show_value(line.name, lo)}-{show_value(line.name, hi)} "
        f"straddles {show_value(line.name, line.threshold)}"
    )


def term_results(spec: SloSpec, slo_json: dict[str, Any]) -> list[dict[str, Any]]:
    """Per request SLO line: value, threshold, margin, and the 95 % interval, verdict and reason
    the stage's evaluation gave it (:func:`llm_locust.results.slo.evaluate`). Lines on the
    server's metrics or on drift need a run's series: a search step is judged without them."""
    out = []
    for line, judged in zip(spec.lines, slo_json["objectives"], strict=True):
        if judged.get("kind", "request") != "request":
            continue
        value, n = judged["measured"], judged["n"]
        interval = (judged["interval"][0], judged["interval"][1])
        term = judged["verdict"]
        note = judged.get("note") or ""
        why = (f"{line.name}: {note}" if note else _why(line, n, interval)) if term == "inconclusive" else ""
        out.append(
            {
                "objective": line.text,
                "name": line.name,
                "op": line.op,
                "threshold": line.threshold,
                "value": value,
                "margin": _margin(line, value),
                "interval": list(interval),
                "n": n,
                "verdict": term,
                "why": why,
            }
        )
    return out


def needed_samples(term: dict[str, Any]) -> int:
    """The fewest values with which ``term`` could pass at all (0: no such floor)."""
    name, threshold = term["name"], term["threshold"]
    if name == "success":
        return min_successes(threshold) if 0 < threshold < 1 and term["op"] == ">=" else 0
    stat = name.split("_")[1] if "_" in name else "max"
    if stat.startswith("p") and 0 < float(stat[1:]) < 100:
        return min_samples(float(stat[1:]) / 100.0)
    return 2 if stat == "mean" else 0


#: An extension to reach a sample size runs this much longer than the measured rate says.
EXTENSION_MARGIN = 1.1


def extension_s(probe: dict[str, Any], step_time_s: float) -> float:
    """How long an inconclusive step runs on: until every undecided line has the values it needs
    to pass at all, at the step's measured rate (+10 %; between a quarter and four step times); a
    whole step time when it has them already (more requests narrow the intervals)."""
    window = probe["window_s"] or step_time_s
    longest = 0.0
    for term in probe["terms"]:
        need, have = needed_samples(term), term["n"]
        if term["verdict"] == "inconclusive" and need > have:
            longest = max(longest, (need - have) * window / max(have, 1) * EXTENSION_MARGIN)
    return step_time_s if longest == 0 else min(max(longest, step_time_s / 4), 4 * step_time_s)


#: A step short of the requests its SLO lines need runs on, up to this many step times in all.
MAX_WINDOW_STEPS = 4.0


def short_of_samples(probe: dict[str, Any]) -> bool:
    """Is ``probe`` inconclusive only because some line has fewer values than it needs to pass
    at all (a P95 from 40 requests, a 99 % success ratio from 300)?"""
    if probe["verdict"] != "inconclusive" or probe.get("unsettled"):
        return False
    undecided = [t for t in probe["terms"] if t["verdict"] == "inconclusive"]
    return bool(undecided) and any(needed_samples(t) > t["n"] for t in undecided)


def sample_extension_s(probe: dict[str, Any], step_time_s: float) -> float | None:
    """How long a step short of samples runs on before it is judged again: the time its short
    lines take to have the values they need (:func:`extension_s`), within ``MAX_WINDOW_STEPS``
    step times of window in all; ``None`` when it is not short of samples, or has had its time.
    This is not one of ``--search-extensions`` (those are for intervals that straddle a
    threshold): a step is never judged on fewer requests than its SLO needs while it may run on."""
    if not short_of_samples(probe):
        return None
    left = MAX_WINDOW_STEPS * step_time_s - (probe["window_s"] or 0.0)
    if left <= 0:
        return None
    return min(extension_s(probe, step_time_s), left)


def judge_step(
    entry: dict[str, Any], spec: SloSpec, extensions: int = 0, unsettled: int = 0
) -> dict[str, Any]:
    """One search step from its stage ``entry``; ``unsettled``: requests of its window still in
    flight when it was judged."""
    terms = term_results(spec, entry["slo"])
    verdicts = [t["verdict"] for t in terms]
    completed, failed = entry.get("completed") or 0, entry.get("failed") or 0
    invalidity = None
    if entry.get("verdict") == "invalid":
        verdict_, reason = "invalid", entry.get("invalid_reason", "")
        invalidity = Invalidity.CLIENT if reason.startswith("client saturated") else Invalidity.LEVEL
    elif failed and not completed:
        errors = entry.get("errors") or {}
        most = max(errors.items(), key=lambda kv: kv[1], default=("error", failed))
        verdict_, reason = "fail", f"every request failed ({failed}; most often {most[0]} x{most[1]})"
    elif "fail" in verdicts:
        broke = min((t for t in terms if t["verdict"] == "fail"), key=_margin_key)
        verdict_, reason = (
            "fail",
            f"{broke['name']} {show_value(broke['name'], broke['value'])} misses {broke['objective']}",
        )
    elif all(v == "pass" for v in verdicts):
        verdict_, reason = "pass", ""
    else:
        verdict_, reason = "inconclusive", next(t["why"] for t in terms if t["verdict"] == "inconclusive")
    if unsettled and verdict_ == "pass":
        verdict_ = "inconclusive"
        reason = f"{unsettled} requests of the step were still in flight when it was judged"
    law = entry.get("littles_law") or {}
    slo = entry["slo"]
    return {
        "index": entry["index"],
        "label": entry["label"],
        "level": entry["target"],
        "verdict": Verdict(verdict_),
        "reason": reason,
        "invalidity": invalidity,
        "window": entry.get("window"),
        "extensions": extensions,
        "unsettled": unsettled,
        "requests": slo["requests"],
        "window_s": slo["duration_s"],
        "request_throughput": entry["request_throughput"],
        "output_throughput": entry["output_throughput"],
        "goodput_rps": slo["goodput_rps"],
        "goodput_output_tokens_per_s": slo["goodput_output_tokens_per_s"],
        "mean_in_flight": law.get("mean_in_flight"),
        "arrival_rate": law.get("arrival_rate"),
        "median_tpot_ms": entry.get("median_tpot_ms"),
        "p95_ttft_ms": entry.get("p95_ttft_ms"),
        "p95_e2el_ms": entry.get("p95_e2el_ms"),
        "completed": entry.get("completed"),
        "failed": entry.get("failed"),
        # completed requests whose latencies were left out: the client stalled inside them
        "client_stalled": entry.get("client_stalled"),
        "terms": terms,
    }


def gate(probe: dict[str, Any], client: Mapping[str, Any] | None, step_time_s: float) -> dict[str, Any]:
    """``probe`` with the run's validity applied: ``invalid`` when the load generator was
    saturated or stalled over its window (``client``: :func:`~llm_locust.results.saturation.client_block`
    of the window; ``None`` when no health was measured), or when it is still short of the
    requests its SLO lines need and may not run on for them any longer. The verdict it had is
    kept in ``judged_as``."""
    out = dict(probe)
    if client is not None:
        out["client"] = dict(client)
    if out["verdict"] == Verdict.INVALID:
        return out
    if client is not None and client.get("saturated"):
        out.update(judged_as=out["verdict"], verdict=Verdict.INVALID, invalidity=Invalidity.CLIENT)
        out["reason"] = saturated_reason(client)
    elif short_of_samples(out) and sample_extension_s(out, step_time_s) is None:
        out.update(judged_as=out["verdict"], verdict=Verdict.INVALID, invalidity=Invalidity.SAMPLES)
        out["reason"] = f"too few requests after {MAX_WINDOW_STEPS:g} step times ({out['reason']})"
    return out


def withheld_text(probes: Sequence[Mapping[str, Any]]) -> str:
    """The one line of a search that stopped on invalid steps: which level, why, what to do."""
    last = probes[-1]
    runs = sum(1 for p in probes if p["level"] == last["level"] and p["verdict"] == Verdict.INVALID)
    remedy = REMEDY.get(Invalidity(last.get("invalidity") or Invalidity.LEVEL), "")
    return (
        f"answer withheld: {last['label']} was invalid {runs} times, so no step above it can be "
        f"measured on this run: {last['reason']}" + (f"; {remedy}" if remedy else "")
    )


def deciding_steps(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The steps a search's answer rests on (the highest pass, the lowest step not shown to pass,
    the step at the demand), each with whether the run held it valid."""
    out: list[dict[str, Any]] = []
    for role, probe in (("capacity", result.get("highest_pass")), ("bound", result.get("upper"))):
        if probe is not None:
            out.append(_decider(role, probe))
    demand = result.get("demand_step")
    if demand is not None and all(d["index"] != demand["index"] for d in out):
        out.append(_decider("demand", demand))
    return out


def _decider(role: str, probe: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "role": role,
        "index": probe["index"],
        "label": probe["label"],
        "level": probe["level"],
        "verdict": probe["verdict"],
        "valid": probe["verdict"] != Verdict.INVALID,
        "requests": probe.get("requests"),
        "client_saturated": bool((probe.get("client") or {}).get("saturated")),
    }


def deciders_text(deciders: Sequence[Mapping[str, Any]]) -> str:
    """``decided by users=32 (pass, valid) and users=64 (fail, valid)``."""
    if not deciders:
        return ""
    shown = [f"{d['label']} ({d['verdict']}, {'valid' if d['valid'] else 'INVALID'})" for d in deciders]
    return "decided by " + (", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) > 1 else shown[0])


def _margin_key(term: dict[str, Any]) -> float:
    return term["margin"] if term["margin"] is not None else float("-inf")


def _lowest(probes: Sequence[dict[str, Any]], verdicts: tuple[str, ...]) -> dict[str, Any] | None:
    return min((p for p in probes if p["verdict"] in verdicts), key=lambda p: p["level"], default=None)


def search_result(
    spec: SearchSpec, probes: Sequence[dict[str, Any]], stop_reason: str | None, step_time_s: float
) -> dict[str, Any]:
    """The ``search`` block of ``summary.json``: the bracket, every probe, the stop reason.

    ``highest_pass``: the highest step shown to pass below ``upper``, the lowest step not shown
    to pass (a failure or a step that stayed inconclusive); ``lowest_fail``: the lowest failure.
    """
    upper = _lowest(probes, NOT_PASSED)
    lowest_fail = _lowest(probes, ("fail",))
    passes = [p for p in probes if p["verdict"] == "pass" and (upper is None or p["level"] < upper["level"])]
    highest_pass = max(passes, key=lambda p: p["level"]) if passes else None
    withheld = stop_reason == StopReason.INVALID
    if withheld:  # invalid twice: nothing of this run is read as a capacity
        highest_pass = None
    valid = [p for p in probes if p["verdict"] != Verdict.INVALID]
    at_demand = [p for p in valid if spec.demand is not None and p["level"] == spec.level_of_demand()]
    out: dict[str, Any] = {
        "kind": spec.kind,
        "min": spec.minimum,
        "max": spec.maximum,
        "precision": spec.precision,
        "max_steps": spec.max_steps,
        "max_extensions": spec.max_extensions,
        "step_time_s": step_time_s,
        "steps": list(probes),
        "highest_pass": highest_pass,
        "upper": upper,
        "lowest_fail": lowest_fail,
        "capacity": None if highest_pass is None else highest_pass["level"],
        "demand": spec.demand,
        "demand_step": at_demand[-1] if at_demand else None,
        "stop_reason": stop_reason,
        "stop": STOP_REASONS[StopReason(stop_reason)]
        if stop_reason
        else "the run ended before the search did",
        "broke_first": _broke_first(lowest_fail),
        "withheld": withheld_text(probes) if withheld and probes else None,
        "invalid_steps": sum(1 for p in probes if p["verdict"] == Verdict.INVALID),
    }
    out["decided_by"] = [] if withheld else deciding_steps(out)
    out["sentence"] = search_sentence(out)
    return out


def probe_row(probe: dict[str, Any]) -> dict[str, Any]:
    """One row of the live probe table (web UI): level, req/s, TTFT and E2E P95 (s), success
    ratio, verdict, the SLO term that decided a step not shown to pass and why, and how often the
    step ran on (for samples, ``runs_on``; straddling, ``extensions``)."""
    completed, failed = probe.get("completed") or 0, probe.get("failed") or 0
    term = ""
    if probe["verdict"] == "fail":
        term = _broke_first(probe) or ""
    elif probe["verdict"] == "inconclusive":
        term = next((t["name"] for t in probe["terms"] if t["verdict"] == "inconclusive"), "")
    return {
        "label": probe["label"],
        "level": probe["level"],
        "phase": probe.get("phase", ""),
        "requests": probe["requests"],
        "request_throughput": probe["request_throughput"],
        "ttft_p95_s": _seconds(probe.get("p95_ttft_ms")),
        "e2e_p95_s": _seconds(probe.get("p95_e2el_ms")),
        "success": completed / (completed + failed) if completed + failed else None,
        "verdict": probe["verdict"],
        "term": term,
        "reason": probe["reason"],
        "runs_on": probe.get("sample_extensions", 0),
        "extensions": probe["extensions"],
    }


def _seconds(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000.0


def _broke_first(probe: dict[str, Any] | None) -> str | None:
    if probe is None:
        return None
    failing = [t for t in probe["terms"] if t["verdict"] == "fail"]
    return min(failing, key=_margin_key)["name"] if failing else None


def _level(kind: str, level: float) -> str:
    if kind == "users":
        return "1 user" if level == 1 else f"{int(level)} users"
    return f"{level:g} req/s"


def search_sentence(result: dict[str, Any]) -> str:
    """ "capacity 24 users within the SLO (1.89 req/s, 410 output tok/s); 28 users fails:
    e2e_p95 34.6 s misses e2e_p95<=30s; stopped: ..."."""
    kind, best, upper = result["kind"], result["highest_pass"], result["upper"]
    if result.get("withheld"):
        return str(result["withheld"])
    if best is None:
        text = "no search step was shown to meet the SLO"
    else:
        text = (
            f"capacity {_level(kind, best['level'])} within the SLO ({best['request_throughput']:.2f} req/s, "
            f"{best['output_throughput']:.0f} output tok/s)"
        )
    if upper is not None:
        word = "fails" if upper["verdict"] == "fail" else "is inconclusive"
        text += f"; {_level(kind, upper['level'])} {word}: {upper['reason']}"
    decided = deciders_text(result.get("decided_by") or ())
    if decided:
        text += f"; {decided}"
    return f"{text}; stopped: {result['stop']}"
