"""Prompts read like text: no token repeated in a row, and a nonce that is a sentence.

Issue 8 §4: every prompt used to open with one word repeated five times ("stories ban ban
ban ban ban"). Here every prompt of every profile, single and multi-turn, with and without
shared prefixes, from a dataset too, in chat and completions form, over several seeds and
streams, is checked with the approximate rule and with three tokenizer.json files built in
the test (``conftest.py``): no token may appear more than ``MAX_RUN`` times in a row.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from tokenizers import Tokenizer

from llm_locust.workload.build import build_workload
from llm_locust.workload.nonce import KEY_BITS, mix
from llm_locust.workload.prompts import PromptBuilder
from llm_locust.workload.tokenizer import APPROX_PATTERN, ApproxTokenizer, HFTokenizer
from tests.unit.workload.args import workload_config

MAX_RUN = 3  # the same token at most three times in a row ("had had" is English; four is not)

VARIANTS: dict[str, list[str]] = {
    "chat": ["--workload", "chat"],
    "code": ["--workload", "code"],
    "long-context": ["--workload", "long-context", "--max-model-len", "8000"],
    "sharegpt": ["--workload", "sharegpt"],
    "short": ["--input-tokens", "uniform:1,24", "--output-tokens", "4"],
    "multi-turn": ["--workload", "chat", "--multi-turn", "3"],
    "shared-prefix": [
        "--input-tokens",
        "uniform:200,900",
        "--shared-prefix-fraction",
        "0.5",
        "--shared-prefixes",
        "3",
        "--shared-prefix-tokens",
        "150",
    ],
    "dataset": ["--dataset", "DATASET"],
}


def _longest_run(items: Sequence[Any]) -> int:
    best = run = 0
    for i, x in enumerate(items):
        run = run + 1 if i and x == items[i - 1] else 1
        best = max(best, run)
    return best


def test_longest_run() -> None:
    assert _longest_run([]) == 0
    assert _longest_run("abba") == 2
    assert _longest_run(["ban", "x", "ban", "ban", "ban", "ban", "y"]) == 4


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ds") / "prompts.jsonl"
    rows = ["Why do glaciers look blue?", "Write a short note to a neighbor.", "Summarize the plot."]
    path.write_text("".join(json.dumps({"prompt": r}) + "\n" for r in rows))
    return path


def _texts(variant: str, tokenizer: str, seed: int, streams: Sequence[int], n: int, ds: Path) -> list[str]:
    """Every message and every completions prompt of ``n`` requests per stream."""
    argv = [a if a != "DATASET" else str(ds) for a in VARIANTS[variant]]
    w = build_workload(workload_config(*argv, "--tokenizer", tokenizer, "--seed", str(seed)))
    out: list[str] = []
    for stream in streams:
        src = w.source(stream)
        for i in range(n):
            spec = src.next_request()
            out += [m["content"] for m in spec.messages] + [spec.prompt]
            reply = w.builder.body(spec.max_tokens or 1, i + 1).strip()  # as `workload prompts` does
            src.observe(spec, reply, True)
    return out


def _check(texts: list[str], tokens: Callable[[list[str]], list[Sequence[Any]]], label: str) -> None:
    for text, toks in zip(texts, tokens(texts), strict=True):
        run = _longest_run(toks)
        assert run <= MAX_RUN, f"{label}: a token {run} times in a row in {text[:120]!r}"


def _approx_pieces(texts: list[str]) -> list[Sequence[Any]]:
    return [[p.lower() for p in APPROX_PATTERN.findall(t)] for t in texts]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_no_repeated_token_approx(variant: str, dataset: Path) -> None:
    for seed in range(5):
        texts = _texts(variant, "none", seed, (0, 1, 5), 8, dataset)
        _check(texts, _approx_pieces, f"{variant} seed {seed}")


@pytest.mark.parametrize("name", ["tiny-bpe", "byte-bpe", "spm-like"])
def test_no_repeated_token_with_tokenizer_json(
    name: str, tokenizer_paths: dict[str, Path], dataset: Path
) -> None:
    path = tokenizer_paths[name]
    tok = Tokenizer.from_file(str(path))

    def ids(texts: list[str]) -> list[Sequence[Any]]:
        return [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]

    for variant in sorted(VARIANTS):
        for seed in (0, 1):
            _check(_texts(variant, str(path), seed, (0, 3), 5, dataset), ids, f"{name} {variant} seed {seed}")


# -- the nonce itself ----------------------------------------------------------------------


@pytest.mark.parametrize(("bits", "seed"), [(12, 0), (16, 0), (16, 7), (17, 3)])
def test_mix_is_a_bijection(bits: int, seed: int) -> None:
    assert sorted(mix(x, seed, bits) for x in range(1 << bits)) == list(range(1 << bits))


def _builders(paths: dict[str, Path]) -> dict[str, PromptBuilder]:
    out = {"none": PromptBuilder(ApproxTokenizer(), seed=2)}
    out.update({name: PromptBuilder(HFTokenizer(p), seed=2) for name, p in paths.items()})
    return out


def test_nonce_is_a_sentence_of_one_token_pieces(tokenizer_paths: dict[str, Path]) -> None:
    for name, b in _builders(tokenizer_paths).items():
        n = b.nonce
        assert n.capacity >= 1 << KEY_BITS, name
        assert n.kind == ("words" if name == "tiny-bpe" else "sentence"), name  # a toy vocabulary: words
        for counter in range(0, 5000, 499):
            text = b.tag(b.nonce_key(1, counter))
            if n.kind == "sentence":
                assert text[0].isupper() and text.endswith(".") and text.count(".") == 1, text
            counts = b.tokenizer.count_batch(
                [b.tag(b.nonce_key(1, counter), k) for k in range(1, n.tokens + 1)]
            )
            assert counts == list(range(1, n.tokens + 1)), (name, text)


def test_every_slot_varies_from_the_first_request(tokenizer_paths: dict[str, Path]) -> None:
    """Neighbouring requests differ everywhere: no slot stuck on one word (the old high digits)."""
    for name, b in _builders(tokenizer_paths).items():
        columns = list(zip(*(b.nonce.pieces(b.nonce_key(0, c)) for c in range(1000)), strict=True))
        for radix, column in zip(b.nonce.radix, columns, strict=True):
            assert len(set(column)) >= min(radix, 30), (name, sorted(set(column))[:5])


def test_nonces_are_unique() -> None:
    b = PromptBuilder(ApproxTokenizer(), seed=4)
    keys = [
        b.nonce_key(s, c)
        for s in (0, 1, 2, (1 << 24) - 1)
        for c in [*range(20_000), *range((1 << 24) - 500, 1 << 24)]
    ]
    assert len({b.tag(k) for k in keys}) == len(keys)
