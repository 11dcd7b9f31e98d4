"""The one inclusion rule: which records each statistic covers, and every view applying it alike."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from llm_locust.live.aggregate import LiveAggregate
from llm_locust.load.search import SearchSpec, SearchStages
from llm_locust.load.stages import parse_ramp
from llm_locust.results.columns import Columns
from llm_locust.results.failures import tally_of
from llm_locust.results.finalize import RunFacts, build_summary
from llm_locust.results.inclusion import Coverage, covered, exclusion, row_covers
from llm_locust.results.report import exclusions_line
from llm_locust.results.search_log import judge_rows, judged_row
from llm_locust.results.slo import itl_stats_of, parse_slo
from llm_locust.results.stages import stage_entry
from llm_locust.results.summary import records_block, summarize
from llm_locust.results.summary_model import RunSummary
from llm_locust.results.timeline import Timeline
from tests.unit.results.test_probe import rows as probe_rows
from tests.unit.results.test_stages import T0, closed_loop, levels

SLO = parse_slo("success>=50%,e2e_p95<=3s")


def _every_kind_of_row() -> list[dict[str, Any]]:
    """One row per combination of the facts the rule reads."""
    out = []
    outcomes = ("ok", "http_500", "incomplete", "cancelled")
    facts = itertools.product(outcomes, (0, 1), (0, 1), (0, 1), (0.0, 0.4))
    for i, (outcome, warmup, rampup, outside, stall) in enumerate(facts):
        out.append(
            {
                "request_id": f"r{i}",
                "start_time": T0 + i,
                "outcome": outcome,
                "ttft": 0.1,
                "e2e": 0.5,
                "stage": 0,
                "warmup": bool(warmup),
                "rampup": bool(rampup),
                "outside": bool(outside),
                "client_stall_s": stall,
            }
        )
    return out


def _expected(coverage: Coverage, row: dict[str, Any]) -> bool:
    """The documented rule, written out here independently of the module's table."""
    outcome = row["outcome"]
    window = not row["warmup"] and not row["rampup"] and not row["outside"] and outcome != "incomplete"
    unstalled = row["client_stall_s"] == 0.0
    return {
        Coverage.REQUESTS: window,
        Coverage.SUCCESS: window and outcome != "cancelled",
        Coverage.COMPLETED: window and outcome == "ok",
        Coverage.LATENCY: window and outcome == "ok" and unstalled,
        Coverage.SERIES: True,
        Coverage.SERIES_LATENCY: outcome == "ok" and unstalled,
        Coverage.IN_FLIGHT: True,
    }[coverage]


def test_rows_and_columns_apply_the_documented_rule_alike() -> None:
    rows = _every_kind_of_row()
    cols, timeline = Columns.from_rows(rows), Timeline(rows)
    for coverage in Coverage:
        want = [_expected(coverage, r) for r in rows]
        assert [row_covers(coverage, r) for r in rows] == want, coverage
        assert covered(coverage, cols).tolist() == want, coverage
        assert timeline.covered(coverage).tolist() == want, coverage
        assert covered(coverage, Timeline.from_columns(cols)).tolist() == want, coverage
    reasons = [exclusion(r) for r in rows]
    assert [r is None for r in reasons] == [_expected(Coverage.REQUESTS, r) for r in rows]
    for row, why in zip(rows, reasons, strict=True):  # one reason each, incomplete first
        late = next((k for k in ("warmup", "rampup", "outside") if row[k]), None)
        assert why == ("incomplete" if row["outcome"] == "incomplete" else late), row


def _step_rows(n: int, stalled: set[int]) -> list[dict[str, Any]]:
    """``n`` records of a search step, one every 0.5 s; those in ``stalled`` carry a 4-s pause of
    the client in their TTFT and E2E."""
    out = probe_rows(n, 0.5 + 0.01 * (np.arange(n) % 50), span=0.5 * n + 3.0)
    for i, row in enumerate(out):
        pause = 4.0 if i in stalled else 0.0
        row["ttft"] += pause
        row["e2e"] += pause
        row.update(client_stall_s=pause, ttft_visible=row["ttft"], cached_tokens=0)
    return out


