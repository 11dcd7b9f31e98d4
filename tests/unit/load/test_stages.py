"""Stage plans (ramp, rate ramp, matrix), stage lookup and durations."""

from __future__ import annotations

import pytest

from llm_locust.config.stage_kind import StageKind
from llm_locust.load.stages import (
    StagePlan,
    parse_duration,
    parse_matrix,
    parse_ramp,
    parse_rate_ramp,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("60s", 60.0),
        ("2m", 120.0),
        ("1h30m", 5400.0),
        ("90", 90.0),
        ("1.5m", 90.0),
        ("500ms", 0.5),
        ("1m 30s", 90.0),
        (45, 45.0),
        ("0", 0.0),
    ],
)
def test_parse_duration(text, seconds) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "10x", "m5", "-5s", "5s10", "1h-2m", "inf"])
def test_parse_duration_errors(text) -> None:
    with pytest.raises(ValueError, match="--step-time"):
        parse_duration(text)


def test_parse_ramp() -> None:
    plan = parse_ramp("1,5,10,20,50", step_time="60s", warmup="10s")
    assert [s.target for s in plan] == [1, 5, 10, 20, 50]
    assert [s.users for s in plan] == [1, 5, 10, 20, 50]
    assert [s.start_s for s in plan] == [0, 60, 120, 180, 240]
    assert plan.total_s == 300.0
    assert [s.spawn_rate for s in plan] == [1.0, 4.0, 5.0, 10.0, 30.0]
    assert all(s.kind == "users" and s.warmup_s == 10.0 for s in plan)
    assert plan[2].label == "users=10"
    assert parse_ramp("1,2", spawn_rate=3.0)[1].spawn_rate == 3.0


@pytest.mark.parametrize(
    ("kwargs", "flag"),
    [
        ({"levels": "1,x"}, "--ramp"),
        ({"levels": "1,,2"}, "--ramp"),
        ({"levels": "1,2.5"}, "--ramp"),
        ({"levels": "0,1"}, "--ramp"),
        ({"levels": "1", "step_time": "0s"}, "--step-time"),
        ({"levels": "1", "step_time": "10s", "warmup": "10s"}, "--warmup"),
        ({"levels": "1", "spawn_rate": -1.0}, "--spawn-rate"),
    ],
)
def test_parse_ramp_errors(kwargs, flag) -> None:
    with pytest.raises(ValueError, match=flag) as info:
        parse_ramp(**kwargs)
    assert "\n" not in str(info.value)


def test_parse_rate_ramp() -> None:
    plan = parse_rate_ramp("1,2,4,8.5", step_time="30s")
    assert [s.rate for s in plan] == [1, 2, 4, 8.5]
    assert all(s.kind == "rate" and s.users is None for s in plan)
    assert plan.total_s == 120.0 and plan[3].label == "rate=8.5"
    with pytest.raises(ValueError, match="--rate-ramp"):
        parse_rate_ramp("1,-2")


def test_parse_matrix_orders_cells_outer_users_inner() -> None:
    plan = parse_matrix("users=1,10,50;input=128,1024;output=128,512", step_time="1m")
    assert len(plan) == 12
    cells = [(s.input, s.output, s.users) for s in plan]
    assert cells[:4] == [("128", "128", 1), ("128", "128", 10), ("128", "128", 50), ("128", "512", 1)]
    assert cells[-1] == ("1024", "512", 50)
    assert plan[4].label == "users=10 input=128 output=512"
    assert plan[4].overrides() == {"input": "128", "output": "512"}
    assert [s.index for s in plan] == list(range(12))
    assert plan.total_s == 720.0


def test_parse_matrix_rate_and_profile() -> None:
    plan = parse_matrix("rate=2,4;profile=chat,code")
    assert [(s.profile, s.rate) for s in plan] == [("chat", 2), ("chat", 4), ("code", 2), ("code", 4)]
    assert plan[0].label == "rate=2 profile=chat"


@pytest.mark.parametrize(
    "spec",
    ["input=128", "users=1;rate=2", "users=1;color=red", "users=1;users=2", "users", "users=1;input="],
)
def test_parse_matrix_errors(spec) -> None:
    with pytest.raises(ValueError, match="--matrix"):
        parse_matrix(spec)


def test_parse_matrix_yaml(tmp_path) -> None:
    path = tmp_path / "matrix.yaml"
    path.write_text("users: [1, 4]\ninput: [128, 'uniform:100-200']\noutput: 64\nstep_time: 2m\nwarmup: 5s\n")
    plan = parse_matrix(str(path))
    assert [(s.input, s.output, s.users) for s in plan] == [
        ("128", "64", 1),
        ("128", "64", 4),
        ("uniform:100-200", "64", 1),
        ("uniform:100-200", "64", 4),
    ]
    assert plan[0].duration_s == 120.0 and plan[0].warmup_s == 5.0
    bad = tmp_path / "bad.yaml"
    bad.write_text("- 1\n- 2\n")
    with pytest.raises(ValueError, match="--matrix"):
        parse_matrix(str(bad))
    with pytest.raises(ValueError, match="--matrix"):
        parse_matrix(str(tmp_path / "missing.yaml"))


def test_stage_at_boundaries() -> None:
    plan = parse_ramp("1,2,3", step_time="10s", warmup="2s")
    assert plan.stage_at(0.0) == (plan[0], 0.0)
    stage, t = plan.stage_at(9.999)
    assert stage is plan[0] and t == pytest.approx(9.999)
    assert plan.stage_at(10.0) == (plan[1], 0.0)
    stage, t = plan.stage_at(21.5)
    assert stage is plan[2] and t == pytest.approx(1.5) and stage.in_warmup(t)
    assert not plan[2].in_warmup(2.0)
    assert plan.stage_at(30.0) == (None, 0.0)
    assert plan.stage_at(45.0) == (None, 15.0)
    with pytest.raises(ValueError):
        plan.stage_at(-1.0)


def test_plan_json_and_empty() -> None:
    plan = parse_ramp("1,2", step_time="5s")
    assert plan.to_json()[1]["start_s"] == 5.0
    with pytest.raises(ValueError):
        StagePlan(())


def test_stage_kinds_are_an_enum_that_reads_as_its_json() -> None:
    users, rate = parse_ramp("1", "5s")[0], parse_rate_ramp("2", "5s")[0]
    assert users.kind is StageKind.USERS and rate.kind is StageKind.RATE
    assert users.to_json()["kind"] == "users" and f"{rate.kind}" == "rate"
