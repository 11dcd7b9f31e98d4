"""Consecutive tests in one web UI (issue 27 §3): each test's page and "LLM" tab are its own.

Before: the /llm page kept the previous test's verdict until the next one ended, its chart
history and its totals ran on across tests (the aggregate counts every test of the process,
as the exporter's counters must), and after a run the tab's latency rows showed the trailing
30 s window of a stopped load (counts of 0) and a completed count other than the page's.
"""

from __future__ import annotations

from llm_locust.live.aggregate import LiveAggregate
from llm_locust.live.webui import LiveWebUI
from llm_locust.results.summary_model import RunSummary
from tests.unit.live.test_client_gauge import View


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _row(i: int, outcome: str = "ok") -> dict:
    return {
        "request_id": f"r{i}",
        "outcome": outcome,
        "ttft": 0.05,
        "tpot": 0.01,
        "e2e": 0.2,
        "itl": [0.01] * 3,
        "prompt_tokens": 10,
        "completion_tokens": 4,
    }


SUMMARY = {
    "completed": 7,  # measured: warm-up left out, so fewer than the 9 records
    "failed": 1,
    "request_throughput": 2.0,
    "output_throughput": 8.0,
    "p50_ttft_ms": 50.0,
    "p95_ttft_ms": 61.5,
    "p99_ttft_ms": 70.25,
    "p50_tpot_ms": 10.0,
    "p95_tpot_ms": None,  # no value: blank, never 0
    "p99_tpot_ms": 12.0,
    "p50_itl_ms": 0.0,
    "p95_itl_ms": 10.0,
    "p99_itl_ms": 11.0,
    "p50_e2el_ms": 200.0,
    "p95_e2el_ms": 210.0,
    "p99_e2el_ms": 220.0,
    "slo": {"passed": False, "objectives": []},
}


def _first_test() -> tuple[Clock, LiveWebUI]:
    """A web UI whose first test finished 8 requests and failed 1."""
    clock = Clock()

    def fresh() -> LiveAggregate:
        return LiveAggregate(clock=clock)

    ui = LiveWebUI(View(), fresh(), fresh=fresh)  # type: ignore[arg-type]
    ui.on_test_start()
    for i in range(8):
        ui.add(_row(i))
    ui.add(_row(8, "http_500"))
    return clock, ui


def test_a_new_test_starts_with_no_verdict_no_series_and_its_own_totals() -> None:
    clock, ui = _first_test()
    ui.sample()
    ui.on_finalized(RunSummary.of(SUMMARY), None)
    first = ui.stats()
    assert first["result"] is not None and len(first["history"]) == 1
    assert (first["snapshot"]["totals"]["completed"], first["snapshot"]["totals"]["failed"]) == (8, 1)

    ui.on_test_start()
    clock.t += 10
    ui.add(_row(9))
    second = ui.stats()
    assert second["result"] is None  # the first test's verdict is gone
    assert second["history"] == []  # and its chart series
    assert second["run"]["test"] == first["run"]["test"] + 1  # the page starts its series anew
    totals = second["snapshot"]["totals"]
    assert (totals["completed"], totals["failed"], totals["requests"]) == (1, 0, {"ok": 1})
    assert ui.sample()["completed"] == 1
    assert second["snapshot"]["latency"]["ttft"]["count"] == 1  # its own latencies, one request
    assert second["snapshot"]["errors"] == {}  # the first test's failure is not this one's


def test_after_a_run_the_tab_shows_the_summarys_values_and_its_one_completed_count() -> None:
    clock, ui = _first_test()
    clock.t += 120  # the load stopped long ago: the 30 s window is empty
    ui.on_finalized(RunSummary.of(SUMMARY), None)
    rows = {r["metric"]: r for r in ui.table_rows()}
    ttft = rows["TTFT (whole run, ms)"]
    assert (ttft["p50"], ttft["p95"], ttft["p99"]) == (50.0, 61.5, 70.2)
    tpot = rows["TPOT (whole run, ms)"]
    assert (tpot["p50"], tpot["p95"], tpot["p99"]) == (10.0, "", 12.0)
    assert rows["E2E (whole run, ms)"]["p99"] == 220.0
    assert not any("last" in m for m in rows)  # no row of the decayed window
    assert "TTFT visible (whole run, ms)" not in rows  # not a reasoning model
    assert rows["Completed | failed"]["count"] == "7 | 1"  # the summary's, as the /llm tiles show
    assert ui.stats()["result"]["completed"] == 7
