"""Workloads drawn from a length distribution: the built-in profiles and synthetic ones.

Reproducibility: source ``index`` owns ``numpy.random.default_rng(SeedSequence([seed,
index]))`` and nothing else feeds its draws, so its request sequence depends only on
``(seed, index)`` and the workload options. Streams are statistically independent, and
their nonces (stream index, request number) make their prompts disjoint. Hence the union
of requests over streams ``0..U-1`` does not depend on how those streams are spread over
workers; it depends on ``U`` and on how many requests each stream gets to send, which is
a matter of timing. (With ``--tokenizer none`` the run-time calibration may change prompt
*text lengths* against a server whose count differs; the targets stay the same.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from llm_locust.config.jsontypes import JsonObject
from llm_locust.workload.agent import AgentLoop, AgentSource
from llm_locust.workload.base import RequestSource, RequestSpec
from llm_locust.workload.datasets import LengthRow, mooncake_text
from llm_locust.workload.distributions import LengthSample, LengthSampler
from llm_locust.workload.limits import LengthGuard
from llm_locust.workload.prefix import BlockPrefix, NoPrefix, SharedPrefix
from llm_locust.workload.prompts import PromptBuilder
from llm_locust.workload.sessions import SessionSource, SyntheticTurns
from llm_locust.workload.specs import make_spec, stream_rng, user_text
from llm_locust.workload.tokenizer import LengthCalibrator

__all__ = ["LengthSource", "SampledWorkload"]


@dataclass
class SampledWorkload:
    name: str
    sampler: LengthSampler
    builder: PromptBuilder
    seed: int = 0
    guard: LengthGuard = field(default_factory=LengthGuard)
    prefix: NoPrefix | SharedPrefix | BlockPrefix = field(default_factory=NoPrefix)
    calibrator: LengthCalibrator | None = None
    ignore_eos: bool = False
    max_tokens_cap: int | None = None
    multi_turn: int = 0
    agent: AgentLoop | None = None  # --agent-steps: users are agents

    def source(self, index: int) -> RequestSource:
        if self.agent is not None:
            return AgentSource(SyntheticTurns(self, index), index, self, self.agent)
        if self.multi_turn > 1:
            return SessionSource(SyntheticTurns(self, index), index, self)
        return LengthSource(self, index)

    def draw(self, rng: np.random.Generator) -> LengthSample:
        return self.guard.draw(lambda: self.sampler.draw(rng))

    def written(self, target: int) -> int:
        return self.calibrator.approx_for(target) if self.calibrator else target

    def spec_for_lengths(
        self, input_tokens: int, output_tokens: int, stream: int, counter: int
    ) -> RequestSpec:
        """A request of given lengths (trace replay): this workload's text, no sampling."""
        written = self.written(input_tokens)
        body = self.builder.prompt(max(1, written), stream, counter)
        return make_spec(
            [{"role": "user", "content": body}],
            input_tokens,
            output_tokens,
            ignore_eos=self.ignore_eos,
            cap=self.max_tokens_cap,
            info={"written_tokens": written},
        )

    def spec_for_blocks(self, lengths: LengthRow, block_tokens: int, session: int | None) -> RequestSpec:
        """A trace row replayed prefix-exact: each ``hash_ids`` block gets one text, the same in
        every stream and worker (no nonce), so the server's prefix cache sees the trace's reuse."""
        text = mooncake_text(lengths, self.builder, 0, None, block_tokens)
        return make_spec(
            [{"role": "user", "content": text}],
            lengths.input_tokens,
            lengths.output_tokens,
            ignore_eos=self.ignore_eos,
            cap=self.max_tokens_cap,
            session_id=None if session is None else f"trace-{session}",
            info={"blocks": len(lengths.hash_ids)},
        )

    def describe(self) -> JsonObject:
        out: JsonObject = {
            "name": self.name,
            "lengths": self.sampler.describe(),
            "seed": self.seed,
            "prompt_salt": self.builder.salt,
            "tokenizer": self.builder.tokenizer.name,
            "ignore_eos": self.ignore_eos,
            "max_tokens_cap": self.max_tokens_cap,
            "length_limit": self.guard.stats(),
            **self.prefix.describe(),
        }
        if self.multi_turn > 1:
            out["multi_turn"] = {"turns": self.multi_turn}
        if self.agent is not None:
            out["agent"] = self.agent.describe()
        return out


class LengthSource:
    """Single-turn requests: draw lengths, pick a prefix, cut the prompt."""

    def __init__(self, workload: SampledWorkload, index: int) -> None:
        self.w = workload
        self.index = index
        self.rng = stream_rng(workload.seed, index)
        self.counter = 0

    def next_request(self) -> RequestSpec:
        w, rng = self.w, self.rng
        sample = w.draw(rng)
        written = w.written(sample.input_tokens)
        choice = w.prefix.pick(rng, sample, written)
        body = w.builder.prompt(max(1, written - choice.tokens), self.index, self.counter)
        self.counter += 1
        messages: list[JsonObject] = [{"role": "user", "content": user_text(choice, body)}]
        if choice.system is not None:
            messages.insert(0, {"role": "system", "content": choice.system})
        info = {**choice.info, "written_tokens": written}
        return make_spec(
            messages,
            sample.input_tokens,
            sample.output_tokens,
            ignore_eos=w.ignore_eos,
            cap=w.max_tokens_cap,
            info=info,
        )

    def observe(self, spec: RequestSpec, response_text: str, ok: bool) -> None:
        return None

    def observe_usage(self, spec: RequestSpec, prompt_tokens: int | None) -> None:
        """Feed the server's ``usage.prompt_tokens`` to the calibrator (``--tokenizer none``)."""
        written = spec.info.get("written_tokens")
        if self.w.calibrator is not None and prompt_tokens and isinstance(written, int) and written:
            self.w.calibrator.observe(written, prompt_tokens)
