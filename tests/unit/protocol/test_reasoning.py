"""Reasoning chunks, usage details, and the token split of a reasoning model's answer."""

from __future__ import annotations

import json

import pytest

from llm_locust.protocol.counts import settle_counts
from llm_locust.protocol.reasoning import detail_count, estimate_first_tokens
from llm_locust.protocol.sse import parse_chunk
from llm_locust.record import RequestRecord


def _delta(**fields: str) -> str:
    return json.dumps({"choices": [{"index": 0, "delta": fields}]})


@pytest.mark.parametrize(
    ("fields", "text", "reasoning"),
    [
        ({"content": "a"}, "a", False),
        ({"reasoning_content": "r"}, "r", True),
        ({"reasoning": "r"}, "r", True),
        ({"content": "a", "reasoning_content": "r"}, "a", False),  # content wins
        ({"content": "", "reasoning_content": "r"}, "r", True),
        ({"role": "assistant", "content": ""}, "", False),
    ],
)
def test_chunk_says_whether_its_text_is_reasoning(fields: dict, text: str, reasoning: bool) -> None:
    chunk = parse_chunk(_delta(**fields))
    assert (chunk.text, chunk.reasoning) == (text, reasoning)


def test_a_chunk_of_several_choices_is_reasoning_only_when_all_are() -> None:
    choices = [{"delta": {"reasoning_content": "r"}}, {"delta": {"content": "a"}}]
    assert not parse_chunk(json.dumps({"choices": choices})).reasoning
    choices = [{"delta": {"reasoning_content": "r"}}, {"delta": {"reasoning": "s"}}]
    assert parse_chunk(json.dumps({"choices": choices})).reasoning
    choices = [{"delta": {"content": ""}}, {"delta": {"reasoning": "s"}}]
    assert parse_chunk(json.dumps({"choices": choices})).reasoning


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (None, None),
        ({}, None),
        ({"completion_tokens_details": None}, None),
        ({"completion_tokens_details": {"reasoning_tokens": 7}}, 7),
        ({"completion_tokens_details": {"reasoning_tokens": 0}}, 0),
        ({"completion_tokens_details": {"reasoning_tokens": -1}}, None),
        ({"completion_tokens_details": {"reasoning_tokens": True}}, None),
        ({"completion_tokens_details": {"reasoning_tokens": "7"}}, None),
        ({"completion_tokens_details": "lots"}, None),
    ],
)
def test_detail_count_takes_only_token_counts(usage: dict | None, expected: int | None) -> None:
    assert detail_count(usage, "completion_tokens_details", "reasoning_tokens") == expected


def _record(chunks: int, reasoning_chunks: int, first_chars: int = 4, chars: int = 20) -> RequestRecord:
    rec = RequestRecord("r", 0.0, 0.0, status=200)
    rec.chunk_times = [0.1 * (i + 1) for i in range(chunks)]
    rec.reasoning_chunks = reasoning_chunks
    if chunks > reasoning_chunks:
        rec.t_first_visible = rec.chunk_times[reasoning_chunks]
    rec.first_visible_chars, rec.visible_chars = first_chars, chars
    return rec


def test_usage_split_and_cached_tokens() -> None:
    rec = _record(10, 4)
    usage = {
        "prompt_tokens": 30,
        "completion_tokens": 10,
        "completion_tokens_details": {"reasoning_tokens": 4},
        "prompt_tokens_details": {"cached_tokens": 16},
    }
    settle_counts(rec, usage)
    assert (rec.reasoning_tokens, rec.reasoning_token_source, rec.answer_tokens) == (4, "usage", 6)
    assert rec.cached_tokens == 16
    assert rec.ttft == pytest.approx(0.1) and rec.ttft_visible == pytest.approx(0.5)
    assert rec.first_visible_tokens == 1  # 6 answer tokens in 6 content chunks: one each


def test_without_details_the_reasoning_chunks_count() -> None:
    rec = _record(10, 4)
    settle_counts(rec, {"prompt_tokens": 30, "completion_tokens": 10})
    assert (rec.reasoning_tokens, rec.reasoning_token_source) == (4, "chunks")
    assert rec.cached_tokens is None


def test_a_plain_stream_has_no_split() -> None:
    rec = _record(5, 0)
    settle_counts(rec, {"prompt_tokens": 30, "completion_tokens": 5})
    assert rec.reasoning_tokens is None and rec.reasoning_token_source is None
    assert rec.answer_tokens == 5 and rec.ttft == rec.ttft_visible


def test_reasoning_only_stream_has_no_visible_token() -> None:
    rec = _record(3, 3)
    settle_counts(rec, None)
    assert rec.ttft is not None and rec.ttft_visible is None
    assert rec.first_visible_tokens is None and rec.answer_tokens == 0


def test_first_chunk_tokens_estimated_from_characters() -> None:
    rec = _record(3, 0, first_chars=18, chars=27)
    rec.completion_tokens, rec.token_source = 6, "usage"
    assert estimate_first_tokens(rec) == 4  # 4.5 characters a token: 18 / 4.5
    rec.token_source = "chunks"
    assert estimate_first_tokens(rec) is None
