"""The engine on a virtual clock: time-scale invariance and the plans' expected order."""

from __future__ import annotations

import dataclasses
import heapq
import random
from collections.abc import Callable

import pytest

from llm_locust.config.balance import BalancePolicy
from llm_locust.sim.deploy import GPUS, MODELS, Deployment
from llm_locust.sim.engine import Engine, EngineConfig, Seq
from llm_locust.sim.virtual import Outcome, closed_loop, fleet_loop, percentile

_TIMES = ("prefill_per_token", "decode_base", "decode_per_seq", "decode_per_ctx_token", "compute_per_token")


def _draw(seed: int) -> Callable[[], tuple[int, int]]:
    rng = random.Random(seed)
    return lambda: (rng.randint(200, 2000), rng.randint(20, 400))


def test_speedup_divides_every_latency_and_keeps_the_request_sequence() -> None:
    base = Deployment(GPUS["a100"], MODELS["70b"], 4).engine_config(prefix_caching=False)
    fast = dataclasses.replace(base, **{n: getattr(base, n) / 10 for n in _TIMES})
    slow_run = closed_loop(base, 24, _draw(3), duration=600.0, warmup=100.0)
    fast_run = closed_loop(fast, 24, _draw(3), duration=60.0, warmup=10.0)
    assert len(slow_run) == len(fast_run) > 100
    for a, b in zip(slow_run, fast_run, strict=True):
        assert b.output_tokens == a.output_tokens
        assert b.ttft == pytest.approx(a.ttft / 10, rel=1e-9)
        assert b.e2e == pytest.approx(a.e2e / 10, rel=1e-9)


def test_e2e_p95_grows_with_concurrency() -> None:
    cfg = Deployment(GPUS["h100"], MODELS["70b"], 4).engine_config(prefix_caching=False)
    p95 = [
        percentile([o.e2e for o in closed_loop(cfg, users, _draw(1), duration=400.0, warmup=100.0)], 95)
        for users in (4, 16, 64)
    ]
    assert p95 == sorted(p95) and p95[-1] > 1.5 * p95[0]


def test_percentile_interpolates_like_numpy() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([5.0], 95) == 5.0
    assert percentile(list(map(float, range(101))), 95) == 95.0


def test_a_level_of_so_many_requests_follows_each_to_its_end() -> None:
    """``requests=N``: exactly the first N requests sent after the warm-up, slow ones included;
    without it, the requests still running when the clock stops are left out (a low tail)."""
    cfg = Deployment(GPUS["a100"], MODELS["70b"], 4).engine_config(prefix_caching=False)
    counted = closed_loop(cfg, 8, _draw(5), duration=10_000.0, warmup=50.0, requests=300)
    assert len(counted) == 300 and min(o.sent for o in counted) >= 50.0
    last = max(o.sent for o in counted)
    cut = closed_loop(cfg, 8, _draw(5), duration=last + 1e-9, warmup=50.0)
    followed = closed_loop(cfg, 8, _draw(5), duration=last + 1e-9, warmup=50.0, follow=True)
    assert sorted(o.sent for o in followed) == sorted(o.sent for o in counted)
    assert len(cut) < len(followed)  # the ones unfinished at ``duration``
    assert max(o.e2e for o in cut) <= max(o.e2e for o in followed)


def _think(seed: int) -> Callable[[], float]:
    rng = random.Random(seed)
    return lambda: rng.uniform(0.0, 0.6)


@pytest.mark.parametrize(
    ("overhead", "thinks", "requests", "follow"),
    [
        (0.0, False, None, True),
        (0.05, False, None, True),
        (0.02, True, None, True),
        (0.0, False, 150, True),
        (0.0, False, None, False),
        (0.05, True, None, False),
    ],
)
def test_one_replica_behind_the_fleet_is_the_closed_loop_as_it_was(
    overhead: float, thinks: bool, requests: int | None, follow: bool
) -> None:
    """fleet_loop's event order (arrivals, step ends, step starts at one instant) is the old
    single-engine loop's: one replica gives the very same requests, latencies and order."""
    cfg = Deployment(GPUS["a100"], MODELS["70b"], 4).engine_config(prefix_caching=False)
    think = _think(2) if thinks else None
    alone = _reference_closed_loop(cfg, 12, _draw(5), 300.0, 50.0, think, overhead, requests, follow)
    think = _think(2) if thinks else None
    fleet = fleet_loop(cfg, 12, lambda r: _draw(5), 1, 300.0, 50.0, think, overhead, requests, follow)
    assert len(alone) > 100 and fleet == alone


