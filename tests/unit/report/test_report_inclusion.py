"""The report shows the summary's numbers: its latency distributions cover the records the
summary's percentiles cover, its failure messages the failures the summary counts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from llm_locust.report.charts import stage_points
from llm_locust.report.data import load_run
from llm_locust.results.columns import Columns
from llm_locust.results.failures import tally_of
from llm_locust.results.finalize import RunFacts, build_summary
from tests.unit.results.test_inclusion import _step_rows
from tests.unit.results.test_stages import T0


def _folder(tmp: Path) -> tuple[Path, list[dict]]:
    """100 records, 10 the client stalled inside, and 6 failures of which 4 in the warm-up."""
    rows = _step_rows(100, stalled=set(range(3, 100, 10)))
    for i in range(6):
        rows[i].update(outcome="http_5xx", message="upstream down", warmup=i < 4)
    facts = RunFacts(start_time=T0, stop_time=T0 + 55.0, config={"start_time": T0, "stop_time": T0 + 55.0})
    summary = build_summary(Columns.from_rows(rows), facts)
    (tmp / "summary.json").write_text(json.dumps(summary))
    (tmp / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp, rows


def test_the_reports_latencies_and_failure_messages_are_the_summarys(tmp_path: Path) -> None:
    folder, rows = _folder(tmp_path)
    run = load_run(folder)
    summary = run.model.to_json()  # the file's keys, as the report read them
    (whole,) = stage_points(run)
    ttft = whole.values("ttft") * 1000.0  # what the CDF and the latency charts draw
    timed = [r["ttft"] * 1000.0 for r in rows if r["outcome"] == "ok" and not r["client_stall_s"]]
    assert ttft.size == len(timed) == summary["completed"] - summary["client_stalled"]
    for stat in (50, 90, 95, 99):
        key = "median" if stat == 50 else f"p{stat}"
        assert float(np.percentile(ttft, stat)) == summary[f"{key}_ttft_ms"], stat
    assert summary["errors"] == {"http_5xx": 2}  # the warm-up's 4 are left out
    assert run.messages == {"http_5xx": [("upstream down", 2)]}


def test_the_reports_failure_messages_are_the_summarys_top_ones_in_its_order(tmp_path: Path) -> None:
    """One tally: the report lists the summary's ``error_messages`` (its first three per class),
    not a second count of the rows (which ordered ties by message and kept stripped variants)."""
    rows = _step_rows(100, stalled=set())
    for i, message in enumerate(["zeta", "zeta", "alpha", "alpha", "mid ", "mid ", "rare", "other"]):
        rows[40 + i].update(outcome="http_5xx", message=message)
    facts = RunFacts(start_time=T0, stop_time=T0 + 55.0, config={"start_time": T0, "stop_time": T0 + 55.0})
    summary = build_summary(Columns.from_rows(rows), facts)
    summary.update(tally_of(rows).to_summary())  # as the results write it
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    # by hand: three messages twice each, in the order they first came, then the ones seen once
    assert summary["error_messages"]["http_5xx"][:3] == [["zeta", 2], ["alpha", 2], ["mid ", 2]]
    assert load_run(tmp_path).messages == {"http_5xx": [("zeta", 2), ("alpha", 2), ("mid ", 2)]}
    del summary["error_messages"]  # a summary written without them: the same tally of the rows
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    assert load_run(tmp_path).messages == {"http_5xx": [("zeta", 2), ("alpha", 2), ("mid ", 2)]}
