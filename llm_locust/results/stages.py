"""Per-stage results and the capacity answer, from the records of a staged run.

Which records a stage's statistics cover: those sent in its *measured window*, from the
later of the end of its warm-up and the moment it reached its user count, to its end (or
the stop). Every other record stays in ``requests.jsonl`` and is counted under exactly one
exclusion (first match): ``incomplete`` (in flight when the load stopped), ``warmup`` (the
first ``--warmup`` seconds of a stage), ``rampup`` (sent before its stage reached its user
count).

Little's law per stage is measured over the same window from *every* record whose
``[start, start + e2e]`` overlaps it (warm-up, ramp-up and incomplete ones included: they
were in flight), so a steady closed-loop stage shows its user count as its mean in flight.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from llm_locust.load.stages import littles_law
from llm_locust.record import INCOMPLETE, RequestRecord
from llm_locust.results.slo import evaluate
from llm_locust.results.summary import inconclusive_reason, summarize
from llm_locust.results.validity import rate_validity, users_validity

__all__ = ["EXCLUSIONS", "capacity_verdict", "exclusion", "split_rows", "stage_summaries"]

#: Why a record is left out of the statistics, in order of precedence.
EXCLUSIONS = ("incomplete", "warmup", "rampup")


def exclusion(row: dict[str, Any]) -> str | None:
    """The reason ``row`` is left out of the statistics, or ``None`` if it is measured."""
    if row.get("outcome") == INCOMPLETE:
        return "incomplete"
    if row.get("warmup"):
        return "warmup"
    if row.get("rampup"):
        return "rampup"
    return None


def split_rows(rows: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """(measured rows, count per exclusion reason)."""
    counts: Counter[str] = Counter()
    measured = []
    for r in rows:
        why = exclusion(r)
        if why is None:
            measured.append(r)
        else:
            counts[why] += 1
    return measured, {k: counts.get(k, 0) for k in EXCLUSIONS}


def stage_summaries(
    plan: Any, t0: float, stop: float, rows: list[dict[str, Any]], slo: Any, levels: Any = None
) -> list[dict[str, Any]]:
    """Per stage: its plan, how it ran (levels, validity), the run-level keys over its
    measured window, Little's law over the same window, and the SLO verdict."""
    by_stage: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("stage") is not None:
            by_stage.setdefault(r["stage"], []).append(r)
    out = []
    for stage in plan.stages:
        begin = t0 + stage.start_s
        end = min(begin + stage.duration_s, stop)
        if end <= begin:
            break  # the run stopped before this stage began
        out.append(_stage_entry(stage, begin, end, by_stage.get(stage.index, []), rows, slo, levels))
    return out


def _stage_entry(
    stage: Any,
    begin: float,
    end: float,
    own: list[dict[str, Any]],
    rows: list[dict[str, Any]],
    slo: Any,
    levels: Any,
) -> dict[str, Any]:
    facts = levels.facts(stage.index) if levels is not None and stage.kind == "users" else {}
    start = begin + stage.warmup_s
    if facts.get("target_reached_s") is not None:
        start = max(start, begin + facts["target_reached_s"])
    start = min(start, end)
    measured, excluded = split_rows(own)
    window = max(end - start, 1e-9)
    entry = {**stage.to_json(), **summarize(measured, window), **facts}
    entry["incomplete"] = excluded["incomplete"]
    entry["excluded"] = excluded
    entry["span"] = {"start": begin, "end": end}
    entry["window"] = {"start": start, "end": end}
    if end > start:
        entry["littles_law"] = littles_law(_overlapping(rows, start, end), start, end, wall_clock=True)
    if stage.kind == "users":
        entry["invalid_reason"] = users_validity(stage, facts)
    else:
        entry.update(rate_validity(rows, start, end, stage, end - begin))
    entry["valid"] = entry["invalid_reason"] == ""
    if slo is not None:
        entry["slo"] = evaluate(slo, [_record(r) for r in measured], window).to_json()
    entry["verdict"] = _verdict(entry)
    return entry


def _verdict(entry: dict[str, Any]) -> str | None:
    if not entry["valid"]:
        return "invalid"
    if entry.get("slo") is None:
        return None
    return "pass" if entry["slo"]["passed"] else "fail"


def _record(row: dict[str, Any]) -> RequestRecord:
    rec = RequestRecord.from_json(row)
    rec.wall_start = row["start_time"]
    return rec


def _overlapping(rows: list[dict[str, Any]], start: float, end: float) -> list[RequestRecord]:
    """Records in flight at some point of ``[start, end]``, on the wall clock."""
    out = []
    for r in rows:
        e2e = r.get("e2e")
        if e2e is not None and r["start_time"] < end and r["start_time"] + e2e > start:
            out.append(_record(r))
    return out


def capacity_verdict(stages: list[dict[str, Any]]) -> dict[str, Any]:
    """The highest stage (in order, below the first that failed or was invalid) that met the SLO.

    An invalid stage (it did not run at its level) is not a pass: the search stops there,
    and the sentence says why, so "holds 16 users" is never read as "fails at 48". An
    inconclusive stage (too few requests, or an interval straddling a threshold: see
    :mod:`llm_locust.results.confidence`) is neither a pass nor a failure: the search goes on
    past it, and the sentence names the undecided stages above the answer and what they need.
    """
    judged = [(i, s) for i, s in enumerate(stages) if s.get("slo") is not None]
    if not judged:
        return {}
    best, stopper, undecided = None, None, []
    for i, stage in judged:
        verdict = stage.get("verdict")
        if verdict == "pass":
            best, undecided = i, []
        elif verdict in ("fail", "invalid"):
            stopper = stage
            break
        else:
            undecided.append(stage)
    if best is None:
        text = "no stage met the SLO"
    else:
        chosen = stages[best]
        text = (
            f"the system holds {chosen['label']} within the SLO "
            f"({chosen['request_throughput']:.2f} req/s, {chosen['output_throughput']:.0f} output tok/s)"
        )
    if undecided:
        text += f"; {undecided[0]['label']} is inconclusive ({inconclusive_reason(undecided[0])})"
        if len(undecided) > 1:
            text += f" and {len(undecided) - 1} more stage(s) above it"
    if stopper is not None and stopper.get("verdict") == "invalid":
        text += f"; {stopper['label']} did not run at its level ({stopper['invalid_reason']})"
    return {"highest_passing_stage": None if best is None else stages[best]["index"], "capacity": text}
