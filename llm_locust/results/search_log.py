"""A capacity search's steps on disk (``search.json``), and the search rebuilt from them.

The search decides as it goes (``runtime/search.py``); what it decided on is written to the
results folder after every judgment, so ``llm-locust summarize DIR`` can rebuild the
``search`` block from ``requests.jsonl`` exactly, even when the run died before its summary:

- the search's options (kind, minimum, maximum, precision, step limit, extensions), its step
  time and the plan's start ``t0``;
- per step, its last judgment: the step's stage as the plan held it then (start, duration up to
  the window's end, warm-up), when its level was applied, the window's end, the extensions
  spent and the run-ons for samples, the requests still in flight when it was judged, the
  level facts the judgment read (``target_reached_s``, ``time_at_target_s``, ``peak_users``),
  when it was judged, and the verdict and request count the run saw;
- the stop reason, once the search stopped.

A step is judged on the records the search had received when it judged it: the records of its
own stage and of the one before it (the driver keeps no older ones; only the in-flight overlap
at a window's start can reach back that far), each cut to :data:`JUDGED_FIELDS`. The rebuild
takes the same records from ``requests.jsonl`` (they carry their stage); where the run judged a
step with requests of its window still in flight, it also leaves out the records that ended
after the judgment (start + E2E). Each rebuilt probe's verdict and request count are compared
with the recorded ones; a difference is listed in the block's ``rebuilt.mismatches`` (never
silently replaced), and the decisions stay the ones the run took.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from llm_locust.config.slo import SloSpec
from llm_locust.load.search import Phase, SearchSpec, Verdict
from llm_locust.load.stages import Stage
from llm_locust.results.columns import Columns
from llm_locust.results.inclusion import FIELDS as INCLUSION_FIELDS
from llm_locust.results.probe import gate, judge_step
from llm_locust.results.search_model import JudgedStep, Rebuilt, SearchLog, SearchResult, StepRecord
from llm_locust.results.search_model import LevelFacts as StepLevels
from llm_locust.results.search_result import search_result
from llm_locust.results.slo import itl_stats_of
from llm_locust.results.stages import KnownLevels, LevelFacts, stage_entry
from llm_locust.results.writer import SEARCH_FILE

__all__ = [
    "JUDGED_FIELDS",
    "KEPT_STAGES",
    "SEARCH_FILE",
    "SEARCH_FORMAT",
    "RecordedSearch",
    "SearchLog",
    "align_stages",
    "judge_rows",
    "judged_row",
    "search_log",
    "search_stage_entries",
    "step_record",
]

SEARCH_FORMAT = 1
#: A step is judged on the records of its own stage and of this many stages before it.
KEPT_STAGES = 1
#: The fields of a record a step's judgment reads (the rest is not kept in memory): every field
#: the inclusion rule reads (:data:`llm_locust.results.inclusion.FIELDS`), so a step and its
#: stage cover the same records, and the values judged.
JUDGED_FIELDS = (
    *INCLUSION_FIELDS,
    "request_id",
    "start_time",
    "ttft",
    "tpot",
    "e2e",
    "itl",
    "completion_tokens",
    "prompt_tokens",
    "target_input_tokens",
    "send_lag",
    "intended_offset",
    "waited_for_slot",
    "token_source",
)
_LEVEL_FACTS = ("peak_users", "target_reached_s", "time_at_target_s")


def judged_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` cut to the fields a judgment reads."""
    return {k: row[k] for k in JUDGED_FIELDS if k in row}


def judge_rows(
    rows: Iterable[Mapping[str, Any]],
    stage: Stage,
    begin: float,
    window_end: float,
    slo: SloSpec,
    levels: LevelFacts | None,
    step: Mapping[str, Any],
) -> JudgedStep:
    """The probe of a search step whose stage is ``stage`` (beginning at ``begin``, its window
    ending at ``window_end``) over ``rows``; ``step``: its ``extensions``, ``unsettled``,
    ``phase`` and ``sample_extensions``."""
    cols = Columns.from_rows(rows, itl_stats_of(slo))
    entry = stage_entry(stage, begin, window_end, cols, slo, levels)
    probe = judge_step(entry, slo, step["extensions"], step["unsettled"])
    phase = step["phase"]
    return probe.model_copy(
        update={
            "phase": None if phase is None else Phase(phase),
            "sample_extensions": step["sample_extensions"],
            "level_facts": StepLevels(**{k: entry.get(k) for k in _LEVEL_FACTS if k in entry}),
        }
    )


def step_record(
    stage: Stage,
    begin: float,
    applied: float,
    window_end: float | None,
    probe: JudgedStep | None = None,
    judged_at: float | None = None,
) -> dict[str, Any]:
    """What ``search.json`` keeps of a step: its stage as the plan holds it now, and its last
    judgment (``None`` fields before it is judged)."""
    facts = None if probe is None else probe.level_facts
    client = None if probe is None else probe.client
    return {
        "index": stage.index,
        "level": stage.target,
        "phase": None if probe is None else probe.phase,
        "stage": stage.to_json(),
        "begin": begin,
        "applied": applied,
        "window_end": window_end,
        "extensions": None if probe is None else probe.extensions,
        "sample_extensions": None if probe is None else probe.sample_extensions,
        "unsettled": None if probe is None else probe.unsettled,
        "level_facts": {} if facts is None else facts.to_json(),
        "judged_at": judged_at,
        "verdict": None if probe is None else probe.verdict,
        "reason": None if probe is None else probe.reason,
        "client": None if client is None else client.to_json(),
        "requests": None if probe is None else probe.requests,
    }


