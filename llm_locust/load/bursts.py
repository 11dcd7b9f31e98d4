"""Bursts: when each wave of ``--burst`` leaves, and which worker sends how much of it.

Waves leave at ``start + i * every`` seconds after the plan's start ``t0`` (open loop: on
time, whatever the server does), on top of the base load (closed-loop users or an open-loop
rate). With ``W`` workers, worker ``w`` sends ``size // W`` requests of each wave, plus one if
``w < size % W``, so the workers together send exactly ``size`` at once.

Each burst request's row says its wave (``burst``) and the wave's wall-clock time
(``burst_at``); the summary (:mod:`llm_locust.results.traffic`) keeps burst TTFT apart from
the base load's and measures how long each wave took to drain.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from collections.abc import Iterator

from llm_locust.config.burst import BurstSpec

__all__ = ["wave_offsets", "wave_share"]


def wave_offsets(spec: BurstSpec, horizon_s: float | None = None) -> Iterator[tuple[int, float]]:
    """``(wave index, offset from t0)`` of every wave before ``horizon_s`` (``None``: unbounded)."""
    i = 0
    while spec.count is None or i < spec.count:
        offset = spec.start_s + i * spec.every_s
        if horizon_s is not None and offset >= horizon_s:
            return
        yield i, offset
        i += 1


def wave_share(size: int, worker_index: int, workers: int) -> int:
    """This worker's requests of a wave of ``size``; the shares add up to ``size``."""
    workers = max(workers, 1)
    return size // workers + (1 if worker_index % workers < size % workers else 0)
