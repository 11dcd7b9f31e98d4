"""The client's own health in the summary: a stage measured by a saturated client is never the
capacity answer, and requests the client stalled inside are left out of the statistics (issue 15 §2)."""

from __future__ import annotations

from llm_locust.load.stages import parse_ramp
from llm_locust.results.columns import Columns
from llm_locust.results.finalize import RunFacts, build_summary, warnings
from llm_locust.results.report import end_of_run_text
from llm_locust.results.slo import evaluate, parse_slo
from llm_locust.results.summary_model import RunSummary
from tests.unit.results.test_stages import T0, closed_loop, levels, row

MESSAGE = "client saturated from users=48: this process used a whole core (up to 97 %): add workers"


def health(start: float, end: float, cpu: float, lag_p90_s: float = 0.001) -> list[dict]:
    """One interval a second from ``start`` to ``end`` (seconds after T0)."""
    return [
        {
            "start": T0 + t,
            "end": T0 + t + 1.0,
            "cpu": cpu,
            "lag_mean_s": lag_p90_s / 2,
            "lag_p90_s": lag_p90_s,
            "lag_max_s": lag_p90_s * 2,
            "stall_s": 0.0,
            "ticks": 50,
            "worker": "w1",
        }
        for t in range(int(start), int(end))
    ]


def staged_run(intervals: list[dict], stalled: int = 0) -> dict:
    plan = parse_ramp("4,16,48", "15s")
    rows = closed_loop(4, 0, 15, 1.0, 0) + closed_loop(16, 15, 30, 1.0, 1) + closed_loop(48, 30, 45, 1.0, 2)
    for r in rows[5 : 5 + stalled]:  # ok requests of stage 0 the client itself paused inside
        r["client_stall_s"], r["e2e"], r["itl"] = 2.0, 3.0, [0.5] * 4
    facts = RunFacts(
        start_time=T0, stop_time=T0 + 45, stages=plan, t0=T0, slo=parse_slo("success>=99%"),
        levels=levels(plan, [0.5, 0.5, 0.5]), health=intervals,
    )  # fmt: skip
    return build_summary(Columns.from_rows(rows), facts)


def test_a_saturated_stage_is_invalid_and_the_capacity_stops_below_it() -> None:
    summary = staged_run(health(0, 30, 0.4) + health(30, 45, 0.97, 0.02))
    assert [s["verdict"] for s in summary["stages"]] == ["pass", "pass", "invalid"]
    assert [s["client"]["saturated"] for s in summary["stages"]] == [False, False, True]
    reason = summary["stages"][2]["invalid_reason"]
    assert reason == "this process used a whole core (up to 97 %): add workers (w1)", reason
    assert summary["highest_passing_stage"] == 1
    assert summary["capacity"].startswith("the system holds users=16 within the SLO")
    assert summary["capacity"].endswith(f"; {MESSAGE}")
    assert summary["client_saturated"] == MESSAGE and summary["client"]["saturated"]
    assert MESSAGE in warnings(RunSummary.of(summary))
    assert f"client: {MESSAGE}" in end_of_run_text(RunSummary.of(summary))


def test_a_healthy_client_changes_no_verdict() -> None:
    summary = staged_run(health(0, 45, 0.4))
    assert [s["verdict"] for s in summary["stages"]] == ["pass", "pass", "pass"]
    assert summary["highest_passing_stage"] == 2 and summary["client_saturated"] is None
    assert not summary["client"]["saturated"] and summary["client"]["intervals"] == 45
    no_health = staged_run([])
    assert "client" not in no_health and no_health["highest_passing_stage"] == 2


def test_requests_the_client_stalled_inside_count_but_their_latencies_do_not() -> None:
    clean, stalled = staged_run(health(0, 45, 0.4)), staged_run(health(0, 45, 0.4), stalled=3)
    assert stalled["completed"] == clean["completed"] and stalled["excluded"] == clean["excluded"]
    assert stalled["client_stalled"] == 3 and clean["client_stalled"] == 0
    assert stalled["stages"][0]["client_stalled"] == 3 and stalled["stages"][0]["completed"] > 3
    assert stalled["max_concurrent_requests"] >= clean["max_concurrent_requests"]  # they were in flight
    assert stalled["p99_e2el_ms"] == clean["p99_e2el_ms"] == 1000.0  # their 3-s E2E is in no percentile
    assert (
        stalled["p99_itl_ms"] == clean["p99_itl_ms"] == 10.0 and stalled["mean_itl_ms"] == 10.0
    )  # nor their gaps
    assert stalled["slo"]["requests"] == clean["slo"]["requests"]  # and they count for the SLO's success
    text = end_of_run_text(RunSummary.of(stalled))
    assert "the latencies of 3 of them left out: the load generator itself stalled inside them" in text


def test_an_slo_latency_line_leaves_stalled_requests_out() -> None:
    rows = [row(t, 1.0, None) for t in range(20)] + [
        row(20 + t, 9.0, None, client_stall_s=8.0) for t in range(5)
    ]
    cols = Columns.from_rows(rows)
    result = evaluate(parse_slo("e2e_max<=2s"), cols, 30.0)
    assert result.passed and result.lines[0].measured == 1.0 and result.requests == 25
