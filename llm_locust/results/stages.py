"""Per-stage results and the capacity answer, from the records of a staged run.

Which records a stage's statistics cover: those sent in its *measured window*, from the
later of the end of its warm-up and the moment it reached its user count, to its end (or
the stop), as the one inclusion rule says (:mod:`llm_locust.results.inclusion`: the others
are counted under one exclusion each; latencies leave out the requests the client stalled
inside).

Little's law per stage is measured over the same window from *every* record whose
``[start, start + e2e]`` overlaps it (warm-up, ramp-up and incomplete ones included: they
were in flight), so a steady closed-loop stage shows its user count as its mean in flight.
Everything reads the records' columns (:mod:`llm_locust.results.columns`).

Pure module: no Locust, no network.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from llm_locust.config.slo import SloSpec
from llm_locust.config.stage_kind import StageKind
from llm_locust.load.search import Verdict
from llm_locust.load.stages import Stage
from llm_locust.results.columns import EXCLUSIONS, Columns, Part
from llm_locust.results.concurrency import littles_law
from llm_locust.results.saturation import advice
from llm_locust.results.slo import evaluate, itl_stats_of
from llm_locust.results.summary import summarize
from llm_locust.results.summary_blocks import Slo
from llm_locust.results.summary_text import inconclusive_reason
from llm_locust.results.validity import rate_validity, users_validity

__all__ = [
    "EXCLUSIONS",
    "KnownLevels",
    "LevelFacts",
    "capacity_verdict",
    "excluded_counts",
    "stage_entry",
    "stage_summaries",
]


class LevelFacts(Protocol):
    """What the samples of the user count showed for a ``users`` stage: a
    :class:`~llm_locust.load.levels.LevelTracker`, or :class:`KnownLevels` (a rebuilt summary)."""

    def facts(self, index: int) -> Mapping[str, Any] | None: ...


class KnownLevels:
    """Level facts as saved while the run ran; a stage without them cannot be judged (``None``)."""

    def __init__(self, facts: Mapping[int, Mapping[str, Any]]) -> None:
        self._facts = dict(facts)

    def facts(self, index: int) -> Mapping[str, Any] | None:
        return self._facts.get(index)


def excluded_counts(part: Part) -> dict[str, int]:
    """How many rows of ``part`` each exclusion reason leaves out."""
    return {why: int((part.mask & part.cols.excluded_as(why)).sum()) for why in EXCLUSIONS}


def stage_summaries(
    plan: Iterable[Stage],
    t0: float,
    stop: float,
    rows: Columns | Iterable[Mapping[str, Any]],
    slo: SloSpec | None,
    levels: LevelFacts | None = None,
) -> list[dict[str, Any]]:
    """Per stage: its plan, how it ran (levels, validity), the run-level keys over its
    measured window, Little's law over the same window, and the SLO verdict."""
    cols = rows if isinstance(rows, Columns) else Columns.from_rows(rows, itl_stats_of(slo))
    out = []
    for stage in plan:
        begin = t0 + stage.start_s
        end = min(begin + stage.duration_s, stop)
        if end <= begin:
            break  # the run stopped before this stage began
        out.append(stage_entry(stage, begin, end, cols, slo, levels))
    return out


def _facts(stage: Stage, levels: LevelFacts | None) -> Mapping[str, Any] | None:
    if stage.kind is not StageKind.USERS or levels is None:
        return {}
    return levels.facts(stage.index)


def stage_entry(
    stage: Stage, begin: float, end: float, cols: Columns, slo: SloSpec | None, levels: LevelFacts | None
) -> dict[str, Any]:
    facts = _facts(stage, levels)
    start = begin + stage.warmup_s
    if facts and facts.get("target_reached_s") is not None:
        start = max(start, begin + facts["target_reached_s"])
    start = min(start, end)
    own = cols.part(stage.index)
    measured = cols.measured_part(stage.index)
    window = max(end - start, 1e-9)
    entry = {**stage.to_json(), **summarize(measured, window), **(facts or {})}
    excluded = excluded_counts(own)
    entry["incomplete"] = excluded["incomplete"]
    entry["excluded"] = excluded
    entry["span"] = {"start": begin, "end": end}
    entry["window"] = {"start": start, "end": end}
    if end > start:
        entry["littles_law"] = littles_law(cols.start, cols.e2e, start, end)
    if stage.kind is StageKind.USERS:
        entry["invalid_reason"] = users_validity(stage, facts)
    else:
        entry.update(rate_validity(cols, start, end, stage, end - begin))
    entry["valid"] = entry["invalid_reason"] == ""
    if slo is not None:
        entry["slo"] = evaluate(slo, measured, window).to_json()
    entry["verdict"] = _verdict(entry)
    return entry


def _verdict(entry: dict[str, Any]) -> Verdict | None:
    if not entry["valid"]:
        return Verdict.INVALID
    if entry.get("slo") is None:
        return None
    return Verdict.PASS if entry["slo"]["passed"] else Verdict.FAIL


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
    best, stopper = None, None
    undecided: list[dict[str, Any]] = []
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
        slo = undecided[0].get("slo")
        why = inconclusive_reason(None if slo is None else Slo.model_validate(slo))
        text += f"; {undecided[0]['label']} is inconclusive ({why})"
        if len(undecided) > 1:
            text += f" and {len(undecided) - 1} more stage(s) above it"
    if stopper is not None and (stopper.get("client") or {}).get("saturated"):
        text += f"; client saturated from {stopper['label']}: {advice(stopper['client'])}"
    elif stopper is not None and stopper.get("verdict") == "invalid":
        text += f"; {stopper['label']} did not run at its level ({stopper['invalid_reason']})"
    return {"highest_passing_stage": None if best is None else stages[best]["index"], "capacity": text}
