"""A search's progress lines against a sped-up target (issue 22): composed in deployment time from
the step's exact numbers. ``llm-locust capacity`` prints these lines for each plan; they used to be
written in wall clock with rounded numbers and then rescaled (3.245 s -> "3.25 s" -> "32.50 s")."""

from __future__ import annotations

import logging

import pytest

from llm_locust.config.build import build_config
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
