"""A calibrated engine model in virtual time: latencies at a level, and the SLO capacity search.

``llm-locust calibrate`` asks :func:`level_stats` for the model's TTFT, TPOT and E2E at each
measured level (its residuals); ``llm-locust predict`` asks :func:`search_capacity` for the
SLO capacity, found by the very search ``--search users`` runs (:func:`llm_locust.load.search.decide`),
each step a closed loop on the engine model (:func:`~llm_locust.sim.virtual.closed_loop`)
instead of a load test: seconds instead of minutes. Replicas are engines behind the run's
balancer (:class:`~llm_locust.load.replicas.Routing`): picking for every request, one virtual
clock runs them all (:func:`~llm_locust.sim.virtual.fleet_loop`: a user's requests move between
replicas and each replica's batch rises and falls around its share, which raises the tail
latencies over users kept apart); picking once per user, each replica is its own closed loop
with its even share of the users. A request's TPOT is ``(E2E - TTFT) / (output - 1)``; an ``itl``
line of an SLO is judged on it (the model has no chunking between tokens).

Pure module: no network, no real clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from llm_locust.config.balance import BalanceScope
from llm_locust.config.engine_model import EngineModel
from llm_locust.config.slo import SloKind, SloLine, SloSpec
from llm_locust.load.replicas import Routing
from llm_locust.load.search import Probe, SearchSpec, Verdict, bracket, decide
from llm_locust.sim.engine import EngineConfig
from llm_locust.sim.virtual import Outcome, closed_loop, fleet_loop

__all__ = [
    "Horizon",
    "engine_config",
    "in_doubt",
    "judge",
    "level_stats",
    "level_verdict",
    "search_capacity",
    "unsupported_lines",
]

Draw = Callable[[], tuple[int, int]]
#: a run's default: replicas picked in turn for every request
ROUND_ROBIN = Routing()


@dataclass(frozen=True)
class Horizon:
    """Virtual seconds per level: ``seconds`` run, the first ``warmup`` left out.

    ``requests`` (a search's levels): a level whose verdict the first ``seconds`` leave in
    doubt (:func:`in_doubt`) runs again until that many requests were sent after the warm-up
    (at most ``limit`` virtual seconds), each followed to its end, and is judged on those: a
    P95 of thousands of requests instead of the ~1,000 of 900 s, whose seed noise moved an
    answer by a bisection step. Levels far from the SLO keep the short run.

    Every run follows each request sent after the warm-up to its end
    (:func:`~llm_locust.sim.virtual.closed_loop`'s ``follow``), as a load test follows a level's
    requests: a run that stopped at ``seconds`` would leave out the requests still running then,
    the slow ones, and bias a level's P95 low (calibrate's residuals were, before).
    """

    seconds: float = 900.0
    warmup: float = 150.0
    requests: int | None = None
    limit: float = 100_000.0


def engine_config(model: EngineModel, draw: Mapping[str, float] | None = None) -> EngineConfig:
    return EngineConfig(**model.engine_fields(draw))


def _outcomes(
    model: EngineModel, users: int, make_draw: Callable[[int], Draw], horizon: Horizon,
    replicas: int = 1, think: Callable[[], float] | None = None, draw: Mapping[str, float] | None = None,
    precise: bool = False, routing: Routing = ROUND_ROBIN,
) -> list[Outcome]:  # fmt: skip
    """The level's requests; ``precise``: ``horizon.requests`` of them (shared by the replicas
    as the users are), not ``horizon.seconds``."""
    cfg = engine_config(model, draw)
    if replicas > 1 and routing.scope is BalanceScope.REQUEST:
        requests = horizon.requests if precise and horizon.requests else None
        return fleet_loop(
            cfg, users, make_draw, replicas, horizon.limit if requests else horizon.seconds, horizon.warmup,
            think, model.overhead(draw), requests, follow=True, balance=routing.policy,
        )  # fmt: skip
    out: list[Outcome] = []
    for r in range(replicas):
        share = users // replicas + (1 if r < users % replicas else 0)
        if not share:
            continue
        if precise and horizon.requests:
            count = -(-horizon.requests * share // users)
            seconds: float = horizon.limit
        else:
            count, seconds = None, horizon.seconds
        out += closed_loop(
            cfg, share, make_draw(r), seconds, horizon.warmup, think, model.overhead(draw), count, follow=True
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
    """The model's TTFT, TPOT and E2E P50/P95 at ``users`` (seconds), and how many requests: every
    request sent in ``horizon``'s window, each followed to its end."""
    series = _series(_outcomes(model, users, make_draw, horizon, replicas, think))
    out: dict[str, float] = {"requests": float(len(series["e2e"]))}
    for metric in ("ttft", "tpot", "e2e"):
        for q in (50, 95):
            xs = series[metric]
            out[f"{metric}_p{q}"] = float(np.percentile(xs, q)) if len(xs) else float("nan")
    return out


