"""Deployment plans compared: capacity, cost, verdicts, the cheapest compliant plan (pure)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from llm_locust.config.plans import load_plan_file
from llm_locust.load.search import SearchSpec
from llm_locust.results.plans import compare_plans, format_comparison
from llm_locust.results.search_model import JudgedStep, SearchResult
from llm_locust.results.search_result import search_result
from llm_locust.results.timescale import in_deployment_time

PLANS = """
demand: {concurrency: 50}
slo: "success>=99%,ttft_p95<=5s,e2e_p95<=30s"
plans:
  - {name: A, endpoints: [http://a:1], gpus: 4, gpu_hour_cost: 2.5, gpu: a100}
  - {name: B, endpoints: [http://b:1], gpus: 8, gpu_hour_cost: 2.5, gpu: a100}
  - {name: C, endpoints: [http://c:1, http://c:2], gpus: 8, gpu_hour_cost: 2.5, gpu: a100}
"""


def probe(index: int, users: int, verdict: str, e2e: float, tok_per_user: float = 8.0) -> dict[str, Any]:
    """A judged step of ``users`` closed-loop users (in flight ~ users), 230 tokens per request."""
    rps = users / e2e
    return {
        "index": index,
        "label": f"users={users}",
        "level": float(users),
        "verdict": verdict,
        "reason": "" if verdict == "pass" else f"e2e_p95 {e2e:.2f} s misses e2e_p95<=30s",
        "extensions": 0,
        "requests": 500,
        "window_s": 300.0,
        "request_throughput": rps,
        "output_throughput": rps * 230,
        "goodput_rps": rps,
        "goodput_output_tokens_per_s": rps * 230,
        "mean_in_flight": users * 0.98,
        "median_tpot_ms": 1000.0 / tok_per_user,
        "terms": [
            {
                "name": "success",
                "op": ">=",
                "threshold": 0.99,
                "value": 1.0,
                "margin": 1.0,
                "verdict": "pass",
                "interval": [0.993, 1.0],
                "n": 500,
                "objective": "success>=99%",
            },
            {
                "name": "e2e_p95",
                "op": "<=",
                "threshold": 30.0,
                "value": e2e,
                "margin": (30 - e2e) / 30,
                "interval": [e2e - 0.5, e2e + 0.5],
                "n": 500,
                "objective": "e2e_p95<=30s",
                "verdict": "pass" if verdict == "pass" else "fail",
            },
        ],
    }


def typed_result(
    spec: SearchSpec, probes: list[dict[str, Any]], stop: str, step_time_s: float
) -> SearchResult:
    """The search block the run writes (:func:`search_result`), as the comparison reads it."""
    return search_result(spec, [JudgedStep.model_validate(p) for p in probes], stop, step_time_s)


def search(steps: list[tuple[int, str, float]]) -> SearchResult:
    probes = [probe(i, u, v, e) for i, (u, v, e) in enumerate(steps)]
    return typed_result(SearchSpec("users", 16), probes, "precision", 300.0)


@pytest.fixture
def file(tmp_path: Path) -> Any:
    path = tmp_path / "plans.yaml"
    path.write_text(PLANS)
    return load_plan_file(path)


SEARCHES = {
    "A": search(
        [
            (16, "pass", 24.0),
            (32, "fail", 35.0),
            (24, "pass", 29.0),
            (28, "fail", 32.0),
            (26, "fail", 31.0),
            (25, "fail", 30.5),
        ]
    ),
    "B": search(
        [
            (16, "pass", 20.0),
            (32, "pass", 24.0),
            (64, "fail", 31.0),
            (48, "pass", 27.0),
            (56, "pass", 29.5),
            (60, "fail", 30.4),
        ]
    ),
    "C": search(
        [
            (16, "pass", 23.0),
            (32, "pass", 25.0),
            (64, "fail", 34.0),
            (48, "pass", 29.0),
            (56, "fail", 31.0),
            (52, "fail", 30.2),
        ]
    ),
}


def test_capacity_cost_and_the_cheapest_plan_that_meets_the_demand(file: Any) -> None:
    report = compare_plans(file, SEARCHES, {}).to_json()
    a, b, c = report["plans"]
    assert (a["capacity"], b["capacity"], c["capacity"]) == pytest.approx((24 * 0.98, 56 * 0.98, 48 * 0.98))
    assert not a["meets"] and b["meets"] and not c["meets"]
    assert report["cheapest"] == "B" and report["answer"].startswith("B is the cheapest plan that meets 50")
    assert b["headroom"] == pytest.approx(56 * 0.98 / 50 - 1)
    # at capacity: 56 users / 29.5 s x 230 tokens; 8 GPUs x $2.5
    out = 56 / 29.5 * 230
    assert b["output_throughput"] == pytest.approx(out) and b["output_throughput_per_gpu"] == pytest.approx(
        out / 8
    )
    assert b["cost_per_million_at_capacity"] == pytest.approx(20.0 / (out * 3600 / 1e6))
    assert b["tokens_per_user"] == pytest.approx(8.0)
    # at the demand: between the passing steps at 48 and 56 users (47.04 and 54.88 in flight)
    x0, y0, x1, y1 = 48 * 0.98, 48 / 27 * 230, 56 * 0.98, out
    at = y0 + (y1 - y0) * (50 - x0) / (x1 - x0)
    assert b["output_throughput_at_demand"] == pytest.approx(at)
    assert b["cost_per_million_at_demand"] == pytest.approx(20.0 / (at * 3600 / 1e6))
    assert a["cost_per_million_at_demand"] is None  # never extrapolated past the highest pass
    assert (
        b["verdict"].startswith("meets 50 concurrent: E2E P95 ")
        and f"capacity {56 * 0.98:.1f} concurrent" in b["verdict"]
    )  # the mean in flight, as the table shows it: one number (not 54.9 there and 55 here)
    assert a["verdict"].startswith(
        f"fails 50 concurrent: E2E P95 30.50 s at {25 * 0.98:.1f} concurrent (capacity {24 * 0.98:.1f}"
    )
    # the demand lies inside C's bracket: 48 users (47.0 in flight) pass, 52 (51.0) fail
    assert c["verdict"] == (
        f"undecided for 50 concurrent: capacity {48 * 0.98:.1f} concurrent, "
        "and users=52 (above the demand) fails"
    )


def test_scaling_efficiency_of_plans_differing_in_one_resource(file: Any) -> None:
    scaling = {tuple(s["plans"]): s for s in compare_plans(file, SEARCHES, {}).to_json()["scaling"]}
    ca = scaling[("A", "C")]
    assert ca["differs_in"] == "replicas" and ca["efficiency"] == pytest.approx(1.0)
    ba = scaling[("A", "B")]
    assert ba["differs_in"] == "gpus_per_replica" and ba["efficiency"] == pytest.approx(56 / 48)
    assert ("B", "C") not in scaling and ("C", "B") not in scaling  # two resources differ


def test_no_plan_meets_and_the_table(file: Any) -> None:
    report = compare_plans(file, {"A": SEARCHES["A"]}, {}).to_json()
    assert report["cheapest"] is None and report["answer"] == "no plan meets 50 concurrent"
    text = format_comparison(compare_plans(file, SEARCHES, {}))
    assert "demand: 50 concurrent (capacity in concurrency)" in text
    # the table's legend: what goodput is, and why A's $/1M at the demand is "-"
    a_row = next(line for line in text.splitlines() if line.startswith("A "))
    assert a_row.split()[9] == "-", a_row
    assert "\n$/1M@dem -: the plan is not shown to carry the demand, so it has no cost there\n" in text
    assert "\ngoodput: output tok/s of the requests that met every SLO line\n" in text
    assert "answer: B is the cheapest plan" in text and "scaling C vs A: 2x replicas" in text


def test_a_simulator_at_10x_is_shown_in_deployment_time() -> None:
    fast = probe(0, 24, "pass", 2.9)  # measured at --speedup 10
    real = in_deployment_time(JudgedStep.model_validate(fast), 10.0).to_json()
    assert real["request_throughput"] == pytest.approx(fast["request_throughput"] / 10)
    assert real["output_throughput"] == pytest.approx(fast["output_throughput"] / 10)
    assert real["median_tpot_ms"] == pytest.approx(fast["median_tpot_ms"] * 10)
    e2e = real["terms"][1]
    assert e2e["value"] == pytest.approx(29.0) and e2e["threshold"] == pytest.approx(300.0)
    assert real["terms"][0] == fast["terms"][0]  # a ratio has no time in it
    assert real["mean_in_flight"] == fast["mean_in_flight"] and real["level"] == 24
    fail = in_deployment_time(JudgedStep.model_validate(probe(1, 32, "fail", 3.6)), 10.0)
    assert fail.reason == "e2e_p95 36.00 s misses e2e_p95<=300s"  # the probe's own threshold was 30 s


def test_a_search_without_a_minimum_starts_near_the_demand(file: Any, tmp_path: Path) -> None:
    from llm_locust.commands.capacity.plan_run import first_level, run_args

    assert first_level(file) == 32  # 50 concurrent, closed loop without think time: 32 users
    args = run_args(file, file.plans[0], tmp_path / "A", 10.0)
    assert args[args.index("--search-min") + 1] == "32"
    rate = tmp_path / "rate.yaml"
    rate.write_text(PLANS.replace("{concurrency: 50}", "{rate: 5}") + "search: {kind: rate}\n")
    assert first_level(load_plan_file(rate)) == 4
    thinking = tmp_path / "think.yaml"
    thinking.write_text(PLANS.replace("{concurrency: 50}", '{users: 400, think: "exponential:mean=20s"}'))
    assert first_level(load_plan_file(thinking)) == 256
    given = tmp_path / "given.yaml"
    given.write_text(PLANS + "search: {min: 16}\n")
    args = run_args(load_plan_file(given), file.plans[0], tmp_path / "A", 10.0)
    assert args[args.index("--search-min") + 1] == "16"


def test_the_simulator_clock_line_says_when_it_fell_behind() -> None:
    from llm_locust.commands.capacity.sim_clock import clock_text

    kept = {"restarts": 0.0, "lost_s": 0.0, "late_max_s": 0.012, "steps": 1e4}
    assert clock_text({"u": kept}) == (
        "the simulator kept its schedule (latest step end 12 ms late, wall clock)",
        False,
    )
    behind = {**kept, "restarts": 3.0, "lost_s": 0.9}
    text, fell = clock_text({"u": kept, "v": behind})
    # what it means for the answer: the steps stand (the client measured validly), the server
    # they measured ran slow, so the capacity errs low (a new user could not tell whether "valid"
    # steps and "the host was overloaded" together meant a wrong answer)
    assert fell and text == (
        "the simulator fell behind its schedule 3 times (0.90 s of wall time lost): the host was "
        "overloaded, so the simulated server ran slow; the steps are still valid measurements of the "
        "client, and the capacity shown is if anything understated (a lower bound)"
    )
    # a plan that shows no capacity (the new-user trial's withheld B) is not told it has a bound
    none, _ = clock_text({"v": {**behind, "restarts": 1.0}}, capacity_shown=False)
    assert none == (
        "the simulator fell behind its schedule 1 time (0.90 s of wall time lost): the host was "
        "overloaded, so the simulated server ran slow; the steps are still valid measurements of the "
        "client"
    )
    assert clock_text({"u": None}) == ("", False)


def test_one_number_one_unit_when_the_search_ran_in_the_demand_s_unit(file: Any) -> None:
    """The table said "capacity 21.9", the verdict "22 concurrent", the progress "22 users"."""
    steps = [(16, "pass", 20.0), (32, "fail", 35.0), (24, "fail", 31.0), (20, "pass", 28.0),
             (22, "pass", 29.0), (23, "fail", 30.5)]  # fmt: skip
    probes = [probe(i, u, v, e) for i, (u, v, e) in enumerate(steps)]
    found = typed_result(SearchSpec("users", 16, demand=50), probes, "precision", 300.0)
    model = compare_plans(file, {"A": found}, {})
    report = model.to_json()
    a = report["plans"][0]
    assert a["capacity"] == 22 and a["capacity_unit"] == "concurrency"  # users without think: concurrency
    assert "capacity 22 concurrent" in a["verdict"] and "at 23 concurrent" in a["verdict"]
    row = next(line for line in format_comparison(model).splitlines() if line.startswith("A "))
    assert row.split()[2] == "22"  # not 21.6 (its mean in flight) nor 22.0
    assert "A: decided by users=22 (pass, valid) and users=23 (fail, valid)" in format_comparison(model)


def test_a_plan_settled_short_of_the_demand_shows_its_capacity_as_a_bracket(file: Any) -> None:
    """With a settled precision the search stops once the plan cannot meet the demand: the table
    and the verdict then say the capacity is a bracket, not a number to the search's precision."""
    spec = SearchSpec("users", 32, demand=50, settled_precision=0.25)
    steps = [(32, "pass", 20.0), (64, "fail", 36.0), (50, "fail", 32.0), (41, "pass", 28.0)]
    probes = [probe(i, u, v, e) for i, (u, v, e) in enumerate(steps)]
    settled = typed_result(spec, probes, "settled", 300.0)
    fine = typed_result(SearchSpec("users", 32, demand=50), probes, "precision", 300.0)
    report = compare_plans(file, {"C": settled, "A": fine}, {})
    c = next(p for p in report.to_json()["plans"] if p["name"] == "C")
    assert c["capacity"] == 41 and c["capacity_below"] == 50 and not c["meets"]
    assert c["search"]["settled_precision"] == 0.25 and c["search"]["stop_reason"] == "settled"
    assert "(capacity 41 to under 50 concurrent: bracketed to 25 % only, as it cannot meet" in c["verdict"]
    assert c["verdict"].startswith("fails 50 concurrent: E2E P95 32.00 s at 50 concurrent")
    text = format_comparison(report)
    row = next(line for line in text.splitlines() if line.startswith("C "))
    assert row.split()[2] == "41-<50", row
    # the same steps stopped by the search's own precision: one number, as before
    a = next(p for p in report.to_json()["plans"] if p["name"] == "A")
    assert a["capacity_below"] is None and "bracketed" not in a["verdict"]
    assert next(line for line in text.splitlines() if line.startswith("A ")).split()[2] == "41"


def test_a_withheld_plan_as_cheap_as_the_answer_withholds_the_comparison(file: Any) -> None:
    invalid = {**probe(1, 64, "pass", 20.0), "verdict": "invalid", "invalidity": "client",
               "reason": "host overloaded: other processes used 95 % of 2 cores"}  # fmt: skip
    withheld = typed_result(
        SearchSpec("users", 32),
        [probe(0, 32, "pass", 20.0), invalid, {**invalid, "index": 2}],
        "invalid",
        300.0,
    )
    report = compare_plans(file, {**SEARCHES, "A": withheld}, {}).to_json()
    a = report["plans"][0]
    assert (
        a["capacity"] is None
        and not a["meets"]
        and a["withheld"].startswith("answer withheld: host overloaded")
    )
    assert a["verdict"].startswith("not judged against 50 concurrent: answer withheld")
    assert report["cheapest"] is None and report["withheld"]  # A ($10/h) is cheaper than B ($20/h)
    assert report["answer"] == (
        "answer withheld: A (as cheap as or cheaper than B, which meets 50 concurrent) could not be "
        "measured validly on this run; see its line"
    )
    # withheld, but a valid step below the demand failed: shown not to meet it, it withholds nothing
    short = typed_result(
        SearchSpec("users", 32), [probe(0, 32, "fail", 35.0), probe(1, 16, "pass", 20.0), invalid,
                                  {**invalid, "index": 2}], "invalid", 300.0
    )  # fmt: skip
    shown = compare_plans(file, {**SEARCHES, "A": short}, {}).to_json()
    assert shown["plans"][0]["withheld"] and shown["plans"][0]["shown_short"]
    assert shown["cheapest"] == "B" and not shown["withheld"]
    # as cheap as the plan that meets ($20/h each): it might have been the answer, so none is given
    tie = compare_plans(file, {**SEARCHES, "C": withheld}, {}).to_json()
    assert tie["cheapest"] is None and tie["answer"].startswith("answer withheld: C ")
    # no plan meets and the dearer one is withheld: it is not 'as cheap or cheaper' than anything
    # (the new-user trial's run: A measured 22 against a demand of 50, B at $20/h withheld)
    fails = {**SEARCHES, "A": typed_result(SearchSpec("users", 32), [probe(0, 32, "fail", 35.0),
             probe(1, 16, "pass", 20.0)], "precision", 300.0), "B": withheld, "C": withheld}  # fmt: skip
    none = compare_plans(file, fails, {}).to_json()
    assert none["cheapest"] is None and none["withheld"] and not none["plans"][0]["meets"]
    assert none["answer"] == (
        "answer withheld: no plan measured validly meets 50 concurrent; B, C could not be measured "
        "validly on this run; see their lines"
    )
    last = format_comparison(compare_plans(file, fails, {})).splitlines()[-1]
    assert last == none["answer"]  # the end-of-run line is the answer itself, not "answer: answer withheld"
    # withheld but dearer than the plan that meets: the answer stands
    dear_c = file.plans[2].model_copy(update={"gpu_hour_cost": 3.0})
    dearer_file = file.model_copy(update={"plans": [file.plans[0], file.plans[1], dear_c]})
    dearer = compare_plans(dearer_file, {**SEARCHES, "C": withheld}, {}).to_json()
    assert dearer["cheapest"] == "B" and not dearer["withheld"]


def test_the_client_s_own_health_in_a_progress_line_stays_in_wall_clock() -> None:
    """A 10x demo's progress said "lag up to 6.16 s" for the load generator's 616 ms lag."""
    from llm_locust.load.search import Action, Decision
    from llm_locust.results.search_progress import SearchProgress

    reason = (
        "client saturated (local: 5 of 20 seconds at CPU >= 90 % of a core or event-loop lag p90 >= 100 ms; "
        "lag up to 616.0 ms): timings unreliable; the host is overloaded (...)"
    )
    step = JudgedStep.model_validate(
        {**probe(0, 24, "fail", 3.51), "verdict": "invalid", "invalidity": "client", "reason": reason}
    )
    shown = SearchProgress(10.0).judged(step, Decision(Action.RERUN, 24.0))
    assert (
        shown
        == f"search: users=24 invalid: {reason} (500 requests) -> rerun 24: the step was invalid "
        + ("(neither a pass nor a fail)")
    )


def test_a_withheld_plan_names_no_step_as_its_bound(file: Any) -> None:
    """Seen in the busy-host suite: a withheld plan had no capacity step and no deciding step, but
    capacity.json still named its failed step above as ``upper_step``, the bound of a bracket
    that no view showed: a withheld answer rests on no step."""
    steps = [(16, "pass", 20.0), (32, "fail", 35.0), (24, "invalid", 25.0), (24, "invalid", 25.0)]
    probes = [probe(i, u, v, e) for i, (u, v, e) in enumerate(steps)]
    found = typed_result(SearchSpec("users", 16, demand=50), probes, "precision", 300.0)
    withheld = found.model_copy(update={"withheld": "answer withheld: users=24 was invalid 2 times"})
    a = compare_plans(file, {"A": withheld}, {}).plans[0]
    assert a.withheld and a.capacity is None and a.capacity_step is None
    assert a.upper_step is None and a.capacity_below is None
    assert a.verdict.startswith("not judged against 50 concurrent: answer withheld")


def test_scaling_against_a_bracketed_capacity_is_a_range_not_its_lower_end(file: Any) -> None:
    """A settled short of the demand at 24 to under 28, B at 53 with twice the GPUs: the ratio is
    x1.89 to x2.21 (95 % to 110 %), not the x2.21 and "110% efficiency" of A's lower end alone."""
    settled = SearchSpec("users", 32, demand=50, settled_precision=0.25)
    a_steps = [(32, "fail", 36.0), (16, "pass", 20.0), (24, "pass", 28.0), (28, "fail", 31.0)]
    a = typed_result(settled, [probe(i, u, v, e) for i, (u, v, e) in enumerate(a_steps)], "settled", 300.0)
    b_steps = [(32, "pass", 20.0), (64, "fail", 36.0), (48, "pass", 27.0), (56, "fail", 31.0)]
    b_steps.append((53, "pass", 29.0))
    b = typed_result(SearchSpec("users", 32), [probe(i, u, v, e) for i, (u, v, e) in enumerate(b_steps)],
                     "precision", 300.0)  # fmt: skip
    report = compare_plans(file, {"A": a, "B": b}, {})
    pa, pb = report.plans
    assert (pa.capacity, pa.capacity_below, pb.capacity_below) == (24, 28, None)
    (pair,) = report.scaling
    low, high = pb.capacity / 28, pb.capacity / 24
    assert pair.capacity_ratio_range == pytest.approx((low, high))
    assert pair.efficiency_range == pytest.approx((low / 2, high / 2))
    text = format_comparison(report)
    line = next(x for x in text.splitlines() if x.startswith("scaling B vs A"))
    assert f"{low / 2:.0%} to {high / 2:.0%} efficiency" in line, line
    assert f": {high / 2:.0%} efficiency" not in line, line  # not the lower end's ratio alone
    scaling = report.to_json()["scaling"][0]
    assert scaling["efficiency_range"] == pytest.approx([low / 2, high / 2])
