"""The load plan takes the spawn rate the user gave, not Locust's default of 1."""

from __future__ import annotations

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