def unsupported_lines(slo: SloSpec) -> list[str]:
    """The SLO lines a model cannot judge (server series, drift, intended times)."""
    return [line.text for line in slo if line.kind is not SloKind.REQUEST or line.intended]


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


#: A level's short run decides its verdict only when every SLO statistic lies further from its
#: threshold than this fraction of it, and than DOUBT_SE standard errors (batch means over
#: DOUBT_BATCHES runs of consecutive requests: the requests of a closed loop are correlated).
DOUBT_MARGIN = 0.03
DOUBT_SE = 3.0
DOUBT_BATCHES = 5


def in_doubt(slo: SloSpec, outcomes: Sequence[Outcome]) -> bool:
    """Whether the verdict on ``outcomes`` could turn with more requests of the same level: an
    SLO statistic within the margin of its threshold (see ``DOUBT_MARGIN``)."""
    if len(outcomes) < 20 * DOUBT_BATCHES:
        return True
    ordered = sorted(outcomes, key=lambda o: o.sent)
    series = _series(ordered)
    size = -(-len(ordered) // DOUBT_BATCHES)
    batches = [_series(ordered[i : i + size]) for i in range(0, len(ordered), size)]
    for line in slo:
        if line.stat is None or line.metric == "success":
            continue
        value = _stat(series[line.metric], line.stat)
        parts = [_stat(b[line.metric], line.stat) for b in batches]
        if not (value == value and all(p == p for p in parts)):
            return True
        se = float(np.std(parts, ddof=1)) / np.sqrt(len(parts))
        if abs(value - line.threshold) <= max(DOUBT_MARGIN * abs(line.threshold), DOUBT_SE * se):
            return True
    return False


def level_verdict(
    model: EngineModel, slo: SloSpec, users: int, make_draw: Callable[[int], Draw], horizon: Horizon,
    replicas: int = 1, think: Callable[[], float] | None = None, draw: Mapping[str, float] | None = None,
    precise: bool = False, routing: Routing = ROUND_ROBIN,
) -> tuple[Verdict, int, bool]:  # fmt: skip
    """A search level's verdict, how many requests it rests on and whether they are the
    precise run's: the short run's, unless it is in doubt (or ``precise``) and
    ``horizon.requests`` asks for a precise run."""
    if not (precise and horizon.requests):
        outcomes = _outcomes(model, users, make_draw, horizon, replicas, think, draw, routing=routing)
        if not (horizon.requests and in_doubt(slo, outcomes)):
            return judge(slo, outcomes), len(outcomes), False
    outcomes = _outcomes(model, users, make_draw, horizon, replicas, think, draw, True, routing)
    return judge(slo, outcomes), len(outcomes), True


def search_capacity(
    model: EngineModel, slo: SloSpec, spec: SearchSpec, make_draw: Callable[[int], Draw],
    horizon: Horizon, replicas: int = 1, think: Callable[[], float] | None = None,
    draw: Mapping[str, float] | None = None, routing: Routing = ROUND_ROBIN,
) -> tuple[float, list[Probe], list[int]]:  # fmt: skip
    """The search's answer (highest level shown to pass, 0 if none), its steps and the number
    of requests each step's verdict rests on.

    With ``horizon.requests`` the answer rests on precise runs: when the search would stop, a
    level of its final bracket judged on its short run only is judged again on a precise run,
    and the search goes on from the new verdict if it turned (a short run's tail percentile
    misses the rare clusters of long requests more often than not: it can look clear and be
    wrong)."""
    probes: list[Probe] = []
    counts: list[int] = []
    precise: list[bool] = []
    while True:
        decision = decide(spec, probes)
        if decision.action != "probe":
            ends = bracket(probes)
            again = [i for i, p in enumerate(probes) if p.level in ends and not precise[i]]
            if not (horizon.requests and again):
                break
            for i in again:
                verdict, counts[i], precise[i] = level_verdict(
                    model, slo, int(probes[i].level), make_draw, horizon, replicas, think, draw, True, routing
                )
                probes[i] = Probe(probes[i].level, verdict)
            continue
        assert decision.level is not None
        verdict, n, exact = level_verdict(
            model, slo, int(decision.level), make_draw, horizon, replicas, think, draw, routing=routing
        )
        probes.append(Probe(decision.level, verdict))
        counts.append(n)
        precise.append(exact)
    lo, _hi = bracket(probes)
    return (lo or 0.0), probes, counts
