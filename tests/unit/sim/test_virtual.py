"""The engine on a virtual clock: time-scale invariance and the plans' expected order."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable

import pytest

from llm_locust.sim.deploy import GPUS, MODELS, Deployment
from llm_locust.sim.virtual import closed_loop, percentile

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
