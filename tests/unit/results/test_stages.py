"""Per-stage results: measured windows, exclusions, validity, verdicts, the capacity sentence,
and the text that leads with the answer (issue 8 §1, §2, §6)."""

from __future__ import annotations

import pytest

from llm_locust.load.levels import LevelTracker
from llm_locust.load.stages import parse_ramp, parse_rate_ramp
from llm_locust.record import INCOMPLETE
from llm_locust.results.columns import Columns
from llm_locust.results.report import end_of_run_text, exclusions_line
from llm_locust.results.slo import evaluate, parse_slo
from llm_locust.results.stages import capacity_verdict, excluded_counts, stage_summaries
from llm_locust.results.summary import summarize
from llm_locust.results.summary_model import RunSummary, StageRow
from llm_locust.results.summary_text import format_stage_table
from llm_locust.results.validity import rate_validity, users_validity

T0 = 1_000.0


def row(start: float, e2e: float, stage: int | None = 0, outcome: str = "ok", **extra: object) -> dict:
    return {
        "request_id": f"r{start}",
        "start_time": T0 + start,
        "outcome": outcome,
        "ttft": 0.1,
        "e2e": e2e,
        "tpot": 0.01,
        "itl": [0.01] * 4,
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "token_source": "usage",
        "stage": stage,
        "warmup": False,
        **extra,
    }


def closed_loop(users: int, start: float, end: float, e2e: float, stage: int) -> list[dict]:
    """``users`` back-to-back users from ``start``; the request running at ``end`` is cut there."""
    rows = []
    for u in range(users):
        t = start + (u + 0.5) * e2e / users
        while t < end:
            cut = t + e2e > end
            rows.append(row(t, end - t if cut else e2e, stage, INCOMPLETE if cut else "ok"))
            t += e2e
    return rows


def levels(plan, reached: list[float | None]) -> LevelTracker:
    tracker = LevelTracker(plan, T0)
    for stage, at in zip(plan, reached, strict=True):
        tracker.observe(T0 + stage.start_s, int(stage.target) - 1)
        if at is not None:
            tracker.observe(T0 + stage.start_s + at, int(stage.target))
    tracker.finish(T0 + plan.total_s)
    return tracker


def test_split_rows_gives_each_excluded_record_one_reason() -> None:
    rows = [
        row(0, 1),
        row(1, 1, warmup=True),
        row(2, 1, rampup=True),
        row(3, 1, outcome=INCOMPLETE, warmup=True),
        row(4, 1, outcome="http_5xx"),
    ]
    cols = Columns.from_rows(rows)
    assert (cols.start[cols.measured] - T0).tolist() == [0, 4]
    assert excluded_counts(cols.part()) == {"incomplete": 1, "warmup": 1, "rampup": 1, "outside": 0}


def test_incomplete_is_neither_success_nor_failure() -> None:
    rows = [row(0, 1), row(1, 1, outcome="http_5xx"), row(2, 0.5, outcome=INCOMPLETE)]
    s = summarize(rows, 10.0)
    assert (s["completed"], s["failed"], s["incomplete"]) == (1, 1, 1)
    assert s["errors"] == {"http_5xx": 1}
    result = evaluate(parse_slo("success>=50%"), rows, 10.0)
    assert result.requests == 2 and result.success_rate == 0.5 and result.passed


def test_stage_window_starts_when_the_target_was_reached_and_in_flight_counts_everyone() -> None:
    plan = parse_ramp("4", "10s")
    rows = closed_loop(4, 0.0, 10.0, 1.0, 0)
    for r in rows:
        r["rampup"] = r["start_time"] < T0 + 2.0
    (st,) = stage_summaries(plan, T0, T0 + 10.0, rows, None, levels(plan, [2.0]))
    assert st["window"] == {"start": T0 + 2.0, "end": T0 + 10.0}
    assert st["target_reached_s"] == 2.0 and st["peak_users"] == 4 and st["valid"]
    assert st["excluded"] == {"incomplete": 4, "warmup": 0, "rampup": 8, "outside": 0}
    assert st["completed"] == len(rows) - 12 and st["incomplete"] == 4
    # ramp-up and cut-off requests overlap the window: they count as in flight
    assert st["littles_law"]["mean_in_flight"] == pytest.approx(4.0)
    assert st["verdict"] is None  # valid, no SLO


def test_a_stage_that_never_reached_its_level_is_invalid_never_pass_and_not_the_capacity() -> None:
    plan = parse_ramp("4,16,48", "15s")
    rows = closed_loop(4, 0, 15, 1.0, 0) + closed_loop(16, 15, 30, 1.0, 1) + closed_loop(31, 30, 45, 1.0, 2)
    for r in rows:
        r["rampup"] = r["stage"] == 2
    tracker = levels(plan, [0.5, 0.5, None])
    tracker.levels[2].peak_users = 31
    stages = stage_summaries(plan, T0, T0 + 45, rows, parse_slo("success>=99%"), tracker)
    assert [s["verdict"] for s in stages] == ["pass", "pass", "invalid"]
    assert stages[2]["invalid_reason"] == "reached 31 of 48 users"
    verdict = capacity_verdict(stages)
    assert verdict["highest_passing_stage"] == 1
    assert verdict["capacity"].startswith("the system holds users=16 within the SLO")
    assert verdict["capacity"].endswith("users=48 did not run at its level (reached 31 of 48 users)")
    table = format_stage_table([StageRow.of(s) for s in stages])
    assert "31/48" in table and "users=48: invalid: reached 31 of 48 users" in table


