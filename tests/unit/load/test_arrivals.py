"""Open-loop arrival schedules: rates, burstiness, ramps and the distributed split."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llm_locust.load.arrivals import (
    ARRIVAL_KINDS,
    ArrivalKind,
    ArrivalProcess,
    ArrivalSchedule,
    RateStep,
    constant,
    gamma,
    parse_arrival,
    poisson,
    split_for_worker,
)
from tests.unit.load.schedules import interarrival_cv, make_schedule


def test_poisson_count_and_cv() -> None:
    rate, span = 20.0, 300.0
    offsets = make_schedule(poisson(rate), duration_s=span, seed=7).offsets()
    expected = rate * span
    assert abs(offsets.size - expected) <= 4 * math.sqrt(expected)
    assert offsets[0] == 0.0
    assert np.all(np.diff(offsets) >= 0) and offsets[-1] < span
    assert interarrival_cv(offsets) == pytest.approx(1.0, abs=0.1)


def test_gamma_burstiness_sets_cv2() -> None:
    offsets = make_schedule(gamma(20.0, 0.25), duration_s=300.0, seed=3).offsets()
    assert interarrival_cv(offsets) ** 2 == pytest.approx(4.0, rel=0.2)
    assert offsets.size / 300.0 == pytest.approx(20.0, rel=0.15)


def test_constant_is_evenly_spaced() -> None:
    offsets = make_schedule(constant(4.0), duration_s=10.0).offsets()
    assert offsets.size == 40
    assert interarrival_cv(offsets) == pytest.approx(0.0, abs=1e-9)
    assert np.allclose(np.diff(offsets), 0.25)


def test_rate_ramp_steps_change_rate_at_boundaries() -> None:
    offsets = make_schedule(constant(1.0), rates=[1, 2, 4, 8], step_s=10.0).offsets()
    counts = np.histogram(offsets, bins=[0, 10, 20, 30, 40])[0]
    assert counts.tolist() == [10, 20, 40, 80]
    assert offsets[-1] < 40.0
    # Offsets continue across the boundary: no restart, no duplicate at 10 s.
    assert np.all(np.diff(offsets) > 0)


def test_rate_ramp_poisson_counts_and_zero_step() -> None:
    sched = make_schedule(poisson(1.0), rates=[5, 0, 50], step_s=20.0, seed=11)
    offsets = sched.offsets()
    counts = np.histogram(offsets, bins=[0, 20, 40, 60])[0]
    assert counts[1] == 0
    assert abs(counts[0] - 100) <= 4 * 10 and abs(counts[2] - 1000) <= 4 * math.sqrt(1000)
    assert sched.duration_s == 60.0


def test_seed_reproducible_and_prefix_stable() -> None:
    a = make_schedule(poisson(10.0), duration_s=50.0, seed=1).offsets()
    b = make_schedule(poisson(10.0), duration_s=50.0, seed=1).offsets()
    longer = make_schedule(poisson(10.0), duration_s=500.0, seed=1).offsets()
    assert np.array_equal(a, b)
    assert np.array_equal(longer[: a.size], a)
    assert not np.array_equal(a, make_schedule(poisson(10.0), duration_s=50.0, seed=2).offsets())


def test_open_ended_iteration_matches_offsets() -> None:
    sched = make_schedule(gamma(5.0, 2.0), seed=4)
    assert sched.duration_s is None
    it = iter(sched)
    head = [next(it) for _ in range(2000)]
    assert np.array_equal(np.array(head), sched.offsets(until=head[-1] + 1e-9))
    with pytest.raises(ValueError):
        sched.offsets()


@pytest.mark.parametrize("process", [poisson(30.0), gamma(30.0, 0.5), constant(30.0)])
def test_worker_split_union_is_the_global_schedule(process) -> None:
    global_ = make_schedule(process, rates=[10, 30], step_s=20.0, seed=5)
    reference = global_.offsets()
    for workers in (1, 2, 3):
        parts = [split_for_worker(global_, i, workers).offsets() for i in range(workers)]
        assert sum(p.size for p in parts) == reference.size
        assert np.array_equal(np.sort(np.concatenate(parts)), reference)
        if workers > 1:
            assert parts[0][0] == reference[0] and parts[1][0] == reference[1]


def test_split_needs_a_seed_and_valid_index() -> None:
    unseeded = make_schedule(poisson(1.0), duration_s=10.0)
    assert split_for_worker(unseeded, 0, 1) is not None
    with pytest.raises(ValueError, match="seed"):
        split_for_worker(unseeded, 0, 2)
    seeded = make_schedule(poisson(1.0), duration_s=10.0, seed=1)
    with pytest.raises(ValueError):
        split_for_worker(seeded, 2, 2)


def test_parse_arrival() -> None:
    assert parse_arrival("Poisson", 5) == poisson(5.0)
    assert parse_arrival("gamma", 5, 0.5) == gamma(5.0, 0.5)
    assert parse_arrival("gamma", 5, None).burstiness == 1.0
    assert parse_arrival("constant", 2.5, None).cv2 == 0.0
    assert parse_arrival("poisson", 5, 1.0).kind is ArrivalKind.POISSON


def test_an_arrival_kind_given_as_text_is_the_member_and_a_wrong_one_names_the_flag() -> None:
    process = ArrivalProcess("gamma", 2.0, 0.5)  # type: ignore[arg-type]
    assert process.kind is ArrivalKind.GAMMA and process.cv2 == 2.0
    assert ARRIVAL_KINDS == ("poisson", "gamma", "constant")  # the spellings --arrival takes
    with pytest.raises(ValueError) as info:
        ArrivalProcess("bursty", 1.0)  # type: ignore[arg-type]
    assert str(info.value) == "--arrival must be one of poisson, gamma, constant, got 'bursty'"


@pytest.mark.parametrize(
    ("kind", "rate", "burst", "flag"),
    [
        ("uniform", 1.0, None, "--arrival"),
        ("poisson", 0.0, None, "--request-rate"),
        ("poisson", math.inf, None, "--request-rate"),
        ("gamma", 1.0, -1.0, "--burstiness"),
        ("poisson", 1.0, 0.5, "--burstiness"),
        ("constant", 1.0, 2.0, "--burstiness"),
    ],
)
def test_parse_arrival_errors(kind, rate, burst, flag) -> None:
    with pytest.raises(ValueError, match=flag) as info:
        parse_arrival(kind, rate, burst)
    assert "\n" not in str(info.value)


def test_schedule_validation() -> None:
    with pytest.raises(ValueError):
        ArrivalSchedule(poisson(1.0), (RateStep(1.0, None), RateStep(1.0, 5.0)))
    with pytest.raises(ValueError, match="--step-time"):
        make_schedule(poisson(1.0), rates=[1, 2])
    with pytest.raises(ValueError):
        make_schedule(poisson(1.0), rates=[1, -2], step_s=1.0)


def test_interarrival_cv_edge_cases() -> None:
    assert math.isnan(interarrival_cv([1.0, 2.0]))
    assert math.isnan(interarrival_cv([1.0, 1.0, 1.0]))
    assert interarrival_cv([3.0, 0.0, 1.0, 2.0]) == 0.0
