"""One time scale per file (issue 22 §5): capacity.json of a plan measured against a simulator at
--speedup 10 is all deployment time, and says so."""

from __future__ import annotations

from typing import Any

import pytest

from llm_locust.config.plans import load_plan_file
from llm_locust.load.search import SearchSpec
from llm_locust.results.plans import compare_plans
from llm_locust.results.search_model import JudgedStep
from llm_locust.results.search_result import search_result
from llm_locust.results.timescale import in_deployment_time

PLANS = """
demand: {concurrency: 20}
slo: "success>=90%,e2e_p95<=60s"
plans:
  - {name: A, endpoints: [http://a:1], gpus: 1, gpu_hour_cost: 2}
"""


def _term(name: str, threshold: float, value: float, why: str = "") -> dict[str, Any]:
    return {
        "objective": f"{name}<={threshold:g}s" if name != "success" else "success>=90%",
        "name": name,
        "op": "<=" if name != "success" else ">=",
        "threshold": threshold,
        "value": value,
        "margin": 0.25,
        "interval": [value * 0.99, value * 1.01],
        "n": 484,
        "verdict": "pass",
        "why": why,
    }


def _step(index: int, users: int, e2e_s: float) -> dict[str, Any]:
    """A judged step as the search writes it, measured at 10x (wall clock)."""
    return {
        "index": index,
        "label": f"users={users}",
        "level": float(users),
        "verdict": "pass",
        "reason": "",
        "requests": 484,
        "window_s": 5.0,
        "request_throughput": 96.8,
        "output_throughput": 484.0,
        "goodput_rps": 96.8,
        "goodput_output_tokens_per_s": 484.0,
        "mean_in_flight": users * 0.99,
        "arrival_rate": 96.8,
        "median_tpot_ms": 78.0,
        "p95_ttft_ms": 16.9,
        "p95_e2el_ms": e2e_s * 1000,
        "completed": 484,
        "failed": 0,
        "terms": [
            _term("success", 0.9, 1.0),
            _term("e2e_p95", 6.0, e2e_s),
        ],
        "level_facts": {"peak_users": users, "target_reached_s": 0.07, "time_at_target_s": 5.4},
    }


def test_capacity_json_is_all_deployment_time_and_says_so(tmp_path: Any) -> None:
    path = tmp_path / "plans.yaml"
    path.write_text(PLANS)
    search = search_result(
        SearchSpec("users", 24), [JudgedStep.model_validate(_step(0, 24, 4.0))], "maximum", 5.0
    )
    report = compare_plans(load_plan_file(path), {"A": search}, {"A": 10.0}).to_json()
    step = report["plans"][0]["capacity_step"]
    e2e = step["terms"][1]
    # the contradiction: the term said 40.01 s (deployment) beside p95_e2el_ms 4001 (wall)
    assert e2e["value"] == pytest.approx(40.0) and step["p95_e2el_ms"] == pytest.approx(40_000.0)
    assert e2e["threshold"] == pytest.approx(60.0) and e2e["objective"] == "e2e_p95<=60s"
    assert e2e["interval"] == [pytest.approx(39.6), pytest.approx(40.4)]
    assert e2e["why"] == ""  # a passing term has none
    assert step["p95_ttft_ms"] == pytest.approx(169.0) and step["median_tpot_ms"] == pytest.approx(780.0)
    assert step["window_s"] == pytest.approx(50.0)
    assert step["level_facts"] == {
        "peak_users": 24,
        "target_reached_s": pytest.approx(0.7),
        "time_at_target_s": pytest.approx(54.0),
    }
    assert step["request_throughput"] == pytest.approx(9.68) and step["arrival_rate"] == pytest.approx(9.68)
    assert step["goodput_output_tokens_per_s"] == pytest.approx(48.4)
    # what has no time in it stays: counts, users, in flight, the success ratio
    assert (step["completed"], step["level"], step["mean_in_flight"]) == (484, 24.0, pytest.approx(23.76))
    assert step["terms"][0]["value"] == 1.0 and step["terms"][0]["interval"] == [0.99, 1.01]
    plan = report["plans"][0]
    assert plan["search"]["stop"] == "the maximum level passed"  # no time in it
    assert report["time_scale"]["clock"] == "deployment" and report["time_scale"]["speedups"] == {"A": 10.0}
    assert "deployment time" in report["time_scale"]["note"]


def test_a_rate_search_step_has_its_level_in_deployment_rate() -> None:
    step = JudgedStep.model_validate({**_step(3, 0, 2.0), "label": "rate=40", "level": 40.0})
    real = in_deployment_time(step, 10.0, rate=True)
    assert real.level == pytest.approx(4.0) and real.label == "rate=4"
    assert in_deployment_time(step, 1.0, rate=True) == step


def test_capacity_tells_a_sped_up_plans_run_its_factor(tmp_path: Any) -> None:
    from llm_locust.commands.capacity.plan_run import run_args

    path = tmp_path / "plans.yaml"
    path.write_text(PLANS)
    file = load_plan_file(path)
    args = run_args(file, file.plans[0], tmp_path / "A", 10.0)
    assert args[args.index("--target-speedup") + 1] == "10"
    assert "--target-speedup" not in run_args(file, file.plans[0], tmp_path / "A", 1.0)


def test_a_summary_in_deployment_time_by_key() -> None:
    from llm_locust.results.timescale import deployment_summary

    t0 = 1_800_000_000.0
    summary = {
        "config": {"start_time": t0, "stop_time": t0 + 60, "options": {"step_time": 6.0}},
        "client": {"lag_max_ms": 40.0},  # the load generator's own clock: as measured
        "duration": 60.0,
        "span": {"start": t0 + 1, "end": t0 + 59, "seconds": 58.0, "test_seconds": 60.0, "excluded_s": 2.0},
        "drain": {"seconds": 1.5},
        "achieved_request_rate": 40.0,
        "request_goodput": 30.0,
        "stages": [{"kind": "rate", "target": 40.0, "label": "rate=40", "spawn_rate": 10.0, "completed": 7}],
        "slo": {"objectives": [{"name": "kv_cache_usage_max", "threshold": 0.9, "measured": 0.5}]},
        "drift": {"stages": [{"per_s": 0.2}]},
        "windows": [{"start": t0}],
    }
    out = deployment_summary(summary, 10.0, t0)
    assert out["config"]["stop_time"] == t0 + 600 and out["config"]["options"] == {"step_time": 6.0}
    assert out["client"] == {"lag_max_ms": 40.0} and out["duration"] == 600.0
    assert out["span"] == {
        "start": t0 + 10,
        "end": t0 + 590,
        "seconds": 580.0,
        "test_seconds": 600.0,
        "excluded_s": 20.0,
    }
    assert out["drain"] == {"seconds": 15.0}
    assert out["achieved_request_rate"] == 4.0 and out["request_goodput"] == 3.0
    stage = {"kind": "rate", "target": 4.0, "label": "rate=4", "spawn_rate": 1.0, "completed": 7}
    assert out["stages"] == [stage]
    assert out["slo"]["objectives"][0]["threshold"] == 0.9  # a server gauge's ratio: no time in it
    assert "windows" not in out and "drift" not in out  # computed again from the converted records
    assert out["time_scale"] == {"clock": "deployment", "target_speedup": 10.0}
