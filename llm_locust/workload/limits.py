"""The model's context limit applied to sampled lengths: clip or reject, and count.

``--max-model-len`` (or the server's advertised ``max_model_len``) bounds input plus
output. ``clip`` keeps the sample but shortens it (input to at most ``limit - 1``, then
output to what is left); ``reject`` draws again (up to ``_TRIES`` times, then clips).
The counters are shared by every source of a workload so the run can say how many.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from llm_locust.config.jsontypes import JsonObject
from llm_locust.workload.distributions import LengthSample

__all__ = ["POLICIES", "LengthGuard"]

POLICIES = ("clip", "reject")
_TRIES = 1000


@dataclass
class LengthGuard:
    max_model_len: int | None = None
    policy: str = "clip"
    drawn: int = 0
    clipped: int = 0
    rejected: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def fits(self, input_tokens: int, output_tokens: int) -> bool:
        return self.max_model_len is None or input_tokens + output_tokens <= self.max_model_len

    def draw(self, draw: Callable[[], LengthSample]) -> LengthSample:
        """One sample that fits, drawing again under ``reject``."""
        sample = draw()
        tries = 0
        while not self.fits(sample.input_tokens, sample.output_tokens):
            if self.policy != "reject" or tries >= _TRIES:
                return self._clip(sample)
            tries += 1
            self._count("rejected")
            sample = draw()
        self._count("drawn")
        return sample

    def _clip(self, s: LengthSample) -> LengthSample:
        assert self.max_model_len is not None
        self._count("clipped")
        self._count("drawn")
        limit = self.max_model_len
        inp = min(s.input_tokens, limit - 1)
        return LengthSample(inp, max(1, min(s.output_tokens, limit - inp)), s.reused_blocks)

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)

    def stats(self) -> JsonObject:
        return {
            "max_model_len": self.max_model_len,
            "policy": self.policy,
            "samples": self.drawn,
            "clipped": self.clipped,
            "rejected": self.rejected,
        }

    def message(self) -> str | None:
        """A one-line account for the run's log, or ``None`` if nothing was changed."""
        if not (self.clipped or self.rejected):
            return None
        return (
            f"max-model-len {self.max_model_len}: {self.clipped} of {self.drawn} samples clipped, "
            f"{self.rejected} draws rejected"
        )
