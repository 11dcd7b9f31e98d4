"""``--tokenizer server`` against three servers' tokenize dialects, and the run that uses it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from llm_locust.workload.tokenizer import ServerTokenizer, approx_count, load_tokenizer
from tests.scripted_server import running_peer

TEXTS = ["Hello, world.", "one two three", ""]


@pytest.fixture(scope="module")
def peer() -> Iterator[str]:
    with running_peer() as base:
        yield base


@pytest.mark.parametrize(
    ("scenario", "route", "overhead"),
    [
        ("vllm", ("/tokenize", "prompt"), 0),
        ("llamacpp", ("/tokenize", "content"), 0),  # answers {"tokens": []} to {"prompt"}
        ("llamacpp_python", ("/extras/tokenize", "input"), 1),  # adds BOS whatever it is told
    ],
)
def test_each_dialect_counts_the_text_without_bos(
    peer: str, scenario: str, route: tuple[str, str], overhead: int
) -> None:
    tok = ServerTokenizer(f"{peer}/{scenario}")
    assert tok._route == route and tok.overhead == overhead
    assert tok.count_batch(TEXTS) == [approx_count(t) for t in TEXTS]


def test_one_instance_per_target_and_remembered_counts(peer: str) -> None:
    first = load_tokenizer("server", f"{peer}/llamacpp_python/v1", "m")
    assert load_tokenizer("server", f"{peer}/llamacpp_python", "m") is first
    first.count_batch(["a remembered text"])
    calls = []
    original = first._exchange
    first._exchange = lambda *a: calls.append(a) or original(*a)  # type: ignore[method-assign]
    assert first.count_batch(["a remembered text"]) == [3]
    assert calls == []  # the workload builds of one process share one set of calls
