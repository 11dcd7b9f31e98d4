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

import heapq
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
    prompt_tokens: int = 0


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
    think: Callable[[], float] | None = None,
    overhead: float = 0.0,
) -> list[Outcome]:
    """Run ``users`` closed-loop clients for ``duration`` virtual seconds.

    ``think`` draws a user's pause between its last token and its next request (none: it
    sends at once); ``overhead`` is a fixed time per request outside the engine (a calibrated
    model's HTTP and tokenizer time): the request reaches the engine that long after it is
    sent, so it adds to its TTFT and E2E.
    """
    engine = Engine(config)
    now = 0.0
    first: dict[int, float] = {}
    pending: list[tuple[float, int, Seq]] = []  # (reaches the engine, order, request)
    order = 0

    def send(at: float) -> None:
        nonlocal order
        prompt, output = draw()
        seq = Seq(prompt_tokens=prompt, output_tokens=output, payload=at)
        if at + overhead <= now:
            engine.add(seq)
        else:
            heapq.heappush(pending, (at + overhead, order, seq))
            order += 1

    for _ in range(users):
        send(0.0)
    out: list[Outcome] = []
    while now < duration:
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
            sent = s.payload
            if sent >= warmup:
                out.append(
                    Outcome(sent, first.pop(id(s)) - sent, now - sent, s.output_tokens, s.prompt_tokens)
                )
            else:
                first.pop(id(s), None)
            send(now + (think() if think else 0.0))
    return out
