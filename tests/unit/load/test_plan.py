"""The load plan takes the spawn rate the user gave, not Locust's default of 1."""

from __future__ import annotations

import argparse

from llm_locust.load.plan import build_load_plan


def options(ramp: str, spawn_rate: float | None = None) -> argparse.Namespace:
    """The load-model options a ``--ramp`` run parses to (defaults of ``register_load_options``)."""
    return argparse.Namespace(
        ramp=ramp,
        step_time="60s",
        warmup="0s",
        matrix="",
        request_rate=None,
        rate_ramp="",
        trace="",
        max_concurrency=None,
        spawn_rate=spawn_rate,
    )


def test_a_given_spawn_rate_paces_every_stage() -> None:
    plan = build_load_plan(options("4,16", spawn_rate=2.0))
    assert [s.spawn_rate for s in plan.stages] == [2.0, 2.0]


def test_without_one_each_stage_reaches_its_level_in_about_a_second() -> None:
    unset = options("4,16,48,8")
    assert [s.spawn_rate for s in build_load_plan(unset).stages] == [4, 12, 32, 40]
    unset.spawn_rate = 1.0  # Locust's main fills in 1 for a headless start, after init
    plan = build_load_plan(unset, spawn_rate=None)  # what the run recorded at init
    assert [s.spawn_rate for s in plan.stages] == [4, 12, 32, 40]
