"""A calibrated engine model in virtual time: latencies at a level, and the SLO capacity search.

``llm-locust calibrate`` asks :func:`level_stats` for the model's TTFT, TPOT and E2E at each
measured level (its residuals); ``llm-locust predict`` asks :func:`search_capacity` for the
SLO capacity, found by the very search ``--search users`` runs (:func:`llm_locust.load.search.decide`),
each step a closed loop on the engine model (:func:`~llm_locust.sim.virtual.closed_loop`)
instead of a load test: seconds instead of minutes. Replicas behind round robin are
independent engines sharing the users evenly (a closed loop without think time sends each
replica the same share). A request's TPOT is ``(E2E - TTFT) / (output - 1)``; an ``itl``
line of an SLO is judged on it (the model has no chunking between tokens).

Pure module: no network, no real clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from llm_locust.config.engine_model import EngineModel
from llm_locust.config.slo import SloLine, SloSpec
from llm_locust.load.search import Probe, SearchSpec, Verdict, bracket, decide
from llm_locust.sim.engine import EngineConfig
from llm_locust.sim.virtual import Outcome, closed_loop

__all__ = ["Horizon", "engine_config", "judge", "level_stats", "search_capacity", "unsupported_lines"]

Draw = Callable[[], tuple[int, int]]


@dataclass(frozen=True)
class Horizon:
    """Virtual seconds per level: ``seconds`` run, the first ``warmup`` left out."""

    seconds: float = 900.0
    warmup: float = 150.0


def engine_config(model: EngineModel, draw: Mapping[str, float] | None = None) -> EngineConfig:
    return EngineConfig(**model.engine_fields(draw))


def _outcomes(
    model: EngineModel, users: int, make_draw: Callable[[int], Draw], horizon: Horizon,
    replicas: int = 1, think: Callable[[], float] | None = None, draw: Mapping[str, float] | None = None,
) -> list[Outcome]:  # fmt: skip
    cfg = engine_config(model, draw)
    out: list[Outcome] = []
    for r in range(replicas):
        share = users // replicas + (1 if r < users % replicas else 0)
        if share:
            out += closed_loop(
                cfg, share, make_draw(r), horizon.seconds, horizon.warmup, think, model.overhead(draw)
            )
    return out


def _series(outcomes: Sequence[Outcome]) -> dict[str, np.ndarray]:
    ttft = np.array([o.ttft for o in outcomes])
    e2e = np.array([o.e2e for o in outcomes])
    n = np.array([o.output_tokens for o in outcomes])
    tpot = np.where(n > 1, (e2e - ttft) / np.maximum(n - 1, 1), np.nan)
    return {"ttft": ttft, "tpot": tpot[np.isfinite(tpot)], "e2e": e2e, "itl": tpot[np.isfinite(tpot)]}


def level_stats(
    model: EngineModel, users: int, make_draw: Callable[[int], Draw], horizon: Horizon,
    replicas: int = 1, think: Callable[[], float] | None = None,
) -> dict[str, float]:  # fmt: skip
    """The model's TTFT, TPOT and E2E P50/P95 at ``users`` (seconds), and how many requests."""
    series = _series(_outcomes(model, users, make_draw, horizon, replicas, think))
    out: dict[str, float] = {"requests": float(len(series["e2e"]))}
    for metric in ("ttft", "tpot", "e2e"):
        for q in (50, 95):
            xs = series[metric]
            out[f"{metric}_p{q}"] = float(np.percentile(xs, q)) if len(xs) else float("nan")
    return out


def unsupported_lines(slo: SloSpec) -> list[str]:
    """The SLO lines a model cannot judge (server series, drift, intended times)."""
    return [line.text for line in slo if line.kind != "request" or line.intended]


def _stat(xs: np.ndarray, stat: str) -> float:
    if not len(xs):
        return float("nan")
    if stat == "mean":
        return float(np.mean(xs))
    if stat == "max":
        return float(np.max(xs))
    return float(np.percentile(xs, float(stat[1:])))


def _holds(line: SloLine, series: Mapping[str, np.ndarray]) -> bool:
    if line.metric == "success":
        return line.holds(1.0)  # the model fails no request
    assert line.stat is not None
    value = _stat(series[line.metric], line.stat)
    return value == value and line.holds(value)


def judge(slo: SloSpec, outcomes: Sequence[Outcome]) -> Verdict:
    """``pass`` or ``fail`` of a level's outcomes (no request finished: ``fail``)."""
    if not outcomes:
        return Verdict.FAIL
    series = _series(outcomes)
    return Verdict.PASS if all(_holds(line, series) for line in slo) else Verdict.FAIL


def search_capacity(
    model: EngineModel, slo: SloSpec, spec: SearchSpec, make_draw: Callable[[int], Draw],
    horizon: Horizon, replicas: int = 1, think: Callable[[], float] | None = None,
    draw: Mapping[str, float] | None = None,
) -> tuple[float, list[Probe]]:  # fmt: skip
    """The search's answer (highest level shown to pass, 0 if none) and its steps."""
    probes: list[Probe] = []
    while True:
        decision = decide(spec, probes)
        if decision.action != "probe":
            break
        assert decision.level is not None
        outcomes = _outcomes(model, int(decision.level), make_draw, horizon, replicas, think, draw)
        probes.append(Probe(decision.level, judge(slo, outcomes)))
    lo, _hi = bracket(probes)
    return (lo or 0.0), probes
