"""Cancelled requests: which requests a user abandons mid-stream, and when.

``--cancel-rate P`` abandons each request with probability ``P``; ``--cancel-after`` (see
:mod:`llm_locust.config.cancel`) says when. Each client draws from its own stream, seeded
from the policy's seed and the client's ordinal in its process, so the sequence of
decisions of one user does not depend on how other users' requests interleave.

A cancelled request closes its connection (the server sees the client go away and should
free the sequence's KV cache at once: vLLM's ``abort``); its record is ``cancelled``, keeps
its partial marks, and is counted apart: neither a success nor a failure, and never in the
latency percentiles.

Pure module: no Locust, no network.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field

from llm_locust.config.cancel import CancelAfter, CancelPoint

__all__ = ["CancelDraws", "CancelPolicy"]


@dataclass(frozen=True)
class CancelPolicy:
    rate: float
    after: CancelAfter
    seed: int = 0
    _ordinals: itertools.count[int] = field(default_factory=itertools.count, compare=False, repr=False)

    def draws(self) -> CancelDraws:
        """A new client's own stream of decisions."""
        return CancelDraws(self, random.Random(f"{self.seed}:{next(self._ordinals)}"))


@dataclass
class CancelDraws:
    policy: CancelPolicy
    rng: random.Random

    def next(self) -> CancelPoint | None:
        """``None``: this request runs to its end; else where it is abandoned."""
        if self.rng.random() >= self.policy.rate:
            return None
        return self.policy.after.draw(self.rng)
