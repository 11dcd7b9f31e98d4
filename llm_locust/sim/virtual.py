"""The engine model on a virtual clock: a closed-loop load test that takes milliseconds.

Why: to know what a simulated deployment *should* show before a real load test measures
it (the benchmark's expected capacities, the tests' known answers), and to check
properties of the model itself, such as time-scale invariance (``--speedup K`` divides
every latency by K and leaves the concurrency capacity where it was).

:func:`closed_loop` runs ``users`` clients that each send a request, wait for its last
token and send the next at once (no think time), exactly as the engine driver schedules
them over the wire, minus the network. Requests sent before ``warmup`` or unfinished at
``duration`` are not reported.

Pure module: no network, no real clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from llm_locust.sim.engine import Engine, EngineConfig, Seq

__all__ = ["Outcome", "closed_loop", "percentile"]


@dataclass(frozen=True)
class Outcome:
    """One finished request (seconds)."""

    sent: float
    ttft: float
    e2e: float
    output_tokens: int


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), ``q`` in [0, 100]."""
    xs = sorted(values)
    if not xs:
        return float("nan")
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def closed_loop(
    config: EngineConfig,
    users: int,
    draw: Callable[[], tuple[int, int]],
    duration: float,
    warmup: float = 0.0,
) -> list[Outcome]:
    """Run ``users`` closed-loop clients for ``duration`` virtual seconds."""
    engine = Engine(config)
    now = 0.0
    first: dict[int, float] = {}

    def send() -> None:
        prompt, output = draw()
        engine.add(Seq(prompt_tokens=prompt, output_tokens=output, payload=now))

    for _ in range(users):
        send()
    out: list[Outcome] = []
    while now < duration and engine.has_work:
        result = engine.step()
        if result.duration <= 0:
            break  # nothing can be admitted (a request bigger than the free cache)
        now += result.duration
        for s in result.first:
            first[id(s)] = now
        for s in result.finished:
            sent = s.payload
            if sent >= warmup:
                out.append(Outcome(sent, first.pop(id(s)) - sent, now - sent, s.output_tokens))
            else:
                first.pop(id(s), None)
            send()
    return out
