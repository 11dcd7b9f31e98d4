"""Which count a record keeps, and what it says about where it came from."""

from __future__ import annotations

import pytest

from llm_locust.protocol.counts import (
    apply_tokenizer,
    prompt_texts,
    requested_tokens,
    settle_counts,
    usage_conflict,
)
from llm_locust.record import RequestRecord
from llm_locust.workload.tokenizer import ApproxTokenizer


def streamed(chunks: int, target: int | None = None, max_tokens: int | None = None) -> RequestRecord:
    r = RequestRecord(request_id="r", wall_start=0.0, t_sent=1.0, status=200, target_input_tokens=target)
    r.chunk_times = [1.1 + 0.01 * i for i in range(chunks)]
    r.max_tokens = max_tokens
    return r


def test_requested_tokens_from_either_name() -> None:
    assert requested_tokens({"max_tokens": 8}) == 8
    assert requested_tokens({"max_completion_tokens": 5}) == 5
    assert requested_tokens({"max_tokens": True}) is None and requested_tokens({}) is None


@pytest.mark.parametrize(
    ("reported", "chunks", "max_tokens", "conflict"),
    [
        (50, 5, 8, True),  # over max_tokens
        (3, 5, None, True),  # fewer tokens than content chunks
        (8, 5, 8, False),  # several tokens per chunk: fine
        (5, 5, None, False),
        (12, 12, 8, False),  # the server ignored max_tokens; its usage agrees with the stream
        (30, 12, 8, False),  # ... and batched several tokens a chunk
        (9, 8, 8, True),  # a stream within max_tokens, a usage past it
    ],
)
def test_usage_conflict(reported: int, chunks: int, max_tokens: int | None, conflict: bool) -> None:
    assert (usage_conflict(reported, chunks, max_tokens) is not None) is conflict


def test_settle_prefers_usage_when_the_stream_allows_it() -> None:
    r = streamed(5, target=100, max_tokens=8)
    settle_counts(r, {"prompt_tokens": 103, "completion_tokens": 8})  # several tokens per chunk
    assert (r.completion_tokens, r.token_source, r.usage_conflict) == (8, "usage", None)


def test_a_usage_the_stream_contradicts_is_flagged_and_the_received_count_used() -> None:
    """Issue 26 §9: 50 claimed for 5 content chunks with max_tokens 8 made the totals 10x too
    high and TPOT 12x too low; the count is now the 5 chunks received, the claim in the flag."""
    r = streamed(5, target=100, max_tokens=8)
    settle_counts(r, {"prompt_tokens": 103, "completion_tokens": 50})
    assert (r.completion_tokens, r.token_source) == (5, "chunks")
    assert (r.prompt_tokens, r.prompt_token_source) == (103, "usage")
    assert r.usage_conflict == "usage reports 50 completion tokens for 5 content chunks and max_tokens 8"
    assert r.ttft == pytest.approx(0.1)
    r.t_end = 1.6
    assert r.tpot == pytest.approx(0.5 / 4)
    under = streamed(5, target=100)
    settle_counts(under, {"completion_tokens": 3})  # fewer than the chunks received
    assert (under.completion_tokens, under.token_source) == (5, "chunks") and under.usage_conflict


def test_settle_without_usage_falls_back_and_says_so() -> None:
    r = streamed(4, target=100)
    settle_counts(r, None)
    assert (r.completion_tokens, r.token_source) == (4, "chunks")
    assert r.prompt_tokens is None and r.prompt_token_source == "target"
    assert r.usage_conflict is None


def test_settle_without_a_reply_counts_nothing() -> None:
    r = RequestRecord(request_id="r", wall_start=0.0, t_sent=1.0, status=None)
    settle_counts(r, None)
    assert r.completion_tokens is None and r.token_source is None and r.prompt_token_source is None


def test_prompt_texts_of_chat_and_completions() -> None:
    chat = {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there"}]}
    assert prompt_texts(chat) == ["Be brief.", "Hi there"]
    parts = {"messages": [{"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image"}]}]}
    assert prompt_texts(parts) == ["look"]
    assert prompt_texts({"prompt": "once upon"}) == ["once upon"]


def test_tokenizer_counts_what_usage_did_not_say() -> None:
    body = {"messages": [{"role": "user", "content": "Count these five words."}]}
    r = streamed(3, target=5)
    settle_counts(r, None)
    apply_tokenizer(r, ApproxTokenizer(), body, "one, two three")
    assert (r.completion_tokens, r.token_source) == (4, "tokenizer")
    assert (r.prompt_tokens, r.prompt_token_source) == (5, "tokenizer")


def test_tokenizer_leaves_a_usage_count_alone() -> None:
    body = {"messages": [{"role": "user", "content": "Count these five words."}]}
    r = streamed(3)
    settle_counts(r, {"completion_tokens": 3})
    apply_tokenizer(r, ApproxTokenizer(), body, "one, two three")
    assert (r.completion_tokens, r.token_source) == (3, "usage")
    assert (r.prompt_tokens, r.prompt_token_source) == (5, "tokenizer")
