"""The end of a run: ``summary.json`` from the records on disk and the facts of the run.

The summary is computed from ``requests.jsonl``, read once row by row into columns
(:func:`~llm_locust.results.columns.read_columns`: memory grows by about 100 bytes a record,
not with the rows' size), and from :class:`RunFacts`: when the test ran, its stages and
their level samples, the SLO, the drain, and the ``config`` block (target, model, users, the
options used, never the API key, the load generator's CPU). The statistics cover the
measured records; the others are counted under ``excluded`` (see
:mod:`llm_locust.results.stages`).

The same function serves a finished run (:mod:`llm_locust.runtime`) and a rebuilt one
(:mod:`llm_locust.results.rebuild`, ``llm-locust summarize DIR``). Pure module: no Locust,
no network.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from llm_locust.config.demand import Demand
from llm_locust.config.jsontypes import JsonObject
from llm_locust.config.model import RunConfig
from llm_locust.config.slo import SloSpec
from llm_locust.load.search import SearchSpec
from llm_locust.load.stages import StagePlan
from llm_locust.results.accuracy import input_length_error
from llm_locust.results.analysis import analyse_timeline
from llm_locust.results.capacity import concurrency_block, demand_block, replica_block, stage_probes
from llm_locust.results.columns import Columns, read_rows
from llm_locust.results.concurrency import peak_in_flight
from llm_locust.results.ending import EndCause, interruption_block
from llm_locust.results.inclusion import Coverage, measured_span, row_covers
from llm_locust.results.saturation import Interval, client_block, judge_stages, run_saturation
from llm_locust.results.search_log import align_stages
from llm_locust.results.search_model import SearchResult
from llm_locust.results.slo import evaluate
from llm_locust.results.stages import LevelFacts, capacity_verdict, excluded_counts, stage_summaries
from llm_locust.results.summary import records_block, summarize
from llm_locust.results.summary_model import RunSummary
from llm_locust.results.timeline import Timeline
from llm_locust.results.validity import MAX_SEND_LAG_MS

__all__ = [
    "LOCUST_OPTIONS",
    "NOTHING_RECORDED",
    "NOTHING_RECORDED_EXIT",
    "REFUSED_EXIT",
    "SLO_FAILED_EXIT",
    "WITHHELD_EXIT",
    "RunFacts",
    "add_analysis",
    "add_replicas",
    "build_summary",
    "exit_code",
    "nothing_recorded",
    "nothing_recorded_line",
    "options_block",
    "warnings",
]

#: Bad input: a flag's value, a file, a combination the run cannot honour (one line, no load).
#: It stands over every exit code the summary would give (the refused test recorded nothing).
REFUSED_EXIT = 2
SLO_FAILED_EXIT = 3
#: A capacity search that withheld its answer: a step was invalid twice (see load/search.py).
WITHHELD_EXIT = 6
#: A test that ended with not one request recorded (none sent, or none reached the results: a
#: master whose workers never sent, or whose rows never arrived): it measured nothing.
NOTHING_RECORDED_EXIT = 7
NOTHING_RECORDED = "no request was recorded: the run measured nothing"
#: Locust's own options worth recording next to ours (``-u``, ``-r``, ``-t`` are in the configuration).
LOCUST_OPTIONS = (
    "headless",
    "expect_workers",
    "processes",
    "stop_timeout",
    "locustfile",
)


class SearchFacts(Protocol):
    """A capacity search as the summary reads it: the run's driver
    (:class:`llm_locust.runtime.search.SearchDriver`) or one rebuilt from ``search.json``
    (:class:`llm_locust.results.search_log.RecordedSearch`)."""

    @property
    def spec(self) -> SearchSpec: ...

    def stage_entries(
        self, cols: Columns, stop: float, slo: SloSpec | None, levels: LevelFacts | None
    ) -> list[dict[str, Any]]: ...

    def result(self) -> SearchResult: ...


@dataclass
class RunFacts:
    """What the summary needs besides the records: when and how the test ran."""

    start_time: float
    stop_time: float
    stages: StagePlan | None = None
    t0: float | None = None  # the plan's start (wall clock), with stages
    slo: SloSpec | None = None
    levels: LevelFacts | None = None
    drain: JsonObject | None = None
    interrupted: str | None = None  # what stopped the run, in one line (a signal's name)
    interrupt_cause: EndCause | None = None  # ... typed, and when (Unix time)
    interrupted_at: float | None = None
    planned_s: float | None = None  # the test's planned span (-t, the stages' end; None: open-ended)
    length_policy: str | None = None  # what the workload's length guard did, if anything
    config: JsonObject = field(default_factory=dict)
    window_s: float | None = None  # --window (None: auto)
    detailed: bool = False  # --save-detailed
    health: Sequence[Interval] = ()  # the client's health intervals (llm_locust.client.health)
    search: SearchFacts | None = None  # a capacity search's driver (runtime.search), or one rebuilt
    peak_users: int = 0
    think_mean_s: float = 0.0  # --think-time's mean
    demand: Demand | None = None
    percentiles: tuple[float, ...] = ()  # --percentiles (besides the standard ones)


def build_summary(cols: Columns, facts: RunFacts) -> dict[str, Any]:
    """The summary of every record of a test (``cols``) that ran as ``facts`` say."""
    measured = cols.measured_part()
    staged = facts.stages is not None and facts.t0 is not None
    stages: list[dict[str, Any]] | None = None
    if staged and facts.search is not None:  # a search's steps over the windows they were judged on
        stages = facts.search.stage_entries(cols, facts.stop_time, facts.slo, facts.levels)
    elif staged:
        assert facts.stages is not None and facts.t0 is not None
        stages = stage_summaries(facts.stages, facts.t0, facts.stop_time, cols, facts.slo, facts.levels)
    windows = None if stages is None else [(s["window"]["start"], s["window"]["end"]) for s in stages]
    # a staged test began at its plan's start (the shape's first tick, before Locust's test_start)
    began = min(facts.start_time, facts.t0) if staged and facts.t0 is not None else facts.start_time
    span = measured_span(windows, began, facts.stop_time)
    summary = summarize(measured, span["seconds"], facts.percentiles)
    if facts.percentiles:
        summary["percentiles"] = list(facts.percentiles)
    summary["measured_span"] = span
    summary["records"] = records_block(cols)  # every record: what the live view and exporter count
    excluded = excluded_counts(cols.part())
    summary["incomplete"] = excluded["incomplete"]
    summary["max_concurrent_requests"] = peak_in_flight(cols.start, cols.e2e)  # every request was in flight
    summary["excluded"] = excluded
    summary["warmup_requests"] = int(cols.warmup.sum())
    summary["rampup_requests"] = int(cols.rampup.sum())
    summary["length_accuracy"] = input_length_error(measured)
    if facts.length_policy:
        summary["length_policy"] = facts.length_policy
    if facts.slo is not None:
        summary["slo"] = evaluate(facts.slo, measured, summary["duration"]).to_json()
    if summary.get("p99_send_lag_ms") is not None:
        summary["generator_lagging"] = summary["p99_send_lag_ms"] > MAX_SEND_LAG_MS
    if stages is not None:
        summary["stages"] = stages
    search = facts.search.result() if stages is not None and facts.search is not None else None
    if search is not None:
        summary["search"] = search.to_json()
        summary["capacity"] = search.sentence
        summary["highest_passing_stage"] = None if search.highest_pass is None else search.highest_pass.index
    if facts.health:  # before the capacity answer: a saturated client's stage is never it
        summary["client"] = client_block(facts.health, facts.start_time, facts.stop_time)
        summary["client_saturated"] = run_saturation(
            summary["client"], judge_stages(summary.get("stages") or [], facts.health)
        )
    if search is not None:  # the stage table says what the search judged
        align_stages(summary.get("stages") or [], search.steps)
    if summary.get("stages") and search is None:  # a search's answer is its own
        summary.update(capacity_verdict(summary["stages"]))
    summary["concurrency"] = concurrency_block(
        cols, facts.start_time, facts.stop_time, facts.peak_users, facts.think_mean_s
    )
    if facts.demand is not None:
        summary["demand"] = demand_block(
            facts.demand,
            search.steps if search is not None else stage_probes(summary.get("stages") or []),
            facts.search.spec.kind if facts.search else None,
            withheld=None if search is None else search.withheld,
            by_level=search is not None and search.demand is not None,
        ).to_json()
    summary["interrupted"] = facts.interrupted is not None
    summary["interrupted_by"] = facts.interrupted
    if facts.interrupted is not None and facts.interrupt_cause is not None:
        at = facts.interrupted_at if facts.interrupted_at is not None else facts.stop_time
        summary["interruption"] = interruption_block(
            facts.interrupt_cause, at, facts.start_time, facts.planned_s, span["seconds"]
        ).to_json()
    summary["drain"] = dict(facts.drain) if facts.drain is not None else None
    summary["config"] = facts.config
    return summary


def add_analysis(
    summary: dict[str, Any], cols: Columns, facts: RunFacts, directory: Path | None, requests: Path
) -> str | None:
    """Windows, drift, series SLO lines, honest stage verdicts, vLLM keys
    (:mod:`llm_locust.results.analysis`) on the columns, then the capacity answer again on
    those verdicts. Never loses the summary: a failure is returned as one sentence."""

    def measured_rows() -> Iterator[dict[str, Any]]:  # --save-detailed only: read again, row by row
        return (row for row in read_rows(requests) if row_covers(Coverage.REQUESTS, row))

    try:
        analyse_timeline(
            summary,
            Timeline.from_columns(cols),
            measured_rows,
            directory,
            facts.slo,
            window_s=facts.window_s,
            detailed=facts.detailed,
        )
    except Exception as exc:  # the summary is written whatever goes wrong here
        return f"time windows and drift left out of the summary: {exc}"
    if summary.get("stages") and summary.get("search") is None:  # a search's answer is its own
        summary.update(capacity_verdict(summary["stages"]))
    return None


def add_replicas(summary: dict[str, Any], requests: Path) -> None:
    """Per replica of ``--endpoints`` (the measured rows, read again row by row)."""
    summary["replicas"] = replica_block(read_rows(requests))


def exit_code(summary: RunSummary, interrupt_code: int | None) -> int | None:
    """Interrupted: its code (128 + the signal: 130 SIGINT, 143 SIGTERM; 4 every request failed;
    8 a master's load ended early), except that a load that ended early with not one request
    recorded is 7, as is any other run that recorded none. A capacity search: 0 when it found a
    capacity (meeting ``--demand`` if given), else 3. Else, with an SLO, the verdict: 0 pass, 3
    fail. ``None``: leave Locust's own."""
    early = summary.interruption is not None and summary.interruption.early
    if interrupt_code is not None and not (early and nothing_recorded(summary)):
        return interrupt_code
    if nothing_recorded(summary):
        return NOTHING_RECORDED_EXIT
    if summary.search is not None:  # the search's answer, not the SLO over every level
        if summary.search.withheld:
            return WITHHELD_EXIT
        meets = summary.demand is None or summary.demand.meets is not False
        return 0 if summary.search.passed and meets else SLO_FAILED_EXIT
    if summary.slo is not None:
        return 0 if summary.slo.passed else SLO_FAILED_EXIT
    return None


def nothing_recorded(summary: RunSummary) -> bool:
    """Did the test end without one record (of any outcome)? (A summary written before the
    ``records`` block existed says nothing here.)"""
    return summary.records is not None and summary.records.total == 0


def nothing_recorded_line(summary: RunSummary) -> str:
    """:data:`NOTHING_RECORDED`, with what a master knows of why: the workers Locust counted
    missing (no heartbeat for 3 s: a worker stopped, or starved of CPU on a busy host)."""
    missing = summary.config.workers_missing
    if not missing:
        return NOTHING_RECORDED
    return (
        f"{NOTHING_RECORDED}: the master counted {len(missing)} worker(s) missing (no heartbeat for "
        f"3 s: stopped, or starved of CPU on a busy host) and still missing when the test ended: "
        f"{', '.join(map(str, missing))}"
    )


def warnings(summary: RunSummary) -> list[str]:
    """What the end of a run warns about: no record at all, a lagging generator, a saturated
    client CPU."""
    out = [nothing_recorded_line(summary)] if nothing_recorded(summary) else []
    if summary.generator_lagging:
        out.append(
            "the load generator fell behind its arrival schedule "
            f"(send lag p99 {summary.p99_send_lag_ms or 0:.0f} ms): results understate the load; add workers"
        )
    if summary.client_saturated:
        out.append(summary.client_saturated)
    if summary.config.client_cpu_saturated:
        out.append(
            f"the load generator's CPU saturated (peak {summary.config.client_cpu_peak_percent or 0:.0f}%): "
            "token timestamps may be late; add workers"
        )
    return out


def options_block(config: RunConfig, options: Mapping[str, Any]) -> dict[str, Any]:
    """Every llm-locust option as the run used it (typed, secrets left out, ``Authorization``-like
    header values redacted), plus a few of Locust's own (``options``: Locust's parsed values)."""
    out = config.options()
    out.update({name: options[name] for name in LOCUST_OPTIONS if name in options})
    return dict(sorted(out.items()))
