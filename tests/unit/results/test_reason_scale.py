"""A reason's number is never rounded before it is scaled (issue 22): a step measured against a
simulator at --speedup 10 whose wall-clock E2E P95 is 3.245 s reads 32.45 s in deployment time
everywhere: the term's value, its why, the step's reason, the verdict, capacity.json's plan row
and the table (rounded first, 3.245 -> "3.25 s" -> x10, it read "32.50 s")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llm_locust.config.plans import load_plan_file
from llm_locust.config.slo import parse_slo, scaled_slo
from llm_locust.load.search import SearchSpec
from llm_locust.results.plans import compare_plans, format_comparison
from llm_locust.results.probe import judge_step
from llm_locust.results.search_model import SearchResult
from llm_locust.results.search_result import search_result

K = 10.0
PLANS = """
demand: {users: 20}
slo: "success>=99%,e2e_p95<=32s"
plans:
  - {name: A, endpoints: [http://a:1], gpus: 1, gpu_hour_cost: 2}
"""
#: the SLO the run was given: the deployment's divided by K (e2e_p95<=3.2s)
RUN_SLO = parse_slo(scaled_slo(parse_slo("success>=99%,e2e_p95<=32s"), K))


def _entry(index: int, users: int, e2e: float, interval: tuple[float, float], verdict: str) -> dict[str, Any]:
    """A stage entry as the run evaluates it (wall clock): 400 requests, every one a success."""
    success = {"kind": "request", "measured": 1.0, "n": 400, "interval": [0.991, 1.0], "verdict": "pass"}
    e2e_line = {"kind": "request", "measured": e2e, "n": 400, "interval": list(interval), "verdict": verdict}
    return {
        "index": index,
        "label": f"users={users}",
        "target": float(users),
        "completed": 400,
        "failed": 0,
        "request_throughput": users / e2e,
        "output_throughput": users / e2e * 100,
        "median_tpot_ms": 20.0,
        "p95_ttft_ms": 150.0,
        "p95_e2el_ms": e2e * 1000,
        "littles_law": {"mean_in_flight": float(users), "arrival_rate": users / e2e},
        "slo": {
            "objectives": [success, e2e_line],
            "requests": 400,
            "duration_s": 30.0,
            "goodput_rps": users / e2e,
            "goodput_output_tokens_per_s": users / e2e * 100,
        },
    }


@pytest.fixture
def capacity(tmp_path: Path) -> tuple[dict[str, Any], str]:
    steps = [
        judge_step(_entry(0, 16, 2.0, (1.9, 2.1), "pass"), RUN_SLO),
        judge_step(_entry(1, 32, 3.245, (3.21, 3.3), "fail"), RUN_SLO),  # fails, at 3.245 s
        judge_step(_entry(2, 20, 3.1, (3.0, 3.245), "inconclusive"), RUN_SLO),  # reaches 3.245 s
    ]
    search = SearchResult.model_validate(
        search_result(SearchSpec("users", 16, demand=20), steps, "step_limit", 3.0)
    )
    path = tmp_path / "plans.yaml"
    path.write_text(PLANS)
    report = compare_plans(load_plan_file(path), {"A": search}, {"A": K})
    return report.to_json(), format_comparison(report)


def test_the_fail_reads_32_45_s_in_its_term_reason_and_the_plan_row(
    capacity: tuple[dict[str, Any], str],
) -> None:
    report, _ = capacity
    plan = report["plans"][0]
    fail = next(s for s in plan["steps"] if s["label"] == "users=32")
    e2e = next(t for t in fail["terms"] if t["name"] == "e2e_p95")
    assert e2e["value"] == pytest.approx(32.45) and e2e["objective"] == "e2e_p95<=32s"
    assert fail["reason"] == "e2e_p95 32.45 s misses e2e_p95<=32s"
    assert fail["p95_e2el_ms"] == pytest.approx(32_450.0)


def test_the_inconclusive_why_and_the_verdict_read_32_45_s(capacity: tuple[dict[str, Any], str]) -> None:
    report, table = capacity
    plan = report["plans"][0]
    step = next(s for s in plan["steps"] if s["label"] == "users=20")
    why = "e2e_p95: its interval 30.00 s-32.45 s straddles 32.00 s"
    assert next(t for t in step["terms"] if t["name"] == "e2e_p95")["why"] == why
    assert step["reason"] == why
    assert plan["upper_step"]["reason"] == why
    assert (
        plan["verdict"] == f"not shown to meet 20 users: 20 users is inconclusive ({why}); capacity 16 users"
    )
    assert f"A: {plan['verdict']}" in table
    # nowhere rounded first: not in the file, not in the table
    assert "32.50 s" not in json.dumps(report) and "32.50 s" not in table
