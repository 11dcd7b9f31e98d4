"""Shared prefixes: the ones a test asks for, and none by accident.

Prefix caching makes a request whose start matches an earlier one cheap, so sharing
must be deliberate. Every prompt starts with a unique nonce (see :mod:`prompts`); a
prefix chosen here goes *before* it:

- :class:`SharedPrefix` (``--shared-prefix-fraction F --shared-prefixes K
  --shared-prefix-tokens L``): with probability ``F`` a request gets one of ``K`` system
  prompts of ``L`` tokens each, sent as a ``system`` message. Requests whose input is not
  longer than ``L`` get none (their fraction is reported in ``info``).
- :class:`BlockPrefix` (the ``long-context`` profile): the Mooncake pattern. Every request
  starts with one global 512-token block (the trace's hash block 0, a shared system
  prompt); a request with ``reused_blocks = k`` continues with ``k - 1`` blocks of one of
  ``groups`` conversation histories, so it shares ``k`` blocks with earlier requests of
  that group. Sent at the start of the user message.

Prefix texts depend only on the seed and the prefix's number, so every worker and every
stream produce the same text for the same prefix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from llm_locust.config.jsontypes import JsonObject
from llm_locust.workload.distributions import LengthSample
from llm_locust.workload.prompts import PromptBuilder

__all__ = ["BlockPrefix", "NoPrefix", "PrefixChoice", "SharedPrefix"]


@dataclass(frozen=True)
class PrefixChoice:
    system: str | None = None  # a system message
    head: str = ""  # text at the very start of the user message
    tokens: int = 0
    info: JsonObject = field(default_factory=dict)


_NONE = PrefixChoice()


class NoPrefix:
    def pick(self, rng: np.random.Generator, sample: LengthSample, written: int) -> PrefixChoice:
        return _NONE

    def describe(self) -> JsonObject:
        return {}


class SharedPrefix:
    """``K`` system prompts of ``L`` tokens, used by a fraction ``F`` of requests."""

    def __init__(self, builder: PromptBuilder, fraction: float, count: int, tokens: int) -> None:
        self.fraction, self.count, self.tokens = fraction, count, tokens
        self.texts = [builder.block(0x5E000000 + k, tokens, first=True) for k in range(count)]

    def pick(self, rng: np.random.Generator, sample: LengthSample, written: int) -> PrefixChoice:
        u, k = rng.random(), int(rng.integers(self.count))
        if u >= self.fraction or written <= self.tokens:
            return _NONE
        return PrefixChoice(system=self.texts[k], tokens=self.tokens, info={"prefix_group": k})

    def describe(self) -> JsonObject:
        return {
            "shared_prefix_fraction": self.fraction,
            "shared_prefixes": self.count,
            "shared_prefix_tokens": self.tokens,
        }


class BlockPrefix:
    """Mooncake-style block reuse: a global block, then ``k - 1`` blocks of a group."""

    def __init__(
        self, builder: PromptBuilder, block_tokens: int = 512, groups: int = 256, global_blocks: int = 1
    ) -> None:
        self.block_tokens, self.groups, self.global_blocks = block_tokens, groups, global_blocks
        self._block = lru_cache(maxsize=8192)(self._make_block)
        self._builder = builder

    def _make_block(self, key: int, first: bool) -> str:
        return self._builder.block(key, self.block_tokens, first)

    def pick(self, rng: np.random.Generator, sample: LengthSample, written: int) -> PrefixChoice:
        g = int(rng.integers(self.groups))
        k = min(sample.reused_blocks, (written - 1) // self.block_tokens)
        if k <= 0:
            return _NONE
        keys = [0x6B000000 + j for j in range(min(k, self.global_blocks))]
        keys += [((g + 1) << 20) + j for j in range(k - len(keys))]
        head = "".join(self._block(key, i == 0) for i, key in enumerate(keys))
        return PrefixChoice(
            head=head, tokens=k * self.block_tokens, info={"prefix_group": g, "reused_blocks": k}
        )

    def describe(self) -> JsonObject:
        return {
            "prefix_blocks": {
                "block_tokens": self.block_tokens,
                "groups": self.groups,
                "global_blocks": self.global_blocks,
            }
        }
