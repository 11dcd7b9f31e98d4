"""Test helpers for arrival schedules: a one-worker schedule from a process, and the gaps' CV.

Only tests use these; a run builds its schedule from its stages (:mod:`llm_locust.load.sources`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from llm_locust.load.arrivals import ArrivalProcess, ArrivalSchedule, RateStep

__all__ = ["interarrival_cv", "make_schedule"]


def make_schedule(
    process: ArrivalProcess,
    rates: Sequence[float] | None = None,
    step_s: float | None = None,
    duration_s: float | None = None,
    seed: int | None = None,
) -> ArrivalSchedule:
    """A single-worker schedule.

    Without ``rates``: ``process.rate`` for ``duration_s`` (``None``: forever). With
    ``rates`` (``--rate-ramp``): each rate for ``step_s`` seconds, in order.
    """
    if rates is None:
        return ArrivalSchedule(process, (RateStep(process.rate, duration_s),), seed)
    if not rates:
        raise ValueError("--rate-ramp needs at least one rate")
    if step_s is None:
        raise ValueError("--rate-ramp needs --step-time")
    return ArrivalSchedule(process, tuple(RateStep(float(r), step_s) for r in rates), seed)


def interarrival_cv(times: Sequence[float] | np.ndarray) -> float:
    """Coefficient of variation (std/mean) of the gaps between sorted ``times``.

    ``nan`` with fewer than two gaps or a zero mean gap.
    """
    t = np.sort(np.asarray(times, dtype=float))
    if t.size < 3:
        return math.nan
    gaps = np.diff(t)
    mean = float(gaps.mean())
    return math.nan if mean <= 0 else float(gaps.std() / mean)
