"""Prefix-exact replay: a block's text of fewer tokens is the start of its longer text.

The trace's hit ceiling (``load/trace_reuse.py``) credits a request with the tokens of a block an
earlier request computed *up to the shorter of the two lengths*: a trace block shorter than
``--trace-block-tokens``, or a request's last partial block, must be the first tokens of the
same id's longer text, or a server's prefix cache sees far less reuse than the ceiling says.
Checked here with a real BPE tokenizer: the texts are encoded, and an unbounded prefix cache at
token granularity (the longest common token prefix with any earlier request) is computed in the
test, independently of the module's own arithmetic.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tokenizers import Tokenizer

from llm_locust.load.trace_reuse import hit_ceiling
from llm_locust.load.traces import TraceEntry
from llm_locust.workload.datasets import LengthRow, mooncake_text
from llm_locust.workload.prompts import PromptBuilder
from llm_locust.workload.tokenizer import HFTokenizer

B = 128  # block tokens

# Requests of two conversations; a partial last block that a later turn sends in full (or longer),
# and a trace block shorter than B in the middle of nothing (a request of one short block, resent
# longer).
ROWS = [
    (1 * B + 40, (1, 2)),  # block 2 partial (40 tokens)
    (2 * B + 70, (1, 2, 3)),  # block 2 full now: its first 40 tokens were computed
    (2 * B + 100, (1, 2, 3)),  # block 3 longer: its first 70 were computed
    (25, (9,)),  # a one-block request of 25 tokens
    (90, (9,)),  # the same block, 90 tokens: its first 25 were computed
    (3 * B, (1, 2, 3, 4)),  # block 3 full, block 4 new
    (B + 5, (7, 8)),  # another conversation
    (B + 60, (7, 8)),
]


def _lcp(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


@pytest.mark.parametrize("name", ["tiny-bpe", "byte-bpe", "spm-like"])
def test_a_shorter_block_is_the_start_of_the_longer(name: str, tokenizer_paths: dict[str, Path]) -> None:
    path = tokenizer_paths[name]
    builder = PromptBuilder(HFTokenizer(path), seed=5)
    tok = Tokenizer.from_file(str(path))
    for key in (11, 4242, 987654):
        for first in (True, False):
            full = tok.encode(builder.block(key, 400, first), add_special_tokens=False).ids
            for n in (3, 30, 100, 250, 399):
                part = tok.encode(builder.block(key, n, first), add_special_tokens=False).ids
                assert len(part) == n
                shared = _lcp(part, full)
                # the end may differ by a word's tokens (the shorter text closes with one-token
                # words where the longer one has a word of several tokens); the rest is shared
                assert shared >= n - 6, (name, key, first, n, shared)


@pytest.mark.parametrize("name", ["tiny-bpe", "spm-like"])
def test_replay_texts_reach_the_hit_ceiling(name: str, tokenizer_paths: dict[str, Path]) -> None:
    path = tokenizer_paths[name]
    builder = PromptBuilder(HFTokenizer(path), seed=5)
    tok = Tokenizer.from_file(str(path))
    encoded = []
    for tokens, ids in ROWS:
        text = mooncake_text(LengthRow(tokens, 10, ids), builder, 0, None, B)
        encoded.append(tok.encode(text, add_special_tokens=False).ids)
    assert [len(e) for e in encoded] == [t for t, _ in ROWS]
    hits = sum(max((_lcp(e, prev) for prev in encoded[:i]), default=0) for i, e in enumerate(encoded))
    prompt = sum(len(e) for e in encoded)
    reusable, total = hit_ceiling([TraceEntry(0.0, t, 10, ids) for t, ids in ROWS], B)
    assert total == prompt
    # a cache at token granularity serves the ceiling, less a few tokens at each partial block's end
    assert hits / prompt == pytest.approx(reusable / total, abs=0.02), (hits, reusable, prompt)
