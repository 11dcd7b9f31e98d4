"""A process costs its prompt text once: each test only draws a new salt.

A headless run builds its workload at ``init`` (against the checked target) and again when the
test starts (with the test's salt); a web UI run and a capacity search build one per test.
The corpus, its costs, the one-token words and the nonce's slots depend on the tokenizer, the
seed and the length alone, yet each build costed them again: 0.1-0.3 s of the test's first
second with the approximate rule (the loop held while the first users start), more with a
tokenizer file, which was loaded again too. Now :class:`WorkloadFactory` keeps the last few
prompt texts, and a tokenizer file is loaded once while it is unchanged.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from llm_locust.workload import prompts
from llm_locust.workload.build import _TEXTS_KEPT, WorkloadFactory
from llm_locust.workload.prompts import PromptBuilder
from llm_locust.workload.tokenizer import ApproxTokenizer, load_tokenizer
from tests.unit.workload.args import workload_config


@pytest.fixture
def corpus_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The seeds of every corpus costed from here on."""
    seen: list[int] = []
    build = prompts._build_corpus

    def counted(tokenizer: prompts.Tokenizer, seed: int, min_tokens: int) -> prompts._Corpus:
        seen.append(seed)
        return build(tokenizer, seed, min_tokens)

    monkeypatch.setattr(prompts, "_build_corpus", counted)
    return seen


def _prompts(builder: PromptBuilder) -> list[str]:
    return [builder.prompt(tokens, stream, 0) for tokens, stream in ((40, 0), (300, 1), (2000, 7))]


def test_a_second_test_with_a_new_salt_costs_nothing_again_and_gets_that_salts_prompts(
    corpus_builds: list[int],
) -> None:
    factory = WorkloadFactory()
    first = factory.build(workload_config("--input-tokens", "uniform:10,3000", "--prompt-salt", "a1"))
    second = factory.build(workload_config("--input-tokens", "uniform:10,3000", "--prompt-salt", "b2"))
    assert corpus_builds == [0]  # once, for both tests
    a, b = first.builder, second.builder  # type: ignore[attr-defined]
    assert b.prompt_text is a.prompt_text and b.salt == "b2"
    assert _prompts(a) != _prompts(b)  # each test its own texts
    alone = PromptBuilder(ApproxTokenizer(), 0, 3000, salt="b2")  # as a fresh process builds them
    assert _prompts(b) == _prompts(alone) and _prompts(a) == _prompts(
        PromptBuilder(ApproxTokenizer(), 0, 3000, salt="a1")
    )


def test_another_seed_or_length_is_costed_and_only_the_last_few_are_kept(corpus_builds: list[int]) -> None:
    factory = WorkloadFactory()
    for seed in range(_TEXTS_KEPT + 1):
        factory.build(workload_config("--input-tokens", "fixed:100", "--seed", str(seed)))
    factory.build(workload_config("--input-tokens", "fixed:100", "--seed", str(_TEXTS_KEPT)))  # kept
    factory.build(workload_config("--input-tokens", "fixed:100", "--seed", "0"))  # the oldest: dropped
    assert corpus_builds == [*range(_TEXTS_KEPT + 1), 0]
    factory.build(workload_config("--input-tokens", "fixed:200", "--seed", "0"))  # another length
    assert corpus_builds[-1] == 0 and len(corpus_builds) == _TEXTS_KEPT + 3


def test_a_tokenizer_file_is_loaded_once_until_it_changes(bpe_path: Path, tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    shutil.copy(bpe_path, path)
    first = load_tokenizer(str(path))
    assert load_tokenizer(str(path)) is first
    text = path.read_text()
    path.write_text(text + " ")  # a new file at the same path: its size and time differ
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    again = load_tokenizer(str(path))
    assert again is not first and load_tokenizer(str(path)) is again