def search_log(
    spec: SearchSpec,
    step_time_s: float,
    t0: float,
    steps: Sequence[Mapping[str, Any]],
    stop_reason: str | None,
) -> SearchLog:
    """The content of ``search.json``."""
    return SearchLog.model_validate(
        {
            "format": SEARCH_FORMAT,
            "spec": {
                "kind": spec.kind,
                "minimum": spec.minimum,
                "maximum": spec.maximum,
                "precision": spec.precision,
                "max_steps": spec.max_steps,
                "max_extensions": spec.max_extensions,
                "demand": spec.demand,
                "max_reruns": spec.max_reruns,
                "settled_precision": spec.settled_precision,
            },
            "step_time_s": step_time_s,
            "t0": t0,
            "steps": list(steps),
            "stop_reason": stop_reason,
        }
    )


def search_stage_entries(
    steps: Sequence[tuple[Stage, float, float | None]],
    cols: Columns,
    stop: float,
    slo: SloSpec | None,
    levels: LevelFacts | None,
) -> list[dict[str, Any]]:
    """The end-of-run stage table of a search: each step ``(stage, begin, window end)`` over the
    window it was judged on, the step running at the stop up to the stop. Validity counts the
    time at the level over the whole stage, settle included."""
    out = []
    for stage, begin, window_end in steps:
        end = min(window_end if window_end is not None else stop, stop)
        if end <= begin:
            break
        if window_end is None or window_end > stop:
            stage = replace(stage, duration_s=stop - begin)
        out.append(stage_entry(stage, begin, end, cols, slo, levels))
    return out


def align_stages(stages: Sequence[dict[str, Any]], probes: Sequence[JudgedStep]) -> None:
    """The stage table of a search agrees with its steps: a step the search held invalid (its
    client saturated over the window, too few requests) is invalid in the table too, with the
    same reason; a stage the table holds invalid that the search judged otherwise (health that
    arrived after the judgment) says so in ``search_verdict``."""
    by_index = {p.index: p for p in probes}
    for stage in stages:
        probe = by_index.get(stage.get("index", -1))
        if probe is None:
            continue
        if probe.verdict == Verdict.INVALID and stage.get("verdict") != "invalid":
            stage.update(verdict="invalid", valid=False, invalid_reason=probe.reason)
        elif stage.get("verdict") == "invalid" and probe.verdict != Verdict.INVALID:
            stage["search_verdict"] = probe.verdict


class RecordedSearch:
    """A search rebuilt from ``search.json`` and the records of ``requests.jsonl``: the same
    ``spec``, ``stage_entries`` and ``result`` as the run's driver, for the summary's builder."""

    def __init__(
        self, log: SearchLog, rows: Sequence[Mapping[str, Any]], slo: SloSpec, compare: bool = True
    ) -> None:
        spec = log.spec
        self.spec = SearchSpec(
            spec.kind,
            spec.minimum,
            spec.maximum,
            spec.precision,
            spec.max_steps,
            spec.max_extensions,
            demand=spec.demand,
            max_reruns=spec.max_reruns,
            settled_precision=spec.settled_precision,
        )
        self.step_time = log.step_time_s
        self.stop_reason: str | None = log.stop_reason
        self.records = list(log.steps)
        self.mismatches: list[str] = []
        self.compare = compare
        kept = [judged_row(r) for r in rows if r.get("stage") is not None]
        self.probes = [self._probe(step, kept, slo) for step in self.records if step.verdict is not None]

    def _probe(self, step: StepRecord, rows: Sequence[Mapping[str, Any]], slo: SloSpec) -> JudgedStep:
        index, judged_at = step.index, step.judged_at
        mine = [r for r in rows if index - KEPT_STAGES <= r["stage"] <= index]
        if step.unsettled and judged_at is not None:
            mine = [r for r in mine if r["start_time"] + (r.get("e2e") or 0.0) <= judged_at]
        levels = KnownLevels({index: step.level_facts.to_json()})
        window_end = step.window_end if step.window_end is not None else step.begin
        stage = replace(Stage.of(step.stage), duration_s=window_end - step.begin)
        how = {
            "extensions": step.extensions or 0,
            "unsettled": step.unsettled or 0,
            "phase": step.phase,
            "sample_extensions": step.sample_extensions or 0,
        }
        probe = judge_rows(mine, stage, step.begin, window_end, slo, levels, how)
        client = None if step.client is None else step.client.to_json()
        probe = gate(probe, client, self.step_time)  # the health the run judged it with
        recorded = {"verdict": step.verdict, "requests": step.requests}
        for key in ("verdict", "requests") if self.compare else ():
            if getattr(probe, key) != recorded[key]:
                shown = f"{key} {getattr(probe, key)!r} rebuilt, {recorded[key]!r} in the run"
                self.mismatches.append(f"step {index + 1} ({probe.label}): {shown}")
        return probe

    def stage_entries(
        self, cols: Columns, stop: float, slo: SloSpec | None, levels: LevelFacts | None
    ) -> list[dict[str, Any]]:
        """Each step's stage as the plan ended up holding it: up to the next step's start (its
        settle ran at its level), the last one as recorded."""
        steps = []
        for step, after in zip(self.records, [*self.records[1:], None], strict=True):
            stage = Stage.of(step.stage)
            if after is not None:
                stage = replace(stage, duration_s=after.begin - step.begin)
            steps.append((stage, step.begin, step.window_end))
        return search_stage_entries(steps, cols, stop, slo, levels)

    def result(self) -> SearchResult:
        out = search_result(self.spec, self.probes, self.stop_reason, self.step_time)
        out.passed = out.capacity is not None and self.stop_reason is not None
        out.rebuilt = Rebuilt(
            **{"from": SEARCH_FILE}, mismatches=list(self.mismatches)
        )  # a keyword: by its alias
        return out
