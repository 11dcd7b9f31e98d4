"""The load plan takes the spawn rate the user gave, not Locust's default of 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_locust.config.build import build_config
from llm_locust.config.model import LoadConfig
from llm_locust.load.plan import build_load_plan


def options(ramp: str, spawn_rate: float | None = None) -> LoadConfig:
    """The load part of a ``--ramp`` run's configuration (``spawn_rate``: ``-r``, or not given)."""
    return build_config({"ramp": ramp, "spawn_rate": spawn_rate}, environ={}).load


def test_a_given_spawn_rate_paces_every_stage() -> None:
    plan = build_load_plan(options("4,16", spawn_rate=2.0))
    assert [s.spawn_rate for s in plan.stages] == [2.0, 2.0]


def test_without_one_each_stage_reaches_its_level_in_about_a_second() -> None:
    unset = options("4,16,48,8")
    assert [s.spawn_rate for s in build_load_plan(unset).stages] == [4, 12, 32, 40]
    # Locust's main fills in 1 for a headless start after init; the configuration (and the plan)
    # were built when the command line was parsed, before that, and are not rebuilt from it
    assert unset.spawn_rate is None


def test_a_replay_stage_holds_the_traces_last_arrival(tmp_path: Path) -> None:
    """Stages are [start, end): a stage ending at the last offset left the last arrival outside it."""
    trace = tmp_path / "t.jsonl"
    offsets_ms = [0, 250, 1000, 1500, 3000]
    trace.write_text(
        "".join(f'{{"timestamp": {ms}, "input_length": 16, "output_length": 4}}\n' for ms in offsets_ms)
    )
    plan = build_load_plan(build_config({"trace": str(trace)}, environ={}).load)
    assert plan.stages is not None
    for ms in offsets_ms:
        stage, _ = plan.stages.stage_at(ms / 1000)
        assert stage is not None, f"the arrival at {ms} ms is in no stage"
    # five arrivals over 3 s: four gaps of 0.75 s on average; the stage spans five of them
    assert plan.stages.total_s == pytest.approx(3.75)
    assert plan.stages.stages[0].target == pytest.approx(4 / 3.0)  # req/s: the gaps' rate
