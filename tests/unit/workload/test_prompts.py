"""Exact input lengths with a real BPE tokenizer and with the approximate rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from llm_locust.config.model import WorkloadConfig
from llm_locust.workload.build import WorkloadError, build_workload
from llm_locust.workload.prompts import PromptBuilder
from llm_locust.workload.tokenizer import ApproxTokenizer, HFTokenizer, approx_count
from tests.unit.workload.args import workload_config

TARGETS = [1, 17, 128, 1024, 8000]


def _options(*argv: str) -> WorkloadConfig:
    return workload_config(*argv)


def _count(tok: Tokenizer, text: str) -> int:
    return len(tok.encode(text, add_special_tokens=False).ids)


def test_bpe_prompts_hit_exact_targets(bpe_path: Path) -> None:
    builder = PromptBuilder(HFTokenizer(bpe_path), seed=3, min_tokens=8000)
    tok = Tokenizer.from_file(str(bpe_path))
    assert any(
        _count(tok, " " + w) > 1 for w in ["nevertheless", "glaciers", "boulders"]
    )  # really multi-token
    for n in TARGETS:
        for counter in range(5):
            text = builder.prompt(n, stream=2, counter=counter)
            assert _count(tok, text) == n, (n, counter)


def test_approx_prompts_hit_exact_targets() -> None:
    builder = PromptBuilder(ApproxTokenizer(), seed=3, min_tokens=8000)
    for n in [*TARGETS, 70_000]:
        assert approx_count(builder.prompt(n, 1, 9)) == n


def test_profile_workload_with_bpe_is_exact(bpe_path: Path) -> None:
    """1,000 requests of the chat profile, each exactly its target (speed: benchmarks/workload_build.py)."""
    w = build_workload(_options("--workload", "chat", "--tokenizer", str(bpe_path)))
    src = w.source(0)
    specs = [src.next_request() for _ in range(1000)]
    tok = Tokenizer.from_file(str(bpe_path))
    counts = [
        e.ids for e in tok.encode_batch([s.messages[0]["content"] for s in specs], add_special_tokens=False)
    ]
    assert [len(c) for c in counts] == [s.target_input_tokens for s in specs]
    assert len({s.target_input_tokens for s in specs}) > 500  # lengths really drawn from the profile


def test_approx_workload_is_exact() -> None:
    w = build_workload(_options("--workload", "chat"))
    src = w.source(0)
    specs = [src.next_request() for _ in range(1000)]
    assert all(approx_count(s.messages[0]["content"]) == s.target_input_tokens for s in specs)
    assert all(s.prompt == s.messages[0]["content"] for s in specs)
    assert len({s.prompt for s in specs}) == 1000


def test_shared_prefix_prompt_counts_add_up(bpe_path: Path) -> None:
    w = build_workload(
        _options(
            "--input-tokens",
            "uniform:300,600",
            "--shared-prefix-fraction",
            "1",
            "--shared-prefix-tokens",
            "100",
            "--tokenizer",
            str(bpe_path),
        )
    )
    tok = Tokenizer.from_file(str(bpe_path))
    for s in [w.source(1).next_request() for _ in range(20)]:
        assert s.messages[0]["role"] == "system"
        assert _count(tok, s.messages[0]["content"]) == 100
        assert sum(_count(tok, m["content"]) for m in s.messages) == s.target_input_tokens
        assert _count(tok, s.prompt) == s.target_input_tokens  # completions form too


def test_ignore_eos_and_output_lengths() -> None:
    w = build_workload(_options("--input-tokens", "64", "--output-tokens", "uniform:5,9", "--ignore-eos"))
    s = w.source(0).next_request()
    assert 5 <= s.max_tokens <= 9
    assert s.extra_body == {"ignore_eos": True, "min_tokens": s.max_tokens}


def test_bad_tokenizer_file(tmp_path: Path) -> None:
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json")
    with pytest.raises(WorkloadError, match="cannot load tokenizer"):
        build_workload(_options("--tokenizer", str(bad)))
    with pytest.raises(WorkloadError, match="not found"):
        build_workload(_options("--tokenizer", str(tmp_path / "missing.json")))


def test_saved_truncation_and_padding_do_not_cap_counts(bpe_path: Path, tmp_path: Path) -> None:
    """A tokenizer.json exported with ``truncation`` (max_length 50 in some GPT-2 copies) or padding."""
    tok = Tokenizer.from_file(str(bpe_path))
    text = PromptBuilder(ApproxTokenizer(), seed=1).prompt(300, 0, 0)
    want = [_count(tok, text), _count(tok, "Hello there.")]
    tok.enable_truncation(max_length=50)
    tok.enable_padding(length=400)
    path = tmp_path / "truncating.json"
    tok.save(str(path))
    assert json.loads(path.read_text())["truncation"]["max_length"] == 50
    assert want[0] > 50
    assert HFTokenizer(path).count_batch([text, "Hello there."]) == want
