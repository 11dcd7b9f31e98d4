"""Injected faults: what a flaky server does to a load test, on demand.

Each kind has a rate in [0, 1]; the rates are exclusive slices of one uniform draw per
request from the seeded RNG, so they must sum to at most 1 and ``--seed`` replays the same
faults for the same arrival order.

- ``error``      HTTP 500 with an OpenAI-style JSON error, before any token.
- ``rate_limit`` HTTP 429 with ``Retry-After: 1``, before any token.
- ``disconnect`` some tokens, then the connection is aborted (no terminating chunk).
- ``malformed``  one extra ``data:`` line that is not JSON, inserted before a token; the
                 stream then continues normally (non-streaming: the body is not JSON).
- ``stall``      some tokens, then silence with the connection open; it is closed after
                 ``stall_seconds``.

``at`` is the number of tokens delivered before the fault (1..n-1 when n >= 2, else 0).

Pure module: no network.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["FAULT_KINDS", "FaultConfig", "FaultPlan"]

FAULT_KINDS = ("error", "rate_limit", "disconnect", "malformed", "stall")


@dataclass(frozen=True)
class FaultPlan:
    kind: str
    at: int = 0


@dataclass(frozen=True)
class FaultConfig:
    error: float = 0.0
    rate_limit: float = 0.0
    disconnect: float = 0.0
    malformed: float = 0.0
    stall: float = 0.0
    stall_seconds: float = 120.0

    @property
    def any(self) -> bool:
        return self.total > 0.0

    @property
    def total(self) -> float:
        return self.error + self.rate_limit + self.disconnect + self.malformed + self.stall

    def decide(self, rng: random.Random, n_tokens: int) -> FaultPlan | None:
        """Draw this request's fault (or ``None``). Always consumes one draw when enabled."""
        if not self.any:
            return None
        u = rng.random()
        edge = 0.0
        for kind in FAULT_KINDS:
            edge += getattr(self, kind)
            if u < edge:
                at = rng.randint(1, n_tokens - 1) if n_tokens >= 2 else 0
                return FaultPlan(kind, at)
        return None
