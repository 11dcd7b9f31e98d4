"""Token counts of one request, and where each came from.

Sources, best first, for each side separately (``token_source`` for the output,
``prompt_token_source`` for the prompt):

- ``usage``: the server's own ``usage`` block (we ask for it with
  ``stream_options.include_usage``), unless it contradicts the stream (:func:`usage_conflict`):
  a count over ``max_tokens``, or fewer tokens than content-bearing chunks (every such chunk
  carries at least one), is not believable, and TPOT and the totals computed from it would be
  wrong by the same factor (50 claimed for 5 chunks: 10x). Such a record keeps the claim in
  its ``usage_conflict`` line and counts what was received instead: the tokenizer's count
  of the streamed text when the run has one, else the content chunks (below). The chunks are
  a measurement; the usage is only what the server says about itself.
- ``tokenizer``: no usage, but the run has the model's tokenizer (``--tokenizer FILE`` or
  ``server``): the streamed text and the prompt's messages are counted once, at the end
  of the request. The stop token is not in the text, so a reply ended by EOS counts one
  token less than the server would.
- ``chunks`` (output) / ``target`` (prompt): neither; the content-chunk count (a chunk may
  carry several tokens) and the workload's target length (``prompt_tokens`` stays
  ``None``: totals fall back to ``target_input_tokens``, the record says so).

Pure module: no network, no Locust.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from llm_locust.config.jsontypes import JsonObject, JsonValue
from llm_locust.protocol.reasoning import detail_count, settle_reasoning, usage_count
from llm_locust.record import RequestRecord

__all__ = [
    "TokenCounter",
    "apply_tokenizer",
    "prompt_texts",
    "requested_tokens",
    "settle_counts",
    "usage_conflict",
]


class TokenCounter(Protocol):
    """A tokenizer: anything with ``count_batch`` (``llm_locust.workload.tokenizer``)."""

    def count_batch(self, texts: Sequence[str]) -> list[int]: ...


def requested_tokens(body: JsonObject) -> int | None:
    """The output length the body asks for (``max_tokens`` or ``max_completion_tokens``)."""
    for key in ("max_tokens", "max_completion_tokens"):
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def usage_conflict(reported: int, chunks: int, max_tokens: int | None) -> str | None:
    """Why ``reported`` completion tokens cannot be right for this stream, or ``None``.

    A count over ``max_tokens`` contradicts a stream that kept within it; a stream that itself
    went past ``max_tokens`` (a server that ignores it) is not the usage's fault."""
    if reported < chunks:
        return f"usage reports {reported} completion tokens for {chunks} content chunks"
    if max_tokens is not None and reported > max_tokens >= chunks:
        return (
            f"usage reports {reported} completion tokens for {chunks} content chunks "
            f"and max_tokens {max_tokens}"
        )
    return None


def settle_counts(record: RequestRecord, usage: JsonObject | None) -> None:
    """Marks and counts from what the stream delivered; partial streams keep theirs."""
    if record.chunk_times:
        record.t_first_token = record.chunk_times[0]
    if record.status != 200:
        return
    chunks = len(record.chunk_times)
    reported = usage_count(usage, "completion_tokens")
    if reported is not None:
        record.usage_conflict = usage_conflict(reported, chunks, record.max_tokens)
    if reported is not None and record.usage_conflict is None:
        record.completion_tokens, record.token_source = reported, "usage"
    else:  # no usage, or one the stream contradicts: what was received
        record.completion_tokens, record.token_source = chunks, "chunks"
    prompt = usage_count(usage, "prompt_tokens")
    if prompt is not None:
        record.prompt_tokens, record.prompt_token_source = prompt, "usage"
    elif record.target_input_tokens is not None:
        record.prompt_token_source = "target"
    record.cached_tokens = detail_count(usage, "prompt_tokens_details", "cached_tokens")
    settle_reasoning(record, usage)


def prompt_texts(body: JsonObject) -> list[str]:
    """The text of the prompt as sent: each message's content (chat's ``messages``, the Responses
    API's ``input``, where a tool's result is a ``function_call_output`` item's ``output``), or
    the completion prompt."""
    messages = body.get("messages", body.get("input"))
    if isinstance(messages, str):  # a Responses ``input`` may be one text
        return [messages]
    if isinstance(messages, list):
        return [
            t
            for m in messages
            if isinstance(m, dict)
            for t in _content_texts(m["content"] if "content" in m else m.get("output"))
        ]
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        return [prompt]
    if isinstance(prompt, list):
        return [p for p in prompt if isinstance(p, str)]
    return []


def _content_texts(content: JsonValue) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):  # multimodal parts: count the text parts
        return [text for p in content if isinstance(p, dict) and isinstance(text := p.get("text"), str)]
    return []


def apply_tokenizer(
    record: RequestRecord,
    counter: TokenCounter,
    body: JsonObject,
    text: str,
    reasoning: str = "",
    first_visible: str = "",
) -> None:
    """Count what usage did not say; one ``count_batch`` call (the tokenizer may be remote).

    ``text`` is everything streamed; ``reasoning`` its reasoning part and ``first_visible``
    the first content chunk's text (counted with the output: see
    :mod:`llm_locust.protocol.reasoning`)."""
    need_output = record.token_source != "usage"
    prompts = prompt_texts(body) if record.prompt_token_source != "usage" else []
    texts = [*prompts, text, reasoning, first_visible] if need_output else prompts
    if not texts:
        return
    counts = counter.count_batch(texts)
    if prompts:
        record.prompt_tokens, record.prompt_token_source = sum(counts[: len(prompts)]), "tokenizer"
    if need_output:
        record.completion_tokens, record.token_source = counts[-3], "tokenizer"
        if reasoning:
            record.reasoning_tokens, record.reasoning_token_source = counts[-2], "tokenizer"
        if first_visible:
            record.first_visible_tokens = counts[-1]
