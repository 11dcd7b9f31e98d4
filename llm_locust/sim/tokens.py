"""Prompt token counting and generated token text.

Counting must be deterministic and documented, because clients build prompts of an exact
length against it (``POST /tokenize``) and compare ``usage.prompt_tokens`` with what they
sent. Two counters:

- the default approximation: the number of matches of ``\\w+|[^\\w\\s]`` over the prompt
  text (a word, or one punctuation character, is one token). For chat: the sum of that
  count over each message's content (text parts only), plus ``--chat-template-tokens`` per
  message. Counting per message means two messages never merge into one word.
- ``--tokenizer PATH``: a Hugging Face ``tokenizer.json`` loaded with ``tokenizers``, which
  counts exactly (no special tokens added); the per-message template term still applies.

Generated tokens are short words from a fixed list, one word per token (one SSE chunk),
cycled from a per-request offset so output is reproducible under ``--seed``.

Pure module: no network.
"""

from __future__ import annotations

import json
import re
import zlib
from typing import TYPE_CHECKING

from llm_locust.config.jsontypes import JsonValue

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = [
    "OUTPUT_WORDS",
    "PromptError",
    "TokenCounter",
    "chat_texts",
    "completion_prompt",
    "escaped_word",
]

_TOKEN_RE = re.compile(r"\w+|[^\w\s]")

#: Output vocabulary. Each entry is exactly one token's text, with its leading space.
OUTPUT_WORDS: tuple[str, ...] = (
    " lorem", " ipsum", " dolor", " sit", " amet", " consectetur", " adipiscing", " elit", " sed",
    " do", " eiusmod", " tempor", " incididunt", " ut", " labore", " et", " dolore", " magna",
    " aliqua", " enim", " ad", " minim", " veniam", " quis", " nostrud", " exercitation",
    " ullamco", " laboris", " nisi", " aliquip", " ex", " ea", " commodo", " consequat",
)  # fmt: skip

_FAKE_VOCAB = 100_000


class PromptError(ValueError):
    """The request body does not contain a usable prompt (becomes HTTP 400)."""


class TokenCounter:
    """Counts (and lists ids of) prompt tokens; see the module docstring for the rules."""

    def __init__(self, tokenizer_path: str | None = None, chat_template_tokens: int = 0) -> None:
        self.chat_template_tokens = chat_template_tokens
        self._tokenizer: Tokenizer | None = None
        if tokenizer_path:
            from tokenizers import Tokenizer  # deferred: only needed with --tokenizer

            self._tokenizer = Tokenizer.from_file(tokenizer_path)

    @property
    def exact(self) -> bool:
        return self._tokenizer is not None

    def ids(self, text: str) -> list[int]:
        """Token ids of ``text``; with the approximation, stable fake ids (crc32 of the piece)."""
        if self._tokenizer is not None:
            return list(self._tokenizer.encode(text, add_special_tokens=False).ids)
        return [zlib.crc32(p.encode()) % _FAKE_VOCAB for p in _TOKEN_RE.findall(text)]

    def count(self, text: str) -> int:
        if self._tokenizer is not None:
            return len(self._tokenizer.encode(text, add_special_tokens=False).ids)
        return len(_TOKEN_RE.findall(text))

    def count_chat(self, messages: JsonValue) -> int:
        texts = chat_texts(messages)
        return sum(self.count(t) for t in texts) + self.chat_template_tokens * len(texts)

    def chat_ids(self, messages: JsonValue) -> list[int]:
        """Ids for ``/tokenize``: each message's template tokens appear as id 0 before its content."""
        ids: list[int] = []
        for text in chat_texts(messages):
            ids += [0] * self.chat_template_tokens
            ids += self.ids(text)
        return ids


def _content_text(content: JsonValue) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts: only text parts carry tokens here
        parts = [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "".join(p for p in parts if isinstance(p, str))
    raise PromptError("message content must be a string or a list of content parts")


def chat_texts(messages: JsonValue) -> list[str]:
    """The text content of each message."""
    if not isinstance(messages, list) or not messages:
        raise PromptError("'messages' must be a non-empty list")
    texts = []
    for m in messages:
        if not isinstance(m, dict):
            raise PromptError("each message must be an object")
        texts.append(_content_text(m.get("content")))
    return texts


def completion_prompt(prompt: JsonValue) -> str | list[int]:
    """The completions ``prompt`` as text, or as a list of token ids (counted as given)."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        return prompt[0]
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
        return [t for t in prompt if isinstance(t, int)]  # all of them
    if isinstance(prompt, list) and len(prompt) > 1:
        raise PromptError("batched prompts are not supported by the simulator; send one prompt")
    raise PromptError("'prompt' must be a string or a list of token ids")


def escaped_word(word: str) -> bytes:
    """A word as it appears inside a JSON string, without the quotes."""
    return json.dumps(word)[1:-1].encode()
