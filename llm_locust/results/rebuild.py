"""``run.json`` and ``llm-locust summarize DIR``: a summary rebuilt from the files on disk.

A master killed with SIGKILL (the OOM killer, a node lost) writes no ``summary.json``; its
``requests.jsonl`` holds every record received until then (flushed per record). The run's
context is in ``run.json``, written when the test started and again whenever a stage
ended (its level samples, known only to the master, go with it), and the load processes'
health intervals in ``health.jsonl`` (written as they arrive: the client-saturation verdicts
are rebuilt from them). From these, :func:`rebuild` computes the summary exactly as the end of
the run would have, with three differences, each said in the summary's ``rebuilt`` block
(which also counts the lines of ``requests.jsonl`` that hold no record, ``skipped_lines``: a
corrupt line in the middle, a torn last line; see :class:`~llm_locust.results.columns.Unreadable`):

- the stop time is the end of the last record (start + E2E), not the moment the load stopped,
  unless the run ended and wrote its stop into ``run.json``;
- a ``users`` stage whose level samples were not saved yet (the one running when the master
  died) is ``invalid``: whether it ran at its level is not known;
- the config block is the one of the last ``run.json`` (written at the start, at each stage's
  end and at the end: a run that died has the peak CPU and users up to its last stage's end).

A capacity search's ``search`` block (its probes, verdicts, answer) and its stage table are
rebuilt from ``search.json``, the steps as the search recorded them
(:mod:`llm_locust.results.search_log`), over the same records it judged them on.

Without a ``run.json`` (a folder of another version), the whole-run summary only.
Pure module: files in, files out; no Locust, no network.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from llm_locust.config.demand import Demand, parse_demand
from llm_locust.config.jsontypes import JsonObject, JsonValue, number
from llm_locust.config.slo import SloSpec, parse_slo
from llm_locust.config.think import parse_think_time
from llm_locust.load.stages import Stage, StageBlock, StagePlan
from llm_locust.results.columns import Unreadable, read_columns, read_rows
from llm_locust.results.failures import tally_of
from llm_locust.results.finalize import RunFacts, add_analysis, build_summary
from llm_locust.results.run_model import RUN_FORMAT, RunJson
from llm_locust.results.search_log import SEARCH_FORMAT, RecordedSearch, SearchLog
from llm_locust.results.slo import itl_stats_of
from llm_locust.results.stages import KnownLevels
from llm_locust.results.summary_model import RunSummary
from llm_locust.results.writer import (
    HEALTH_FILE,
    REQUESTS_FILE,
    RUN_FILE,
    SEARCH_FILE,
    SUMMARY_FILE,
    write_summary,
)

__all__ = ["RUN_FORMAT", "RebuildError", "facts_from_run_json", "rebuild", "run_json"]


class RebuildError(ValueError):
    """The folder cannot be summarized (one line, naming the file)."""


def run_json(facts: RunFacts, levels: Mapping[int, JsonObject] | None = None) -> JsonObject:
    """``run.json``: the facts known while the test runs (``levels``: the stages' so far), as
    :class:`RunJson` reads it back. Written as computed: a run never fails on its context."""
    return {
        "format": RUN_FORMAT,
        "start_time": facts.start_time,
        "t0": facts.t0,
        "stages": None if facts.stages is None else list[JsonValue](facts.stages.to_json()),
        "slo": None if facts.slo is None else list[JsonValue](facts.slo.to_json()),
        "drain": None if facts.drain is None else dict(facts.drain),
        "levels": {str(i): dict(v) for i, v in (levels or {}).items()},
        "config": facts.config,
    }


def facts_from_run_json(data: RunJson, stop_time: float, start_time: float) -> RunFacts:
    """The :class:`RunFacts` a ``run.json`` holds, for a test that ended at ``stop_time``."""
    stages = data.stages
    percentiles = data.option("percentiles")
    return RunFacts(
        start_time=data.start_time or start_time,
        stop_time=stop_time,
        stages=StagePlan(tuple(Stage.of(StageBlock.model_validate(s)) for s in stages)) if stages else None,
        t0=data.t0,
        slo=parse_slo(data.slo) if data.slo else None,
        levels=KnownLevels(data.levels),
        drain=data.drain,
        config=data.config.to_json(),
        window_s=number(data.option("window")),
        detailed=bool(data.option("save_detailed")),
        peak_users=data.config.peak_users or 0,  # as of the last run.json: the end, if it came
        think_mean_s=parse_think_time(data.option("think_time") or 0).mean,
        percentiles=tuple(v for q in percentiles if (v := number(q)) is not None)
        if isinstance(percentiles, list)
        else (),
    )


def _read_run(directory: Path) -> RunJson | None:
    path = directory / RUN_FILE
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RebuildError(f"{path}: cannot read ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != RUN_FORMAT:
        raise RebuildError(f"{path}: not a run.json of format {RUN_FORMAT}")
    try:
        return RunJson.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the file"
        raise RebuildError(f"{path}: not a run.json this version reads: {where}: {first['msg']}") from None


def _recorded_search(
    folder: Path, data: RunJson, facts: RunFacts, requests: Path, compare: bool = True
) -> RecordedSearch | None:
    """The test's capacity search from ``search.json`` (``None`` without one, or with one of
    another test: its ``t0`` must be this test's); ``compare``: list where a rebuilt verdict
    differs from the run's (not when the steps are judged again under another SLO)."""
    path = folder / SEARCH_FILE
    if facts.slo is None or not path.is_file():
        return None
    try:
        log = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RebuildError(f"{path}: cannot read ({exc})") from None
    if not isinstance(log, dict) or log.get("format") != SEARCH_FORMAT or log.get("t0") != data.t0:
        return None
    try:
        recorded = SearchLog.model_validate(log)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the file"
        raise RebuildError(f"{path}: not a search log this version reads: {where}: {first['msg']}") from None
    demand = data.option("demand")
    if demand and isinstance(demand, str | dict):  # the option's text, or the mapping it was read into
        facts.demand = parse_demand(demand)
    return RecordedSearch(recorded, list(read_rows(requests)), facts.slo, compare=compare)


def _read_health(directory: Path) -> list[dict[str, Any]]:
    """``health.jsonl``'s intervals (none without the file; a torn last line is skipped)."""
    path = directory / HEALTH_FILE
    if not path.exists():
        return []
    out = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # the line being written when the process died
    return out


def rebuild(
    directory: str | Path, write: bool = True, slo: SloSpec | None = None, demand: Demand | None = None
) -> RunSummary:
    """The summary of the results folder ``directory``, from ``requests.jsonl`` and ``run.json``;
    written to ``summary.json`` (marked ``rebuilt``) unless ``write`` is false. ``slo`` and
    ``demand``: judge every stage and search step under these instead of the run's own
    (``llm-locust rejudge``; the levels measured stay the ones the run chose)."""
    folder = Path(directory)
    requests = folder / REQUESTS_FILE
    if not requests.is_file():
        raise RebuildError(f"{folder}: no {REQUESTS_FILE} (not a results folder)")
    found = _read_run(folder)
    data = found or RunJson()
    if slo is not None:
        data = data.model_copy(update={"slo": slo.to_json()})
    slo = parse_slo(data.slo) if data.slo else None
    unreadable = Unreadable()
    cols = read_columns(requests, itl_stats_of(slo), unreadable)
    ends = cols.start + np.nan_to_num(cols.e2e)
    first = float(cols.start.min()) if cols.n else time.time()
    recorded = data.config.stop_time  # the run ended and said when
    stop = float(recorded) if recorded is not None else float(ends.max()) if cols.n else first
    facts = facts_from_run_json(data, stop, first)
    facts.search = _recorded_search(folder, data, facts, requests, compare=slo is None)
    if demand is not None:
        facts.demand = demand
    facts.health = _read_health(folder)
    summary = build_summary(cols, facts)
    summary.update(tally_of(read_rows(requests)).to_summary())
    problem = add_analysis(summary, cols, facts, folder, requests)
    summary["config"]["stop_time"] = stop
    summary["rebuilt"] = {
        "from": [
            REQUESTS_FILE,
            *([RUN_FILE] if found is not None else []),
            *([SEARCH_FILE] if facts.search else []),
            *([HEALTH_FILE] if facts.health else []),
        ],
        "records": cols.n,
        "at": time.time(),
        "stop_time": "the run's (run.json)" if recorded is not None else "the end of the last record",
        "note": "rebuilt by llm-locust summarize: users stages without saved level samples are invalid",
    }
    if unreadable.count:
        summary["rebuilt"]["skipped_lines"] = unreadable.to_json(REQUESTS_FILE)
    if problem is not None:
        summary["rebuilt"]["problem"] = problem
    if write:
        return write_summary(folder / SUMMARY_FILE, summary)
    model, _ = RunSummary.checked(summary)  # a key it refuses is left out (write_summary says so)
    return model
