"""The simplest workload: every prompt about N tokens long, every output capped at ``max_tokens``.

The prompt text is made of common English words separated by spaces; for BPE tokenizers
of current chat models one such word is close to one token. The exact-length machinery
(real tokenizers, trimming to the count) lives in the profile workloads.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Any

from llm_locust.workload.base import RequestSpec

__all__ = ["FixedSource", "FixedWorkload"]

_WORD_TEXT = (
    "the of and to in is that for it as was with be by on not he this are or his from at which "
    "but have an they you were her she there one all we their been has when who will more no if "
    "out so said what up its about into than them can only other new some could time these two "
    "may then do first any my now such like our over man me even most made after also did many "
    "before must through back years where much your way well down should because each just those "
    "people how too little state good very make world still own see men work long get here "
    "between both life being under never day same another know while last might us great old "
    "year off come since against go came right used take three"
)
_WORDS = _WORD_TEXT.split()


@dataclass
class FixedSource:
    prompt_tokens: int
    max_tokens: int | None
    index: int
    _counter: itertools.count = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        self._counter = itertools.count()
        self._rng = random.Random(self.index)

    def next_request(self) -> RequestSpec:
        n = next(self._counter)
        # A unique nonce first, so no two prompts share a prefix the server could cache.
        nonce = f"{self.index}-{n}"
        words = [nonce] + [self._rng.choice(_WORDS) for _ in range(max(self.prompt_tokens - 1, 0))]
        return RequestSpec(
            messages=[{"role": "user", "content": " ".join(words)}],
            prompt=" ".join(words),
            max_tokens=self.max_tokens,
            target_input_tokens=self.prompt_tokens,
            target_output_tokens=self.max_tokens,
        )

    def observe(self, spec: RequestSpec, response_text: str, ok: bool) -> None:
        return None


@dataclass
class FixedWorkload:
    prompt_tokens: int = 128
    max_tokens: int | None = 128
    name: str = "fixed"

    def source(self, index: int) -> FixedSource:
        return FixedSource(self.prompt_tokens, self.max_tokens, index)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "prompt_tokens": self.prompt_tokens, "max_tokens": self.max_tokens}
