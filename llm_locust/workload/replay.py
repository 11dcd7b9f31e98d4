"""The workload that sends a dataset: single requests, or conversations as sessions.

Stream ``index`` walks its own seeded permutation of the rows (reshuffled each pass);
Mooncake length rows are replayed in trace order from a seeded offset instead, so the
trace's prefix reuse happens within the stream (see :mod:`datasets`). Output lengths come
from the row (``max_tokens``, the recorded reply, the trace's ``output_length``) or else
from ``--output-tokens``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from llm_locust.config.jsontypes import JsonObject
from llm_locust.workload.base import RequestSource, RequestSpec
from llm_locust.workload.datasets import (
    Conversation,
    Dataset,
    mooncake_text,
    popular_ids,
    single_turn,
    with_nonce,
)
from llm_locust.workload.distributions import Distribution
from llm_locust.workload.limits import LengthGuard
from llm_locust.workload.prompts import PromptBuilder
from llm_locust.workload.sessions import SessionSource, SessionStart, Turn
from llm_locust.workload.specs import make_spec, stream_rng

__all__ = ["DatasetSource", "DatasetTurns", "DatasetWorkload"]


@dataclass
class DatasetWorkload:
    dataset: Dataset
    builder: PromptBuilder
    output: Distribution
    seed: int = 0
    guard: LengthGuard = field(default_factory=LengthGuard)
    ignore_eos: bool = False
    max_tokens_cap: int | None = None
    multi_turn: int = 0
    name: str = "dataset"

    def __post_init__(self) -> None:
        self.shared_ids = popular_ids(self.dataset.lengths) if self.dataset.lengths else frozenset()

    def source(self, index: int) -> RequestSource:
        if self.multi_turn > 1 and self.dataset.conversations:
            return SessionSource(DatasetTurns(self, index), index, self)
        return DatasetSource(self, index)

    def describe(self) -> JsonObject:
        out: JsonObject = {
            "name": self.name,
            "dataset": self.dataset.path,
            "format": self.dataset.format,
            "rows": len(self.dataset),
            "skipped_rows": self.dataset.skipped,
            "seed": self.seed,
            "prompt_salt": self.builder.salt,
            "tokenizer": self.builder.tokenizer.name,
            "output_tokens_default": self.output.spec(),
            "ignore_eos": self.ignore_eos,
            "max_tokens_cap": self.max_tokens_cap,
            "length_limit": self.guard.stats(),
        }
        if self.multi_turn > 1:
            out["multi_turn"] = {"turns": self.multi_turn}
        return out


class _Rows:
    """A stream's walk over the rows: seeded permutations, or trace order from an offset."""

    def __init__(self, n: int, rng: np.random.Generator, in_order: bool) -> None:
        self.n, self.rng, self.in_order = n, rng, in_order
        self.pos = int(rng.integers(n)) if in_order else 0
        self.perm = np.arange(n) if in_order else rng.permutation(n)
        self.i = 0

    def next(self) -> int:
        if self.in_order:
            self.pos = (self.pos + 1) % self.n
            return self.pos
        if self.i == self.n:
            self.perm, self.i = self.rng.permutation(self.n), 0
        self.i += 1
        return int(self.perm[self.i - 1])


class DatasetSource:
    def __init__(self, workload: DatasetWorkload, index: int) -> None:
        self.w, self.index = workload, index
        self.rng = stream_rng(workload.seed, index)
        ds = workload.dataset
        self.rows = _Rows(len(ds), self.rng, in_order=bool(ds.lengths))
        self.counter = 0

    def next_request(self) -> RequestSpec:
        w = self.w
        for _ in range(len(w.dataset)):
            row = self.rows.next()
            spec = self._lengths(row) if w.dataset.lengths else self._conversation(row)
            if spec is not None:
                self.counter += 1
                return spec
        raise RuntimeError("no dataset row fits max-model-len")  # build_workload checks this first

    def _conversation(self, row: int) -> RequestSpec | None:
        w = self.w
        messages, tokens, out = single_turn(w.dataset.conversations[row], w.dataset.first_turn_only)
        out = out or w.output.draw(self.rng)
        if not w.guard.fits(tokens, out):
            if w.guard.policy == "reject" or tokens >= (w.guard.max_model_len or 0):
                w.guard._count("rejected")
                return None
            w.guard._count("clipped")
            out = w.guard.max_model_len - tokens  # type: ignore[operator]
        nonce = w.builder.tag(w.builder.nonce_key(self.index, self.counter))
        return make_spec(
            with_nonce(messages, nonce),
            tokens + w.builder.nonce_tokens,
            out,
            ignore_eos=w.ignore_eos,
            cap=w.max_tokens_cap,
            info={"dataset_row": row},
        )

    def _lengths(self, row: int) -> RequestSpec | None:
        w = self.w
        r = w.dataset.lengths[row]
        if not w.guard.fits(r.input_tokens, r.output_tokens):
            w.guard._count("rejected")
            return None
        text = mooncake_text(r, w.builder, self.index, w.shared_ids)
        return make_spec(
            [{"role": "user", "content": text}],
            r.input_tokens,
            r.output_tokens,
            ignore_eos=w.ignore_eos,
            cap=w.max_tokens_cap,
            info={"dataset_row": row},
        )

    def observe(self, spec: RequestSpec, response_text: str, ok: bool) -> None:
        return None

    def observe_usage(self, spec: RequestSpec, prompt_tokens: int | None) -> None:
        return None


class DatasetTurns:
    """Turns of dataset conversations; replies recorded in the data only set output lengths."""

    def __init__(self, workload: DatasetWorkload, index: int) -> None:
        self.w, self.index = workload, index
        self.rng = stream_rng(workload.seed, index)
        self.rows = _Rows(len(workload.dataset), self.rng, in_order=False)
        self.conv: Conversation | None = None
        self.users: list[int] = []
        self.sessions = 0

    def start(self) -> SessionStart:
        row = self.rows.next()
        self.conv = conv = self.w.dataset.conversations[row]
        self.users = [i for i, m in enumerate(conv.messages) if m["role"] == "user"]
        self.nonce = self.w.builder.tag(self.w.builder.nonce_key(self.index, self.sessions))
        self.sessions += 1
        first = conv.messages[0]
        if first["role"] == "system":
            tokens = conv.counts[0] + self.w.builder.nonce_tokens
            return SessionStart(self.nonce + " " + first["content"], tokens, {"dataset_row": row})
        return SessionStart(None, 0, {"dataset_row": row})

    def turn(self, k: int) -> Turn | None:
        conv = self.conv
        if conv is None or k >= len(self.users):
            return None
        i = self.users[k]
        text, tokens = conv.messages[i]["content"], conv.counts[i]
        if i == 0:
            text, tokens = self.nonce + " " + text, tokens + self.w.builder.nonce_tokens
        nxt = conv.messages[i + 1] if i + 1 < len(conv.messages) else None
        out = conv.counts[i + 1] if nxt is not None and nxt["role"] == "assistant" else None
        return Turn(text, tokens, out or conv.max_tokens or self.w.output.draw(self.rng))
