"""The arithmetic of a capacity answer: cost per token, per-GPU numbers, headroom, scaling.

- Cost per 1M output tokens (the formula InferenceX uses): ``GPU $/hour x GPUs / (output
  tokens per hour / 1e6)``, at the throughput the deployment delivers at its capacity, and
  at the throughput the demand would draw from it.
- Output tokens/s at the demand: interpolated linearly in the demand's unit between the two
  measured passing steps around it (between the origin and the lowest step below it: at low
  load throughput is proportional to load). Never extrapolated above the highest pass: a
  deployment that cannot carry the demand has no cost "at the demand".
- Headroom: ``capacity / demand - 1`` in the demand's unit (0.28: 28 % above the demand;
  negative: short of it).
- Scaling efficiency of plan B against plan A when they differ in one resource only:
  ``(capacity_B / capacity_A) / (resource_B / resource_A)`` (1.0: linear).
- Tokens/s per user at capacity: ``1 / TPOT`` (the median TPOT of the capacity step).

Pure module: no Locust, no network.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

__all__ = [
    "SECONDS_PER_HOUR",
    "cost_per_million",
    "headroom",
    "interpolate",
    "per_gpu",
    "scaling_efficiency",
    "tokens_per_user",
]

SECONDS_PER_HOUR = 3600.0


def cost_per_million(gpu_hour_cost: float, gpus: int, output_tokens_per_s: float | None) -> float | None:
    """Dollars per 1M output tokens; ``None`` when nothing is produced."""
    if output_tokens_per_s is None or output_tokens_per_s <= 0:
        return None
    tokens_per_hour = output_tokens_per_s * SECONDS_PER_HOUR
    return gpu_hour_cost * gpus / (tokens_per_hour / 1e6)


def per_gpu(value: float | None, gpus: int) -> float | None:
    return None if value is None else value / gpus


def tokens_per_user(median_tpot_s: float | None) -> float | None:
    """Output tokens per second one user sees while streaming: ``1 / TPOT``."""
    if median_tpot_s is None or median_tpot_s <= 0:
        return None
    return 1.0 / median_tpot_s


def headroom(capacity: float | None, demand: float) -> float | None:
    if capacity is None:
        return None
    return capacity / demand - 1.0


def interpolate(points: Sequence[tuple[float, float]], x: float) -> float | None:
    """``y`` at ``x`` on the line through measured ``(x, y)`` points (with the origin), or
    ``None`` above the highest point. ``points`` need not be sorted."""
    ordered = sorted([(0.0, 0.0), *points])
    if not points or x > ordered[-1][0]:
        return None
    for (x0, y0), (x1, y1) in itertools.pairwise(ordered):
        if x0 <= x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return None


def scaling_efficiency(capacity_a: float, resource_a: float, capacity_b: float, resource_b: float) -> float:
    """How much of B's extra resource shows up as extra capacity (1.0: linear scaling)."""
    return (capacity_b / capacity_a) / (resource_b / resource_a)
