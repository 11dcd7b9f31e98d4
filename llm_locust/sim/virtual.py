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

:func:`fleet_loop` runs the same users over several engines (replicas) with a balancer in
front (:class:`~llm_locust.load.replicas.Balancer`, as a run's ``--endpoints``): each request
goes to the replica the policy picks when it is sent, so a user's requests move between
replicas and each replica's batch rises and falls around its share, as it does over the wire
(users kept on one replica each are :func:`closed_loop` per replica).

Pure module: no network, no real clock.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass

from llm_locust.config.balance import BalancePolicy
from llm_locust.load.replicas import Balancer
from llm_locust.sim.engine import Engine, EngineConfig, Seq, StepResult

__all__ = ["Outcome", "closed_loop", "fleet_loop", "percentile"]


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
    return fleet_loop(config, users, lambda _: draw, 1, duration, warmup, think, overhead, requests, follow)


# fleet_loop's events at one instant: arrivals first, then step ends, then step starts (the
# requests that reach an idle engine at one instant start one step together)
_ARRIVE, _END, _START = 0, 1, 2


def fleet_loop(
    config: EngineConfig,
    users: int,
    make_draw: Callable[[int], Callable[[], tuple[int, int]]],
    replicas: int,
    duration: float,
    warmup: float = 0.0,
    think: Callable[[], float] | None = None,
    overhead: float = 0.0,
    requests: int | None = None,
    follow: bool = False,
    balance: BalancePolicy = BalancePolicy.ROUND_ROBIN,
) -> list[Outcome]:
    """:func:`closed_loop` over ``replicas`` engines, each request sent to the replica
    ``balance`` (``round-robin`` or ``least-in-flight``) picks at its sending; its lengths come
    from that replica's ``make_draw(replica)``. The other arguments as for :func:`closed_loop`
    (``requests`` counts the requests of every replica)."""
    follow = follow or requests is not None
    engines = [Engine(config) for _ in range(replicas)]
    draws = [make_draw(r) for r in range(replicas)]
    balancer = Balancer([str(r) for r in range(replicas)], balance)
    busy: list[StepResult | None] = [None] * replicas
    ends = [math.inf] * replicas  # when each engine's running step ends (inf: idle)
    # arrivals and step starts, (time, kind, order, replica, request); step ends are in ``ends``
    events: list[tuple[float, int, int, int, Seq | None]] = []
    first: dict[int, float] = {}
    out: list[Outcome] = []
    order = counted = open_ = 0
    now = 0.0

    def push(at: float, kind: int, replica: int, seq: Seq | None = None) -> None:
        nonlocal order
        heapq.heappush(events, (at, kind, order, replica, seq))
        order += 1

    def send(at: float, ending: int = -1) -> None:
        """A request sent at ``at``; one that reaches engine ``ending`` (whose step just ended)
        at once joins its next step directly, as in a single engine's loop."""
        nonlocal counted, open_
        replica = balancer.acquire()
        prompt, output = draws[replica]()
        inside = warmup <= at < duration and (requests is None or counted < requests)
        counted += inside
        open_ += inside
        seq = Seq(prompt_tokens=prompt, output_tokens=output, payload=(at, inside))
        if replica == ending and at + overhead <= now:
            engines[replica].add(seq)
        else:
            push(at + overhead, _ARRIVE, replica, seq)

    def start(r: int) -> bool:
        """Engine ``r``'s next step from ``now``, if it is idle and has work; False when nothing
        can be admitted (a request bigger than the free cache)."""
        if busy[r] is not None or not engines[r].has_work:
            return True
        step = engines[r].step()
        if step.duration <= 0:
            return False
        busy[r] = step
        ends[r] = now + step.duration
        return True

    def going() -> bool:
        if not follow:
            return now < duration
        return open_ > 0 or (now < duration and (requests is None or counted < requests))

    for _ in range(users):
        send(0.0)
    while going():
        r = 0 if replicas == 1 else min(range(replicas), key=ends.__getitem__)
        if events and (events[0][0], events[0][1]) < (ends[r], _END):
            now, kind, _, r, seq = heapq.heappop(events)
            if kind == _ARRIVE:
                assert seq is not None
                engines[r].add(seq)
                if busy[r] is None:
                    push(now, _START, r)
            elif not start(r):
                break
            continue
        if ends[r] == math.inf:
            break
        now, ends[r] = ends[r], math.inf
        ended, busy[r] = busy[r], None
        assert ended is not None
        for s in ended.first:
            first[id(s)] = now
        for s in ended.finished:
            balancer.release(r)
            sent, inside = s.payload
            if inside:
                out.append(
                    Outcome(sent, first.pop(id(s)) - sent, now - sent, s.output_tokens, s.prompt_tokens)
                )
                open_ -= 1
            else:
                first.pop(id(s), None)
            send(now + (think() if think else 0.0), r)
        if not start(r):
            break
    return out