def test_a_search_step_covers_the_records_its_stage_does() -> None:
    """Seen: the search judged B at 52 users on E2E P95 35.1 s (fail), the stage table 22.2 s
    (pass), same summary.json: the step's records were cut to fields without client_stall_s."""
    rows = _step_rows(200, stalled=set(range(0, 200, 10)))  # 20 of 200 stalled: their E2E > 4 s
    span = 100.0
    stage = SearchStages(SearchSpec("rate", 2.0), 0.0, span).stage(2.0, span, 0.0)  # one every 0.5 s
    entry = stage_entry(stage, T0, T0 + span, Columns.from_rows(rows, itl_stats_of(SLO)), SLO, None)
    step = {"extensions": 0, "unsettled": 0, "phase": "double", "sample_extensions": 0}
    probe = judge_rows([judged_row(r) for r in rows], stage, T0, T0 + span, SLO, None, step)
    timed = np.array([r["e2e"] for r in rows if r["client_stall_s"] == 0.0]) * 1000.0
    expect = float(np.percentile(timed, 95))
    assert entry["p95_e2el_ms"] == expect
    assert probe.p95_e2el_ms == expect  # not the stalled requests' 4.5 s
    assert probe.verdict == entry["verdict"] == "pass"
    assert probe.completed == entry["completed"] == 200  # counted, all of them
    assert probe.client_stalled == entry["client_stalled"] == 20  # and said, for validity


def test_visible_ttft_and_cache_miss_ttft_cover_the_records_ttft_does() -> None:
    """Seen: no reasoning model, p95_ttft_ms 180.6 but p95_ttft_visible_ms and the cache-miss
    P95 306.1 over the same records: the stalled requests were left out of TTFT only."""
    rows = _step_rows(100, stalled=set(range(3, 100, 10)))  # 10 of 100: their TTFT over 4 s
    summary = summarize(Columns.from_rows(rows), 50.0)
    timed = np.array([r["ttft"] for r in rows if r["client_stall_s"] == 0.0]) * 1000.0
    assert summary["p95_ttft_ms"] == float(np.percentile(timed, 95))
    for key in ("p95_ttft_visible_ms", "p95_ttft_cache_miss_ms"):  # every row a miss, none reasoning
        assert summary[key] == summary["p95_ttft_ms"], key
    assert summary["client_stalled"] == 10 and summary["completed"] == 100


def test_a_staged_test_spans_from_its_plans_start_not_from_locusts_test_start() -> None:
    """Seen on a busy host: a ramp with two 1-s warm-ups said ``excluded_s`` 1.83: the test's
    seconds counted from Locust's ``test_start`` (``start_time``), which comes after the shape's
    first tick fixed the plan's start (``t0``), 0.17 s later there; the stages' windows count from
    ``t0``, so the time before the first window was cut short."""
    plan = parse_ramp("4,8", "10s", warmup="1s")
    rows = closed_loop(4, 0, 10, 0.5, 0) + closed_loop(8, 10, 20, 0.5, 1)
    for r in rows:
        r["warmup"] = (r["start_time"] - T0) % 10.0 < 1.0
    late = T0 + 0.2  # test_start, 0.2 s after the plan began
    facts = RunFacts(start_time=late, stop_time=T0 + 20, stages=plan, t0=T0, levels=levels(plan, [0.1, 0.1]))
    span = build_summary(Columns.from_rows(rows), facts)["measured_span"]
    assert span["seconds"] == pytest.approx(18.0)  # 2 x (10 - 1) s
    assert span["test_seconds"] == pytest.approx(20.0)  # from the plan's start, by hand
    assert span["excluded_s"] == pytest.approx(2.0)  # the two warm-ups


