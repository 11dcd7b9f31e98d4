"""Reasoning models: two clocks, two token counts, and the phase each metric covers.

A reasoning model streams its thinking (``delta.reasoning_content``, or ``delta.reasoning``
in newer vLLM) before the visible answer (``delta.content``). A record keeps:

- ``ttft``: sent -> first token of *any* kind (reasoning or content), as before;
- ``ttft_visible``: sent -> first *content* token, what a user of a chat UI waits for;
- ``reasoning_tokens`` and ``answer_tokens`` (``completion_tokens`` minus reasoning), with
  ``reasoning_token_source`` saying where the split came from, like ``token_source``:
  ``usage`` (``usage.completion_tokens_details.reasoning_tokens``), ``tokenizer`` (the run's
  tokenizer over the reasoning text) or ``chunks`` (reasoning chunks counted: a chunk may
  carry several tokens). A stream without reasoning and a usage that says nothing about it
  has no split (``None``).
- ``first_visible_tokens``: how many tokens the first content chunk carried (the tokenizer's
  count, else an estimate from the answer's characters per token). More than one means
  ``ttft_visible`` includes decode time of the tokens batched into that chunk.

:data:`PHASES` says which phase each latency covers; it is written into the summary.

Pure module: no network, no Locust.
"""

from __future__ import annotations

from llm_locust.config.jsontypes import JsonObject
from llm_locust.record import RequestRecord

__all__ = [
    "PHASES",
    "REASONING_SOURCES",
    "batched_first_message",
    "detail_count",
    "estimate_first_tokens",
    "settle_reasoning",
    "usage_count",
]

#: Which tokens (and which chunks) each latency covers.
PHASES = {
    "ttft": "sent -> first token of any kind (reasoning or content)",
    "ttft_visible": "sent -> first content (answer) token",
    "tpot": "(e2e - ttft) / (completion_tokens - 1): reasoning and answer tokens",
    "itl": "gaps between successive token-bearing chunks, reasoning and answer",
}
REASONING_SOURCES = ("usage", "tokenizer", "chunks")


def usage_count(usage: JsonObject | None, key: str) -> int | None:
    """A count of a checked ``usage`` (``prompt_tokens``, ``completion_tokens``), or ``None``."""
    value = usage.get(key) if usage else None
    return value if isinstance(value, int) else None


def detail_count(usage: JsonObject | None, section: str, key: str) -> int | None:
    """``usage[section][key]`` when it is a token count (``completion_tokens_details``,
    ``reasoning_tokens``); ``None`` when absent or not a non-negative int."""
    if not usage:
        return None
    details = usage.get(section)
    if not isinstance(details, dict):
        return None
    value = details.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def settle_reasoning(record: RequestRecord, usage: JsonObject | None) -> None:
    """The reasoning / answer split from the usage, else from the reasoning chunks."""
    reported = detail_count(usage, "completion_tokens_details", "reasoning_tokens")
    if reported is not None and record.token_source == "usage":
        record.reasoning_tokens, record.reasoning_token_source = reported, "usage"
    elif record.reasoning_chunks:
        record.reasoning_tokens, record.reasoning_token_source = record.reasoning_chunks, "chunks"
    if record.first_visible_tokens is None:
        record.first_visible_tokens = estimate_first_tokens(record)


def estimate_first_tokens(record: RequestRecord) -> int | None:
    """Tokens in the first content chunk, from the answer's characters per token.

    Exact when the answer's tokens equal its content chunks (each carries at least one, so
    each carries exactly one); otherwise the first chunk's characters over the answer's mean
    characters per token, at least 1. ``None`` when there is no content, or no count but the
    chunks themselves."""
    if record.token_source not in ("usage", "tokenizer"):
        return None
    answer = record.answer_tokens
    chunks = len(record.chunk_times) - record.reasoning_chunks
    if answer is None or chunks <= 0 or record.t_first_visible is None:
        return None
    if answer <= chunks:
        return 1
    if record.visible_chars <= 0:
        return None
    per_token = record.visible_chars / answer
    return max(1, round(record.first_visible_chars / per_token))


def batched_first_message(tokens: int) -> str:
    """The warning for a first content chunk that carried ``tokens`` (> 1) tokens."""
    return (
        f"the first content chunk carried {tokens} tokens: ttft_visible includes the decode time "
        f"of {tokens - 1} of them (the server batches tokens into chunks; ITL sees one gap for several)"
    )
