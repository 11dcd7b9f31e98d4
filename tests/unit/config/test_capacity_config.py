"""Capacity planning's configuration: think times, the demand, the search options, the plan file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from llm_locust.config.build import ConfigError, build_config
from llm_locust.config.demand import DEMAND_KINDS, DemandKind, parse_demand
from llm_locust.config.plans import PlanFileError, load_plan_file
from llm_locust.config.think import ThinkKind, ThinkTime, parse_think_time
from llm_locust.load.plan import build_load_plan
from llm_locust.results.capacity import amount, demand_block
from llm_locust.results.capacity_model import DemandUnit

SLO = "success>=99%,ttft_p95<=5s,e2e_p95<=30s"


def test_think_time_keeps_the_old_seconds_form() -> None:
    for text in (2.5, "2.5", "2.5s", "2500ms", "fixed:2.5s"):
        think = parse_think_time(text)
        assert think.kind == "fixed" and think.mean == 2.5 and not think.none
    assert parse_think_time(0).none and parse_think_time("0").none


def test_a_think_time_kind_is_the_member_and_spells_as_before() -> None:
    think = parse_think_time("lognormal:mean=20s,std=10s")
    assert think.kind is ThinkKind.LOGNORMAL and think.spec() == "lognormal:mean=20s,std=10s"
    assert ThinkTime("uniform", {"min": 1.0, "max": 3.0}).kind is ThinkKind.UNIFORM  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'gauss' is not a valid ThinkKind"):
        ThinkTime("gauss", {"mean": 1.0})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "mean", "std"),
    [
        ("lognormal:mean=20s,std=10s", 20.0, 10.0),
        ("normal:mean=2s,std=0.5s", 2.0, 0.5),
        ("exponential:mean=4s", 4.0, 4.0),
        ("uniform:5s,15s", 10.0, 10 / 12**0.5),
    ],
)
def test_think_time_draws_have_the_stated_mean_and_spread(text: str, mean: float, std: float) -> None:
    think = parse_think_time(text)
    rng = np.random.default_rng(3)
    draws = np.array([think.draw(rng) for _ in range(20_000)])
    assert think.mean == mean and draws.min() >= 0
    assert draws.mean() == pytest.approx(mean, rel=0.03) and draws.std() == pytest.approx(std, rel=0.06)


def test_think_time_truncation_and_scaling() -> None:
    think = parse_think_time("lognormal:mean=20s,std=10s,min=5s,max=30s")
    rng = np.random.default_rng(1)
    draws = [think.draw(rng) for _ in range(5000)]
    assert min(draws) >= 5.0 and max(draws) <= 30.0
    assert think.scaled(0.1).spec() == "lognormal:mean=2s,std=1s,min=0.5s,max=3s"
    assert parse_think_time(think.spec()) == think


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gamma:mean=2s", "unknown think-time distribution 'gamma'"),
        ("lognormal:mean=20s", "lognormal needs std"),
        ("uniform:5s,2s", "max below min"),
        ("normal:mean=2s,std=x", "not a duration"),
        ("exponential:mean=0s", "a mean above 0"),
    ],
)
def test_bad_think_times_are_one_line(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_think_time(text)
    with pytest.raises(ConfigError) as info:
        build_config({"think_time": text}, environ={})
    assert str(info.value).startswith("--think-time") and "\n" not in str(info.value)


def test_demand_forms() -> None:
    users = parse_demand("users=400,think=lognormal:mean=20s,std=10s")
    assert users.kind == "users" and users.value == 400 and users.think == "lognormal:mean=20s,std=10s"
    assert users.think_time.mean == 20.0 and users.text() == "400 users (think lognormal:mean=20s,std=10s)"
    assert parse_demand("concurrency=50").text() == "50 concurrent"
    assert parse_demand({"rate": 5}).text() == "5 req/s"
    assert parse_demand("concurrency=50").to_json() == {"concurrency": 50.0}


def test_a_demand_kind_is_the_member_and_spells_as_before() -> None:
    kinds = [parse_demand(text).kind for text in ("users=4", "concurrency=2", "rate=0.5")]
    assert kinds == [DemandKind.USERS, DemandKind.CONCURRENCY, DemandKind.RATE]
    assert all(type(kind) is DemandKind for kind in kinds)
    assert [str(kind) for kind in kinds] == list(DEMAND_KINDS) == ["users", "concurrency", "rate"]
    # the summary's demand block keeps its unit as plain text
    block = demand_block(parse_demand("rate=0.5"), [], "rate").to_json()
    assert type(block["unit"]) is str and json.dumps(block["unit"]) == '"rate"'
    assert amount(DemandKind.RATE, 2.5) == amount("rate", 2.5) == "2.5 req/s"
    assert amount(DemandUnit.CONCURRENCY, 21.94) == "21.9 concurrent"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("concurrency=50,rate=5", "exactly one"),
        ("concurency=50", "unknown key 'concurency'"),
        ("concurrency=-1", "concurrency"),
        ("rate=5,think=2s", "think= goes with users"),
        ("50", "expected key=value"),
    ],
)
def test_bad_demands_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_demand(text)
    with pytest.raises(ConfigError) as info:
        build_config({"demand": text, "slo": SLO}, environ={})
    assert str(info.value).startswith("--demand") and "\n" not in str(info.value)


def test_search_options_build_a_search_plan() -> None:
    config = build_config(
        {"search": "users", "search_min": "4", "search_precision": "5%", "slo": SLO, "step_time": "20s"},
        environ={},
    )
    load = config.load
    assert load.mode == "--search" and load.search_precision == 0.05 and not load.open_loop
    plan = build_load_plan(load)
    assert plan.search is not None and plan.search.minimum == 4 and plan.search.precision == 0.05
    assert [s.label for s in plan.stages or ()] == ["users=4"]
    rate = build_config({"search": "rate", "slo": SLO}, environ={})
    assert rate.load.open_loop and build_load_plan(rate.load).open_loop


def test_a_settled_precision_reaches_the_search_from_the_flag_and_the_plan_file(tmp_path: Path) -> None:
    """``--search-settled-precision`` (a plan file's ``search.settled_precision``) is the precision
    once the demand is shown not met; unset, the search's own precision holds throughout."""
    from llm_locust.commands.capacity.plan_run import run_args

    values = {"search": "users", "slo": SLO, "demand": "concurrency=50", "search_settled_precision": "25%"}
    plan = build_load_plan(build_config(values, environ={}).load)
    assert plan.search is not None and plan.search.settled_precision == 0.25 and plan.search.precision == 0.1
    plain = build_load_plan(build_config({"search": "users", "slo": SLO}, environ={}).load)
    assert plain.search is not None and plain.search.settled_precision is None
    path = tmp_path / "plans.yaml"
    path.write_text(PLAN_FILE.replace("search: {min: 8", "search: {settled_precision: 25%, min: 8"))
    file = load_plan_file(path)
    assert file.search.settled_precision == 0.25
    args = run_args(file, file.plans[0], tmp_path / "a", 1.0)
    assert args[args.index("--search-settled-precision") + 1] == "0.25"
    path.write_text(PLAN_FILE)
    assert "--search-settled-precision" not in run_args(load_plan_file(path), file.plans[0], tmp_path, 1.0)


@pytest.mark.parametrize(
    ("kind", "demand", "thinking", "level"),
    [
        ("users", "concurrency=50", False, 50.0),  # users without think time hold one request each
        ("users", "concurrency=50", True, None),  # thinking users are not concurrency
        ("users", "users=400", True, 400.0),
        ("rate", "rate=2.5", False, 2.5),
        ("rate", "concurrency=50", False, None),
        ("users", None, False, None),
    ],
)
def test_the_search_knows_the_demand_in_its_own_unit(
    kind: str, demand: str | None, thinking: bool, level: float | None
) -> None:
    values = {"search": kind, "slo": SLO, **({"demand": demand} if demand else {})}
    plan = build_load_plan(build_config(values, environ={}).load, thinking=thinking)
    assert plan.search is not None and plan.search.demand == level


def test_plans_searched_at_once_follow_the_host_s_cores() -> None:
    from llm_locust.commands.capacity.host import host_parallel

    assert [host_parallel(3, cores) for cores in (1, 2, 3, 4, 6, 8, 64)] == [1, 1, 1, 2, 3, 3, 3]
    assert host_parallel(1, 64) == 1


@pytest.mark.parametrize(
    ("values", "line"),
    [
        ({"search": "users"}, "--search needs an --slo"),
        ({"search": "tokens", "slo": SLO}, "--search 'tokens'"),
        ({"search": "users", "search_min": "1.5", "slo": SLO}, "--search-min '1.5'"),
        ({"search": "users", "search_min": "8", "search_max": "4", "slo": SLO}, "--search-max '4.0'"),
        ({"search_min": "8"}, "--search-min applies to --search"),
        ({"search": "users", "ramp": "1,2", "slo": SLO}, "--ramp and --search cannot be combined"),
        ({"search": "users", "slo": SLO, "warmup": "60s", "step_time": "30s"}, "--warmup '60.0'"),
        ({"search": "rate", "slo": SLO, "think_time": "2s"}, "--think-time paces closed-loop users"),
        ({"endpoints": "http://a:1,ftp://b"}, "--endpoints"),
        ({"endpoints": "http://a:1,http://a:1"}, "--endpoints"),
    ],
)
def test_bad_search_and_endpoint_options_are_one_line(values: dict[str, object], line: str) -> None:
    with pytest.raises(ConfigError) as info:
        build_config(values, environ={})
    assert str(info.value).startswith(line), str(info.value)
    assert "\n" not in str(info.value)


def test_endpoints_stand_in_for_the_host() -> None:
    config = build_config({"endpoints": "http://a:1/, http://b:2"}, require_host=True, environ={})
    assert config.request.endpoints == ("http://a:1", "http://b:2") and config.host == "http://a:1"


PLAN_FILE = """
demand: {concurrency: 50}
slo: "success>=99%,ttft_p95<=5s,e2e_p95<=30s"
workload: {profile: chat, max_tokens: 512}
search: {min: 8, precision: 10%, step_time: 30s}
plans:
  - {name: A-1x4gpu-tp4, endpoints: [http://a:8000], gpus: 4, gpu_hour_cost: 2.5}
  - {name: C-2x4gpu-tp4, endpoints: [http://c1:8000, http://c2:8000], gpus: 8, gpu_hour_cost: 2.5}
"""


def test_a_plan_file_is_read_and_typed(tmp_path: Path) -> None:
    path = tmp_path / "plans.yaml"
    path.write_text(PLAN_FILE)
    file = load_plan_file(path)
    assert file.demand.text() == "50 concurrent" and file.search.step_time == 30.0
    assert file.search.precision == 0.1 and file.workload.profile == "chat"
    c = file.plans[1]
    assert c.replicas == 2 and c.gpus_per_replica == 4 and c.endpoints == ("http://c1:8000", "http://c2:8000")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "gpu_hour_cost: 2.5}\n  - {name: C",
            "gpu_hour_costs: 2.5}\n  - {name: C",
            "plans[0].gpu_hour_costs: unknown key",
        ),
        ("search: {min: 8", "search: {mni: 8", "search.mni: unknown key"),
        (
            "search: {min: 8",
            "search: {balance: random, min: 8",
            "search.balance: Input should be 'round-robin' or 'least-in-flight'",
        ),
        (
            "search: {min: 8",
            "search: {balance_scope: session, min: 8",
            "search.balance_scope: Input should be 'request' or 'user'",
        ),
        ("demand: {concurrency: 50}", "demand: {concurrency: 50, rate: 2}", "exactly one"),
        ("gpus: 8", "gpus: 7", "7 GPUs do not split evenly over 2 replicas"),
        ("name: C-2x4gpu-tp4", "name: A-1x4gpu-tp4", "used twice"),
        ("name: C-2x4gpu-tp4", "name: C/2", "names a folder"),
        ('slo: "success>=99%', 'slo: "sucess>=99%', "slo"),
        ("endpoints: [http://a:8000]", "endpoints: [a:8000]", "endpoint 'a:8000': no scheme"),
        ("demand: {concurrency: 50}\n", "", "demand: missing"),
    ],
)
def test_a_bad_plan_file_is_one_line_naming_the_key(tmp_path: Path, old: str, new: str, message: str) -> None:
    path = tmp_path / "plans.yaml"
    assert old in PLAN_FILE
    path.write_text(PLAN_FILE.replace(old, new, 1))
    with pytest.raises(PlanFileError) as info:
        load_plan_file(path)
    text = str(info.value)
    assert message in text and "\n" not in text and str(path) in text
