"""A search's progress lines against a sped-up target (issue 22): composed in deployment time from
the step's exact numbers. ``llm-locust capacity`` prints these lines for each plan; they used to be
written in wall clock with rounded numbers and then rescaled (3.245 s -> "3.25 s" -> "32.50 s")."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from llm_locust.config.build import build_config
from llm_locust.load.plan import build_load_plan
from llm_locust.runtime.search import SearchDriver
from tests.unit.runtime.test_search_driver import STEP_S, T0, FakeRun, requests, users


def test_a_judged_steps_line_reads_its_exact_p95_in_deployment_time(caplog: pytest.LogCaptureFixture) -> None:
    run = FakeRun(slo="e2e_p95<=3.2s")  # the deployment's e2e_p95<=32s, run 10x faster
    values = {"search": "users", "search_min": "2", "slo": "e2e_p95<=3.2s", "step_time": f"{STEP_S:g}s"}
    run.run_config = build_config({**values, "warmup": "0s", "target_speedup": "10"}, environ={})
    driver = run.driver = SearchDriver(run, run.plan.search, T0)  # type: ignore[arg-type]
    caplog.set_level(logging.INFO, logger="llm_locust")
    driver.tick(T0)
    users(run, T0, T0 + 0.5, 2)
    driver.tick(T0 + 0.5)
    users(run, T0 + 0.6, T0 + 0.5 + STEP_S, 2)
    requests(run, T0 + 0.5, T0 + 0.5 + STEP_S, e2e=3.245)  # every request 3.245 s: its P95 too
    driver.tick(T0 + 0.5 + STEP_S)
    assert [str(p.verdict) for p in driver.probes] == ["fail"]
    assert driver.probes[0].reason == "e2e_p95 3.25 s misses e2e_p95<=3.2s"  # the run's file: wall clock
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("llm-locust: search: ")]
    assert lines == [
        "llm-locust: search: users=2 fail (380 requests; e2e_p95 32.45 s misses e2e_p95<=32s) -> halve -> 1"
    ]


def test_the_live_probe_table_is_in_deployment_time_and_says_so() -> None:
    """The web UI's probe table (``/llm/stats``'s ``search``) showed the wall clock against a sped-up
    target (3.245 s, 38 req/s) while the progress lines, the report and capacity.json read 32.45 s."""
    run = FakeRun(slo="e2e_p95<=3.2s")
    values = {"search": "users", "search_min": "2", "slo": "e2e_p95<=3.2s", "step_time": f"{STEP_S:g}s"}
    run.run_config = build_config({**values, "warmup": "0s", "target_speedup": "10"}, environ={})
    driver = run.driver = SearchDriver(run, run.plan.search, T0)  # type: ignore[arg-type]
    driver.tick(T0)
    users(run, T0, T0 + 0.5, 2)
    driver.tick(T0 + 0.5)
    users(run, T0 + 0.6, T0 + 0.5 + STEP_S, 2)
    requests(run, T0 + 0.5, T0 + 0.5 + STEP_S, e2e=3.245)
    driver.tick(T0 + 0.5 + STEP_S)
    wall = driver.probes[0]
    live = driver.live()
    (row,) = live["probes"]
    assert row["e2e_p95_s"] == pytest.approx(32.45)
    assert row["ttft_p95_s"] == pytest.approx(wall.p95_ttft_ms * 10 / 1000)
    assert row["request_throughput"] == pytest.approx(wall.request_throughput / 10)
    assert row["reason"] == "e2e_p95 32.45 s misses e2e_p95<=32s" and row["label"] == "users=2"
    assert live["clock"] == {
        "clock": "deployment",
        "target_speedup": 10.0,
        "note": "deployment time: the target ran 10x faster; latencies x 10, rates / 10 "
        "(the rest of this page: the measured wall clock, as summary.json)",
    }
    run.run_config = build_config({**values, "warmup": "0s"}, environ={})  # a real-time target: as measured
    plain = SearchDriver(run, run.plan.search, T0)  # type: ignore[arg-type]
    assert plain.live()["clock"] == {"clock": "deployment", "target_speedup": 1.0, "note": ""}


def test_a_rate_searchs_live_levels_are_deployment_rates() -> None:
    """A rate search's levels are rates: the running step's and every row's label / ``k``."""
    run = RateRun()
    values = {"search": "rate", "search_min": "4", "slo": "e2e_p95<=3.2s", "step_time": f"{STEP_S:g}s"}
    run.run_config = build_config({**values, "warmup": "0s", "target_speedup": "10"}, environ={})
    run.plan = build_load_plan(run.run_config.load)
    driver = SearchDriver(run, run.plan.search, T0)  # type: ignore[arg-type]
    assert driver.stages[0].label == "rate=4"  # the plan runs the wall-clock rate
    assert driver.live()["running"] == "rate=0.4" and run.announced == [[(0.5, 4.0)]]


class RateRun(FakeRun):
    """The fake run of a rate search: the steps it announces to the workers are kept."""

    def __init__(self) -> None:
        super().__init__()
        self.announced: list[Any] = []

    def announce_rate_steps(self, steps: Any, stopped_at: Any) -> None:
        self.announced.append(list(steps))
