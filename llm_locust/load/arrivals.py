"""Open-loop arrival schedules: when each request is *meant* to be sent.

Closed-loop users hide overload (a slow server slows its own load down); an open-loop
schedule fixes the send times in advance, and every record keeps its intended send
time so latency can be measured from it (no coordinated omission).

Processes (all with mean inter-arrival time ``1/rate``):

- ``poisson``: exponential gaps, CV = 1.
- ``gamma``: shape ``k`` (``--burstiness``), scale ``1/(rate*k)``; CV^2 = 1/k. ``k < 1``
  is burstier than Poisson, ``k = 1`` is Poisson, ``k > 1`` is smoother (as in
  ``vllm bench serve --burstiness``).
- ``constant``: evenly spaced, CV = 0.

Rate steps (``--rate-ramp``) use time rescaling: one unit-rate renewal sequence is drawn
in "operational time" and mapped through the inverse of the cumulative rate
``Lambda(t) = integral of rate``. Offsets therefore continue smoothly across step
boundaries (no restart, no burst at the boundary), a Poisson process stays exactly an
inhomogeneous Poisson process, and a zero-rate step simply has no arrivals.

The first arrival is at offset 0 (like ``vllm bench serve``, which sends immediately).

Distributed runs: every worker draws the *same* global sequence from a shared seed and
keeps every W-th arrival (``k % W == worker_index``). The union over workers is then
exactly the single-process schedule for any W, and for any process kind. (Splitting a
Poisson rate into W independent Poisson(rate/W) streams is also statistically right,
but it is not right for gamma or constant, and it is not reproducible across W.)
Draws happen in fixed-size blocks, so a schedule is a prefix of the same seed's
infinite schedule whatever its duration.

Pure module (numpy only); seconds everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from enum import StrEnum

import numpy as np

__all__ = [
    "ARRIVAL_KINDS",
    "ArrivalKind",
    "ArrivalProcess",
    "ArrivalSchedule",
    "RateStep",
    "constant",
    "gamma",
    "parse_arrival",
    "poisson",
    "split_for_worker",
]


class ArrivalKind(StrEnum):
    """``--arrival``: the process between two arrivals (its value is the flag's spelling)."""

    POISSON = "poisson"  # exponential gaps
    GAMMA = "gamma"  # gamma gaps of shape --burstiness
    CONSTANT = "constant"  # equal gaps


ARRIVAL_KINDS = tuple(kind.value for kind in ArrivalKind)
_BLOCK = 1024  # draws per block: fixed, so the sequence does not depend on the horizon


@dataclass(frozen=True)
class ArrivalProcess:
    """A renewal process with mean rate ``rate`` (req/s); ``burstiness`` is gamma's shape."""

    kind: ArrivalKind
    rate: float
    burstiness: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", _kind(self.kind, self.kind))  # text becomes the member
        _check_positive(self.rate, "--request-rate")
        _check_positive(self.burstiness, "--burstiness")

    @property
    def cv2(self) -> float:
        """Squared coefficient of variation of the inter-arrival times."""
        cv2 = {ArrivalKind.POISSON: 1.0, ArrivalKind.GAMMA: 1.0 / self.burstiness, ArrivalKind.CONSTANT: 0.0}
        return cv2[self.kind]

    def unit_gaps(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` inter-arrival gaps of this process at rate 1 (mean 1)."""
        if self.kind is ArrivalKind.POISSON:
            return rng.exponential(1.0, n)
        if self.kind is ArrivalKind.GAMMA:
            return rng.gamma(self.burstiness, 1.0 / self.burstiness, n)
        return np.ones(n)

    def interarrivals(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` inter-arrival gaps at this process's rate (seconds)."""
        return self.unit_gaps(rng, n) / self.rate


def poisson(rate: float) -> ArrivalProcess:
    return ArrivalProcess(ArrivalKind.POISSON, rate)


def gamma(rate: float, burstiness: float) -> ArrivalProcess:
    return ArrivalProcess(ArrivalKind.GAMMA, rate, burstiness)


def constant(rate: float) -> ArrivalProcess:
    return ArrivalProcess(ArrivalKind.CONSTANT, rate)


def _check_positive(value: float, flag: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{flag} must be a number, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{flag} must be a positive finite number, got {value!r}")


def _kind(name: str, given: object) -> ArrivalKind:
    """The member spelt ``name``; ``ValueError`` naming ``--arrival`` and the text ``given``."""
    try:
        return ArrivalKind(name)
    except ValueError:
        raise ValueError(f"--arrival must be one of {', '.join(ARRIVAL_KINDS)}, got {given!r}") from None


def parse_arrival(kind: str, rate: float, burstiness: float | None = None) -> ArrivalProcess:
    """``--arrival``, ``--request-rate``, ``--burstiness`` -> a process.

    ``--burstiness`` is gamma's shape (default 1); for ``poisson`` only the value 1 is
    accepted and for ``constant`` it must be unset (or 1), so a typo cannot silently
    drop it.
    """
    name = _kind(str(kind).strip().lower(), kind)
    _check_positive(rate, "--request-rate")
    if burstiness is not None:
        _check_positive(burstiness, "--burstiness")
    if name is ArrivalKind.GAMMA:
        return gamma(float(rate), 1.0 if burstiness is None else float(burstiness))
    if burstiness is not None and burstiness != 1.0:
        raise ValueError(f"--burstiness applies only to --arrival gamma (got {burstiness:g} with {name})")
    return ArrivalProcess(name, float(rate))


@dataclass(frozen=True)
class RateStep:
    """``rate`` req/s for ``duration_s`` seconds (``None``: forever; last step only)."""

    rate: float
    duration_s: float | None


@dataclass(frozen=True)
class ArrivalSchedule:
    """Intended send offsets (seconds from the schedule start) for one worker.

    ``process`` gives the kind and burstiness; the rate comes from ``steps``.
    """

    process: ArrivalProcess
    steps: tuple[RateStep, ...]
    seed: int | None = None
    worker_index: int = 0
    worker_count: int = 1

    def __post_init__(self) -> None:
        if not self.steps:
            raise ValueError("an arrival schedule needs at least one rate step")
        for i, step in enumerate(self.steps):
            if not (math.isfinite(step.rate) and step.rate >= 0):
                raise ValueError(f"--rate-ramp: rate must be a non-negative number, got {step.rate!r}")
            last = i == len(self.steps) - 1
            if step.duration_s is None and not last:
                raise ValueError("only the last rate step may be open-ended")
            if step.duration_s is not None and not (math.isfinite(step.duration_s) and step.duration_s > 0):
                raise ValueError(f"--step-time must be positive, got {step.duration_s!r}")
        if self.steps[-1].duration_s is None and self.steps[-1].rate <= 0:
            raise ValueError("an open-ended rate step needs a positive rate")
        if not 0 <= self.worker_index < self.worker_count:
            raise ValueError(f"worker index {self.worker_index} outside 0..{self.worker_count - 1}")

    @property
    def duration_s(self) -> float | None:
        """Total length, or ``None`` if the schedule never ends."""
        if self.steps[-1].duration_s is None:
            return None
        return float(sum(s.duration_s or 0.0 for s in self.steps))

    def __iter__(self) -> Iterator[float]:
        """This worker's offsets, ascending, lazily (forever if open-ended)."""
        for block in self._blocks():
            yield from block.tolist()

    def offsets(self, until: float | None = None) -> np.ndarray:
        """This worker's offsets below ``until`` (default: the schedule's end)."""
        horizon = self.duration_s if until is None else until
        if horizon is None:
            raise ValueError("an open-ended schedule needs 'until'")
        parts = []
        for block in self._blocks():
            parts.append(block[block < horizon])
            if block.size and block[-1] >= horizon:
                break
        return np.concatenate(parts) if parts else np.empty(0)

    # Time rescaling: unit-rate arrivals u in operational time -> t = Lambda^-1(u).
    def _breaks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rates = np.array([s.rate for s in self.steps], dtype=float)
        durs = np.array([s.duration_s if s.duration_s is not None else np.inf for s in self.steps])
        t0 = np.concatenate([[0.0], np.cumsum(durs)[:-1]])
        with np.errstate(invalid="ignore"):
            lam = np.concatenate([[0.0], np.cumsum(rates * durs)[:-1]])
        return t0, lam, rates

    def _blocks(self) -> Iterator[np.ndarray]:
        t0, lam, rates = self._breaks()
        dur = self.duration_s
        lam_end = math.inf if dur is None else float(lam[-1] + rates[-1] * self.steps[-1].duration_s)
        rng = np.random.default_rng(self.seed)
        u_next, k_next = 0.0, 0
        while u_next < lam_end:
            gaps = self.process.unit_gaps(rng, _BLOCK)
            u = u_next + np.concatenate([[0.0], np.cumsum(gaps[:-1])])
            u_next = float(u[-1] + gaps[-1])
            keep = (np.arange(k_next, k_next + _BLOCK) % self.worker_count) == self.worker_index
            k_next += _BLOCK
            u = u[keep & (u < lam_end)]
            idx = np.searchsorted(lam, u, side="right") - 1
            yield t0[idx] + (u - lam[idx]) / rates[idx]


def split_for_worker(schedule: ArrivalSchedule, worker_index: int, worker_count: int) -> ArrivalSchedule:
    """Worker ``worker_index`` of ``worker_count``: every W-th arrival of the global sequence.

    Needs a shared seed when ``worker_count > 1``: without one each worker would draw a
    different global sequence and the union would not be the intended schedule.
    """
    if worker_count < 1:
        raise ValueError(f"worker count must be at least 1, got {worker_count}")
    if worker_count > 1 and schedule.seed is None:
        raise ValueError("a distributed arrival schedule needs a shared --seed")
    if schedule.worker_count != 1:
        raise ValueError("split_for_worker expects the global (unsplit) schedule")
    return replace(schedule, worker_index=worker_index, worker_count=worker_count)
