"""Requests in flight, from the records' ``[start, start + e2e]`` intervals: the peak, the
time-weighted mean over a window, and Little's law.

Little's law (L = lambda * W) is a consistency check on the measurements: the time-weighted
mean number of requests in flight over a window (L, measured from every record that overlaps
it: warm-up, ramp-up and incomplete ones were in flight too) must equal the arrival rate in the
window times the mean E2E of those arrivals. The two sides agree when the window is long
against the E2E latency (edge effects shrink as E2E / window).

Times are wall-clock seconds (``start_time``), comparable across the workers of a run.
Records without an end (``e2e`` is ``nan``) are never in flight. Pure module: numpy only.
"""

from __future__ import annotations

import numpy as np

__all__ = ["littles_law", "mean_in_flight", "peak_in_flight"]


def peak_in_flight(start: np.ndarray, e2e: np.ndarray) -> int:
    """The most requests in flight at once: a sweep over the interval ends, where an end comes
    before a start at the same instant (back-to-back requests are never two in flight)."""
    known = ~np.isnan(e2e) & ~np.isnan(start)
    begins, ends = start[known], start[known] + e2e[known]
    if not begins.size:
        return 0
    times = np.concatenate((begins, ends))
    steps = np.concatenate((np.ones(begins.size, dtype=np.int64), -np.ones(ends.size, dtype=np.int64)))
    order = np.lexsort((steps, times))
    return int(max(np.cumsum(steps[order]).max(), 0))


def mean_in_flight(start: np.ndarray, e2e: np.ndarray, t_start: float, t_end: float) -> float:
    """Mean number in flight over ``[t_start, t_end]``: the exact integral of the in-flight count
    (each interval's overlap with the window, summed) divided by the window's length."""
    span = t_end - t_start
    if not span > 0:
        raise ValueError(f"window must have positive length, got [{t_start}, {t_end}]")
    known = ~np.isnan(e2e)
    begins, ends = start[known], start[known] + e2e[known]
    busy = np.clip(np.minimum(ends, t_end) - np.maximum(begins, t_start), 0.0, None)
    return float(busy.sum()) / span


def littles_law(start: np.ndarray, e2e: np.ndarray, t_start: float, t_end: float) -> dict[str, float | None]:
    """L = lambda * W over ``[t_start, t_end)``: ``mean_in_flight`` (L) against ``product``.

    ``arrival_rate`` counts the requests sent in the window (and in flight in it);
    ``mean_e2e`` is their mean E2E.
    """
    known = ~np.isnan(e2e)
    overlapping = known & (start < t_end) & (start + np.where(known, e2e, 0.0) > t_start)
    arrived = overlapping & (start >= t_start)
    rate = int(arrived.sum()) / (t_end - t_start)
    mean_e2e = float(e2e[arrived].mean()) if arrived.any() else None
    return {
        "mean_in_flight": mean_in_flight(start[overlapping], e2e[overlapping], t_start, t_end),
        "arrival_rate": rate,
        "mean_e2e": mean_e2e,
        "product": None if mean_e2e is None else rate * mean_e2e,
    }