def test_an_invalid_first_stage_leaves_no_capacity() -> None:
    plan = parse_ramp("4,8", "10s")
    rows = closed_loop(4, 0, 10, 1.0, 0) + closed_loop(8, 10, 20, 1.0, 1)
    stages = stage_summaries(plan, T0, T0 + 20, rows, parse_slo("success>=99%"), levels(plan, [None, 0.2]))
    assert stages[0]["verdict"] == "invalid" and stages[1]["verdict"] == "pass"
    assert capacity_verdict(stages) == {
        "highest_passing_stage": None,
        "capacity": "no stage met the SLO; users=4 did not run at its level (reached 3 of 4 users)",
    }


class _Stage:
    target, duration_s = 48, 15.0


def test_users_validity_rule() -> None:
    held = {"peak_users": 48, "target_reached_s": 1.0, "time_at_target_s": 14.0}
    assert users_validity(_Stage(), held) == ""
    short = {"peak_users": 48, "target_reached_s": 12.0, "time_at_target_s": 3.0}
    # shares, not seconds: the same sentence in a sped-up simulator's deployment time
    assert users_validity(_Stage(), short) == "held 48 users for 20 % of the stage (needs 50 %)"


def open_row(start: float, lag: float, **extra: object) -> dict:
    return row(start, 0.5, send_lag=lag, **extra)


class _RateStage:
    target, duration_s = 10.0, 10.0


def test_rate_validity_compares_sent_with_scheduled_and_checks_the_lag() -> None:
    stage = _RateStage()
    on_time = [open_row(t / 10, 0.002) for t in range(100)]
    assert rate_validity(on_time, T0, T0 + 10, stage, 10.0)["invalid_reason"] == ""
    # stopped after 4 of its 10 s
    assert (
        rate_validity(on_time[:40], T0, T0 + 4, stage, 4.0)["invalid_reason"]
        == "ran 40 % of its planned time"
    )
    # the generator fell behind: arrivals scheduled up to 10 s went out up to 2 s late
    late = [open_row(t / 10 * 1.2, t / 10 * 0.2) for t in range(100)]
    facts = rate_validity(late, T0, T0 + 10, stage, 10.0)
    assert facts["scheduled_rate"] == pytest.approx(10.0) and facts["sent_rate"] == pytest.approx(8.4)
    assert facts["invalid_reason"] == "sent 84 % of the requests scheduled (84 of 100)"
    held = [open_row(t / 10, 0.2 if t % 10 == 0 else 0.001, waited_for_slot=t % 10 == 0) for t in range(100)]
    reason = rate_validity(held, T0, T0 + 10, stage, 10.0)["invalid_reason"]
    assert reason.startswith("send lag p99 ") and "10 arrivals waited for --max-concurrency" in reason


def test_rate_stages_get_their_validity_in_the_summary() -> None:
    plan = parse_rate_ramp("10", "10s")
    rows = [open_row(t / 10, 0.002) for t in range(100)]
    (st,) = stage_summaries(plan, T0, T0 + 10, rows, None, None)
    assert st["valid"] and st["sent_rate"] == pytest.approx(10.0)
    assert "10/10/s" in format_stage_table([StageRow.of(s) for s in [st]])


def test_the_end_of_a_run_leads_with_the_answer() -> None:
    plan = parse_ramp("2,4", "10s")
    rows = closed_loop(2, 0, 10, 1.0, 0) + closed_loop(4, 10, 20, 1.0, 1)
    for r in rows[:3]:
        r["warmup"] = True
    stages = stage_summaries(plan, T0, T0 + 20, rows, parse_slo("success>=99%"), levels(plan, [0.1, 0.1]))
    cols = Columns.from_rows(rows)
    excluded = excluded_counts(cols.part())
    summary = {**summarize(cols.measured_part(), 20.0), "stages": stages, "excluded": excluded}
    summary.update(capacity_verdict(stages))
    summary["drain"] = {"seconds": 30.0}
    text = end_of_run_text(RunSummary.of(summary), "results: a and b")
    marks = ["capacity: the system holds users=4", "stage ", "excluded from the statistics:"]
    marks.append("llm-locust summary")
    positions = [text.index(m) for m in marks] + [text.index("results: a and b")]
    assert positions == sorted(positions)
    line = exclusions_line(RunSummary.of(summary))
    assert "3 warm-up" in line and f"{excluded['incomplete']} incomplete" in line and "30 s drain" in line
    assert "SLO" not in text.split("llm-locust summary")[0].split("\n")[-1]
