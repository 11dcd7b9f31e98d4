"""The engine model on a virtual clock: a closed-loop load test that takes milliseconds.

Why: to know what a simulated deployment *should* show before a real load test measures
it (the benchmark's expected capacities, the tests' known answers), and to check
properties of the model itself, such as time-scale invariance (``--speedup K`` divides
every latency by K and leaves the concurrency capacity where it was).

:func:`closed_loop` runs ``users`` clients that each send a request, wait for its last
token and send the next at once (no think time), exactly as the engine driver schedules
them over the wire, minus the network. Requests sent before ``warmup`` or unfinished at
``duration`` are not reported, unless ``follow``: then every request sent in the window is
followed to its end (and ``requests`` caps the window at that many requests).

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
    requests: int | None = None,
    follow: bool = False,
) -> list[Outcome]:
    """Run ``users`` closed-loop clients for ``duration`` virtual seconds.

    ``think`` draws a user's pause between its last token and its next request (none: it
    sends at once); ``overhead`` is a fixed time per request outside the engine (a calibrated
    model's HTTP and tokenizer time): the request reaches the engine that long after it is
    sent, so it adds to its TTFT and E2E.

    ``follow`` (or ``requests`` given): every request sent in ``[warmup, duration)`` is
    followed to its end while the load goes on, so no slow request is left out for being
    unfinished when the clock stops (leaving them out biases a tail percentile low when a
    request lasts more than a small part of the run). ``requests`` ends the window after that
    many requests: a level's precision is then set by its number of requests.
    """
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
