"""A reasoning phase: how many of a response's tokens are "thinking" before the answer.

A reasoning model streams its reasoning (``delta.reasoning_content``) before the visible
answer (``delta.content``), so a client needs two clocks: time to the first token of any
kind and time to the first *visible* token. The simulator plays such a model so that both
can be tested against a known answer.

``--reasoning-tokens SPEC``, drawn once per chat request:

    0                     no reasoning phase (the default)
    200                   exactly 200 reasoning tokens
    40%                   40 % of the request's output length (rounded)
    uniform:100,400       any distribution of the workload grammar
    lognormal:mean=500,std=300,max=4000      (see llm_locust.workload.distributions)

Reasoning tokens are part of the completion: they count in ``completion_tokens`` and
against ``max_tokens`` (as on real servers), and at least one answer token always follows,
so a draw is capped at ``output length - 1``. ``usage.completion_tokens_details.
reasoning_tokens`` says how many there were. The completions endpoint has no reasoning
phase.

Pure module: no network. The distribution grammar is the workload's, imported only when a
distribution is given (so a plain number or percentage imports nothing beyond this file).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from llm_locust.workload.distributions import Distribution

__all__ = ["ReasoningKind", "ReasoningSpec", "parse_reasoning"]


class ReasoningKind(StrEnum):
    """How ``--reasoning-tokens`` gives the reasoning length."""

    FIXED = "fixed"  # ``value`` tokens
    RATIO = "ratio"  # ``value`` of the output length
    DIST = "dist"  # drawn from ``dist``


@dataclass
class ReasoningSpec:
    """What ``--reasoning-tokens`` asks for: its ``kind`` and the ``value`` or ``dist`` it goes with."""

    kind: ReasoningKind
    value: float = 0.0
    dist: Distribution | None = None
    text: str = ""
    _np: np.random.Generator | None = field(default=None, repr=False)  # for for ``dist``, seeded on first use

    def draw(self, rng: random.Random, n_tokens: int) -> int:
        """Reasoning tokens for a response of ``n_tokens`` (at least one answer token left)."""
        if self.kind is ReasoningKind.FIXED:
            n = int(self.value)
        elif self.kind is ReasoningKind.RATIO:
            n = round(self.value * n_tokens)
        else:
            assert self.dist is not None  # ReasoningKind.DIST comes with one
            if self._np is None:
                import numpy as np

                self._np = np.random.default_rng(rng.getrandbits(64))  # reproducible under --seed
            n = int(self.dist.draw(self._np))
        return max(0, min(n, n_tokens - 1))


def parse_reasoning(text: str) -> ReasoningSpec | None:
    """Parse ``--reasoning-tokens``; ``None`` for 0 (no reasoning). Raises ``ValueError``."""
    spec = text.strip()
    if spec.endswith("%"):
        try:
            pct = float(spec[:-1])
        except ValueError:
            raise ValueError(f"expected a percentage such as 40%, got {text!r}") from None
        if not 0 <= pct < 100:
            raise ValueError(f"a reasoning share is at least 0% and below 100%, got {text!r}")
        return ReasoningSpec(ReasoningKind.RATIO, pct / 100.0, text=spec) if pct else None
    if spec.isdigit():
        return ReasoningSpec(ReasoningKind.FIXED, int(spec), text=spec) if int(spec) else None
    from llm_locust.workload.distributions import parse_distribution  # the workload's grammar

    return ReasoningSpec(ReasoningKind.DIST, dist=parse_distribution(spec), text=spec)