def _p95(outcomes: list[Outcome]) -> float:
    return percentile([o.e2e for o in outcomes], 95)


@pytest.mark.parametrize("per_replica", [8, 24])
def test_round_robin_per_request_moves_users_between_replicas_and_lengthens_the_tail(
    per_replica: int,
) -> None:
    """Two replicas: with each user kept on one, each replica's batch stays at its share; picked
    in turn for every request, a user's requests move between the replicas and a replica's
    batch rises and falls around its share, so the E2E tail is longer (measured: +1.2 to +1.6 %
    on this 70B deployment, about one user of capacity at the SLO boundary). Least-in-flight
    per request sends each next request to the replica that just freed a slot: the very
    requests of the users kept apart."""
    cfg = Deployment(GPUS["a100"], MODELS["70b"], 4).engine_config(prefix_caching=False)
    apart = closed_loop(cfg, per_replica, _draw(7), 900.0, 150.0, follow=True)
    apart += closed_loop(cfg, per_replica, _draw(8), 900.0, 150.0, follow=True)
    users = 2 * per_replica
    turn = fleet_loop(cfg, users, lambda r: _draw(7 + r), 2, 900.0, 150.0, follow=True)
    least = fleet_loop(
        cfg, users, lambda r: _draw(7 + r), 2, 900.0, 150.0, follow=True,
        balance=BalancePolicy.LEAST_IN_FLIGHT,
    )  # fmt: skip
    assert len(turn) > 1000
    assert _p95(turn) > 1.01 * _p95(apart)
    assert sorted(least, key=lambda o: (o.sent, o.e2e)) == sorted(apart, key=lambda o: (o.sent, o.e2e))


def _reference_closed_loop(
    config: EngineConfig,
    users: int,
    draw: Callable[[], tuple[int, int]],
    duration: float,
    warmup: float = 0.0,
    think: Callable[[], float] | None = None,
    overhead: float = 0.0,
    requests: int | None = None,
    follow: bool = False,
) -> list[Outcome]:
    """closed_loop as it was before fleet_loop (sim/virtual.py of 357a66a, one engine, kept
    here verbatim as the oracle fleet_loop's one replica must reproduce)."""
    follow = follow or requests is not None
    engine = Engine(config)
    now = 0.0
    first: dict[int, float] = {}
    pending: list[tuple[float, int, Seq]] = []  # (reaches the engine, order, request)
    order = 0
    counted = 0  # requests sent inside the window
    open_ = 0  # of those, not finished yet

    def send(at: float) -> None:
        nonlocal order, counted, open_
        prompt, output = draw()
        inside = warmup <= at < duration and (requests is None or counted < requests)
        counted += inside
        open_ += inside
        seq = Seq(prompt_tokens=prompt, output_tokens=output, payload=(at, inside))
        if at + overhead <= now:
            engine.add(seq)
        else:
            heapq.heappush(pending, (at + overhead, order, seq))
            order += 1

    for _ in range(users):
        send(0.0)
    out: list[Outcome] = []

    def going() -> bool:
        if not follow:
            return now < duration
        return open_ > 0 or (now < duration and (requests is None or counted < requests))

    while going():
        while pending and pending[0][0] <= now:
            engine.add(heapq.heappop(pending)[2])
        if not engine.has_work:
            if not pending:
                break
            now = pending[0][0]
            continue
        result = engine.step()
        if result.duration <= 0:
            break  # nothing can be admitted (a request bigger than the free cache)
        now += result.duration
        for s in result.first:
            first[id(s)] = now
        for s in result.finished:
            sent, inside = s.payload
            if inside:
                out.append(
                    Outcome(sent, first.pop(id(s)) - sent, now - sent, s.output_tokens, s.prompt_tokens)
                )
                open_ -= 1
            else:
                first.pop(id(s), None)
            send(now + (think() if think else 0.0))
    return out