def test_rates_divide_by_the_measured_windows_not_the_warmup() -> None:
    """Seen: a search with --warmup 3s reported request_throughput 6.71/s where its measured
    requests over its measured windows made 8.91/s: the rate divided by the whole test."""
    plan = parse_ramp("4,8", "10s", warmup="3s")
    rows = closed_loop(4, 0, 10, 0.5, 0) + closed_loop(8, 10, 20, 0.5, 1)
    for r in rows:  # the first 3 s of each stage
        r["warmup"] = (r["start_time"] - T0) % 10.0 < 3.0
    facts = RunFacts(start_time=T0, stop_time=T0 + 20, stages=plan, t0=T0, levels=levels(plan, [0.1, 0.1]))
    summary = build_summary(Columns.from_rows(rows), facts)
    measured = [r for r in rows if r["outcome"] == "ok" and not r["warmup"]]
    tokens = sum(r["completion_tokens"] for r in measured)
    assert summary["completed"] == len(measured) == sum(s["completed"] for s in summary["stages"])
    assert summary["measured_span"]["seconds"] == pytest.approx(14.0)  # 2 x (10 - 3) s
    assert summary["measured_span"]["test_seconds"] == pytest.approx(20.0)
    assert summary["duration"] == pytest.approx(14.0)
    assert summary["request_throughput"] == pytest.approx(len(measured) / 14.0)
    assert summary["output_throughput"] == pytest.approx(tokens / 14.0)
    windows = sum(s["window"]["end"] - s["window"]["start"] for s in summary["stages"])
    assert summary["request_throughput"] == pytest.approx(
        sum(s["request_throughput"] * (s["window"]["end"] - s["window"]["start"]) for s in summary["stages"])
        / windows
    )


def test_a_record_sent_outside_every_window_of_a_staged_run_is_excluded_and_named() -> None:
    """A search step's settle (after its window, before the next step) is no stage's: its records
    are counted under ``outside``, not in the run's totals beside the stages'."""
    plan = parse_ramp("4", "10s")
    rows = closed_loop(4, 0, 10, 0.5, 0) + [
        {**r, "stage": None, "outside": True} for r in closed_loop(4, 10, 12, 0.5, 0)
    ]
    facts = RunFacts(start_time=T0, stop_time=T0 + 12, stages=plan, t0=T0, levels=levels(plan, [0.1]))
    summary = build_summary(Columns.from_rows(rows), facts)
    outside = [r for r in rows if r.get("outside") and r["outcome"] != "incomplete"]
    assert summary["excluded"]["outside"] == len(outside) > 0
    assert summary["completed"] == summary["stages"][0]["completed"]
    assert f"{len(outside)} outside the stages' measured windows" in exclusions_line(RunSummary.of(summary))


def test_the_live_totals_and_the_exporter_count_the_records_block_of_the_summary() -> None:
    """``/llm/stats``'s totals and ``metrics_final.prom`` (the live aggregate) count every record,
    warm-up included; the summary's ``records`` block names the same numbers, and its ``errors``
    and ``error_messages`` the same failures."""
    rows = [
        {**r, "request_id": f"{i}", "reasoning_tokens": i % 3, "cached_tokens": i % 2}
        for i, r in enumerate(_every_kind_of_row())
    ]
    for r in rows:
        r.update(prompt_tokens=7, completion_tokens=5, message=f"boom {r['request_id'][-1]}")
    aggregate = LiveAggregate()
    for r in rows:
        aggregate.add(r)
    cols = Columns.from_rows(rows)
    block = records_block(cols)
    totals = aggregate.snapshot()["totals"]
    for key in ("requests", "completed", "failed", "incomplete", "cancelled", "prompt_tokens"):
        assert block[key] == totals[key], key
    for key in ("generation_tokens", "reasoning_tokens", "cached_tokens"):
        assert block[key] == totals[key], key
    assert block["timed"] == aggregate.snapshot()["latency"]["ttft"]["count"]
    ok = [r for r in rows if r["outcome"] == "ok"]  # expected values, counted here
    assert block["completed"] == len(ok) and block["generation_tokens"] == 5 * len(ok)
    assert block["timed"] == sum(1 for r in ok if not r["client_stall_s"])
    summary = summarize(cols.measured_part(), 10.0)
    summary.update(tally_of(rows).to_summary())
    for outcome, count in summary["errors"].items():  # the messages of the failures counted
        assert sum(n for _, n in summary["error_messages"][outcome]) == count, outcome
