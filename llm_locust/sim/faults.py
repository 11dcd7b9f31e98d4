"""Injected faults: what a flaky server does to a load test, on demand.

Each kind has a rate in [0, 1]; the rates are exclusive slices of one uniform draw per
request from the seeded RNG, so they must sum to at most 1 and ``--seed`` replays the same
faults for the same arrival order.

- ``error``      HTTP 500 with an OpenAI-style JSON error, before any token.
- ``rate_limit`` HTTP 429 with ``Retry-After``, before any token.
- ``unavailable`` HTTP 503 with ``Retry-After``, before any token.
- ``disconnect`` some tokens, then the connection is aborted (no terminating chunk).
- ``malformed``  one extra ``data:`` line that is not JSON, inserted before a token; the
                 stream then continues normally (non-streaming: the body is not JSON).
- ``stall``      some tokens, then silence with the connection open; it is closed after
                 ``stall_seconds``.

``at`` is the number of tokens delivered before the fault (1..n-1 when n >= 2, else 0).
``rate_limit`` and ``unavailable`` answer with ``Retry-After: retry_after`` (whole seconds;
``None`` omits the header), so a client's honouring of it can be tested.

Slow degradation (:class:`Drift`), so that a soak verdict can be tested against a known
slope: every token interval grows by ``tpot_per_s`` seconds per second of wall-clock time
since the simulator started (fixed mode: the TPOT; engine mode: each step), and the KV
cache loses ``kv_leak_per_s`` tokens per second to a leak that is never returned. Both are
in wall-clock time, so ``--slowdown``/``--speedup`` do not change the slope a client sees.

Pure module: no network.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["FAULT_KINDS", "Drift", "FaultConfig", "FaultKind", "FaultPlan"]


class FaultKind(StrEnum):
    """An injected fault (its value names its rate in :class:`FaultConfig` and ``--<kind>-rate``).
    The order is the order of the rates' slices of the draw: it must not change (``--seed``)."""

    ERROR = "error"
    RATE_LIMIT = "rate_limit"
    UNAVAILABLE = "unavailable"
    DISCONNECT = "disconnect"
    MALFORMED = "malformed"
    STALL = "stall"


FAULT_KINDS = tuple(kind.value for kind in FaultKind)


@dataclass(frozen=True)
class FaultPlan:
    kind: FaultKind
    at: int = 0


@dataclass(frozen=True)
class FaultConfig:
    error: float = 0.0
    rate_limit: float = 0.0
    unavailable: float = 0.0
    disconnect: float = 0.0
    malformed: float = 0.0
    stall: float = 0.0
    stall_seconds: float = 120.0
    retry_after: int | None = 1

    @property
    def any(self) -> bool:
        return self.total > 0.0

    @property
    def total(self) -> float:
        total: float = sum(getattr(self, kind) for kind in FAULT_KINDS)
        return total

    def decide(self, rng: random.Random, n_tokens: int) -> FaultPlan | None:
        """Draw this request's fault (or ``None``). Always consumes one draw when enabled."""
        if not self.any:
            return None
        u = rng.random()
        edge = 0.0
        for kind in FaultKind:
            edge += getattr(self, kind.value)
            if u < edge:
                at = rng.randint(1, n_tokens - 1) if n_tokens >= 2 else 0
                return FaultPlan(kind, at)
        return None


@dataclass(frozen=True)
class Drift:
    """Slow degradation: token intervals creeping up, KV leaking (wall-clock rates)."""

    tpot_per_s: float = 0.0  # seconds added to each token interval, per second elapsed
    kv_leak_per_s: float = 0.0  # KV tokens lost per second elapsed

    def extra_tpot(self, elapsed: float) -> float:
        return self.tpot_per_s * max(elapsed, 0.0)

    def leaked(self, elapsed: float) -> int:
        return int(self.kv_leak_per_s * max(elapsed, 0.0))
