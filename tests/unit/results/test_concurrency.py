"""Requests in flight from the records' columns: the peak sweep, the time-weighted mean, Little's law."""

from __future__ import annotations

import numpy as np
import pytest

from llm_locust.results.concurrency import littles_law, mean_in_flight, peak_in_flight

NAN = float("nan")


def intervals(
    pairs: list[tuple[float, float | None]], offset: float = 1000.0
) -> tuple[np.ndarray, np.ndarray]:
    """(start, e2e) columns of records running over ``[start, end]`` (``end`` None: no end)."""
    start = np.array([offset + a for a, _ in pairs])
    e2e = np.array([NAN if b is None else b - a for a, b in pairs])
    return start, e2e


def test_mean_in_flight_constant_four() -> None:
    # Four back-to-back streams, each request lasting 1 s, over [0, 100].
    start, e2e = intervals([(float(t), float(t + 1)) for t in range(100) for _ in range(4)])
    assert mean_in_flight(start, e2e, 1000.0, 1100.0) == 4.0
    assert mean_in_flight(start, e2e, 1010.0, 1020.0) == 4.0


def test_mean_in_flight_partial_overlap() -> None:
    start, e2e = intervals([(-5.0, 5.0), (2.0, 4.0), (8.0, 20.0), (1.0, None)])
    # Overlaps with [0, 10]: 5 + 2 + 2 = 9.
    assert mean_in_flight(start, e2e, 1000.0, 1010.0) == pytest.approx(0.9)
    with pytest.raises(ValueError):
        mean_in_flight(start, e2e, 1005.0, 1005.0)


def test_littles_law() -> None:
    # Arrivals every 0.5 s, each lasting 2 s: L = 2 req/s * 2 s = 4.
    start, e2e = intervals([(i * 0.5, i * 0.5 + 2.0) for i in range(-4, 200)])
    law = littles_law(start, e2e, 1000.0, 1100.0)
    assert law["arrival_rate"] == 2.0
    assert law["mean_e2e"] == 2.0
    assert law["product"] == 4.0
    assert law["mean_in_flight"] == pytest.approx(4.0)
    empty = np.empty(0)
    assert littles_law(empty, empty, 0.0, 1.0)["product"] is None


def test_littles_law_uses_the_mean_e2e_not_the_median() -> None:
    # One arrival a second over [0, 100) s; E2E 1, 1, 1, 5 s repeating: the mean is 2 s, the median 1 s.
    # By hand: lambda = 100 / 100 s = 1 /s, W = (3 * 1 + 5) / 4 = 2 s, so lambda * W = 2 (the median
    # would give 1). L: every request lies inside the window but the last (99 s + 5 s), which
    # counts 1 s of its 5: (25 * 8 - 4) s / 100 s = 1.96.
    start, e2e = intervals([(float(i), i + (5.0 if i % 4 == 3 else 1.0)) for i in range(100)])
    law = littles_law(start, e2e, 1000.0, 1100.0)
    assert law["arrival_rate"] == 1.0
    assert law["mean_e2e"] == 2.0
    assert law["product"] == 2.0
    assert law["mean_in_flight"] == pytest.approx(1.96)


def test_peak_sweep() -> None:
    start = np.array([0.0, 1.0, 2.0, 2.5])
    assert peak_in_flight(start, np.array([10.0, 1.0, 1.0, 1.0])) == 3
    # back to back: one ends exactly when the next starts -> never two in flight
    assert peak_in_flight(np.array([0.0, 1.0]), np.array([1.0, 1.0])) == 1
    assert peak_in_flight(np.array([0.0]), np.array([NAN])) == 0
