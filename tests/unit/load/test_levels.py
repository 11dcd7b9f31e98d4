"""Stage levels from sampled user counts: when a stage reached its target, for how long, its peak."""

from __future__ import annotations

import numpy as np
import pytest

from llm_locust.load.levels import LevelTracker
from llm_locust.load.stages import parse_ramp, parse_rate_ramp

T0 = 1_000.0


def feed(tracker: LevelTracker, counts: list[tuple[float, int]], dt: float = 0.1) -> None:
    """Sample a step function: ``counts`` is [(from elapsed time, user count), ...]."""
    end = tracker.plan.total_s
    for t in np.arange(0.0, end, dt):
        users = [n for since, n in counts if t >= since][-1]
        tracker.observe(T0 + float(t), users)
    tracker.finish(T0 + end)


def test_a_fast_ramp_reaches_every_level_and_holds_it() -> None:
    tracker = LevelTracker(parse_ramp("2,8", "10s"), T0)
    feed(tracker, [(0.0, 0), (0.3, 2), (10.0, 5), (10.5, 8)])
    first, second = tracker.facts(0), tracker.facts(1)
    assert first["peak_users"] == 2 and first["target_reached_s"] == pytest.approx(0.3, abs=0.11)
    assert first["time_at_target_s"] == pytest.approx(9.7, abs=0.15)
    assert second["target_reached_s"] == pytest.approx(0.5, abs=0.11)
    assert second["time_at_target_s"] == pytest.approx(9.5, abs=0.15)
    assert tracker.ramp_up(1, T0 + 10.2) and not tracker.ramp_up(1, T0 + 10.7)


def test_a_stage_that_never_reaches_its_target() -> None:
    tracker = LevelTracker(parse_ramp("16,48", "15s"), T0)
    feed(tracker, [(0.0, 16), (15.0, 17), (20.0, 22), (25.0, 31)])
    facts = tracker.facts(1)
    assert facts == {"peak_users": 31, "target_reached_s": None, "time_at_target_s": 0.0}
    assert tracker.ramp_up(1, T0 + 29.0)  # every request of the stage was sent below its level


def test_time_at_target_counts_only_the_time_at_target() -> None:
    """A worker lost mid-stage: the count falls below target for 3 s, then comes back."""
    tracker = LevelTracker(parse_ramp("10", "10s"), T0)
    feed(tracker, [(0.0, 10), (4.0, 7), (7.0, 10)])
    assert tracker.facts(0)["time_at_target_s"] == pytest.approx(7.0, abs=0.15)
    assert tracker.facts(0)["peak_users"] == 10


def test_a_step_down_reaches_its_level_when_the_stopped_users_are_gone() -> None:
    tracker = LevelTracker(parse_ramp("8,2", "5s"), T0)
    feed(tracker, [(0.0, 8), (5.0, 6), (7.5, 2)])
    facts = tracker.facts(1)
    assert facts["peak_users"] == 6 and facts["target_reached_s"] == pytest.approx(2.5, abs=0.11)


def test_rate_stages_have_no_user_level() -> None:
    tracker = LevelTracker(parse_rate_ramp("1,2", "5s"), T0)
    feed(tracker, [(0.0, 1)])
    assert tracker.facts(0) == {} and not tracker.ramp_up(0, T0 + 0.1)
    assert not tracker.ramp_up(None, T0)


def test_samples_before_the_start_or_after_the_end_are_ignored() -> None:
    tracker = LevelTracker(parse_ramp("3", "2s"), T0)
    tracker.observe(T0 - 1.0, 3)
    tracker.observe(T0 + 0.5, 3)
    tracker.observe(T0 + 5.0, 0)
    tracker.finish(T0 + 6.0)
    facts = tracker.facts(0)
    # the interval from 0.5 s is credited up to the stage's end (2 s), not to the late sample
    assert facts["target_reached_s"] == pytest.approx(0.5) and facts["time_at_target_s"] == pytest.approx(1.5)
