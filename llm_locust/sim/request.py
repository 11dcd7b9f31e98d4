"""What a generation request asks for: its prompt tokens, its output length, or its error.

Errors are vLLM's: an OpenAI-style JSON body ``{"error": {"message", "type", "param",
"code"}}`` with 400 for a bad body, 404 for an unknown model, and the context-length message
vLLM sends when prompt + completion exceed ``max_model_len``.

Output length: ``--output-tokens N`` fixes it (still capped by the request's ``max_tokens``,
as a real server would never exceed it); otherwise ``max_completion_tokens`` or
``max_tokens`` from the request, default 256. ``finish_reason`` is ``"length"`` when the
output stopped at the limit in effect and ``"stop"`` when ``--output-tokens`` ended it
earlier. ``ignore_eos`` and ``min_tokens`` are accepted and have no further effect.

Pure module: no network.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_locust.config.jsontypes import JsonObject
from llm_locust.sim.http import Request
from llm_locust.sim.tokens import PromptError, TokenCounter, completion_prompt

__all__ = ["DEFAULT_MAX_TOKENS", "GenRequest", "HttpError", "Limits", "bad_request", "json_body", "validate"]

DEFAULT_MAX_TOKENS = 256


class HttpError(Exception):
    """An error answer: status, message and OpenAI error type."""

    def __init__(self, status: int, message: str, err_type: str) -> None:
        super().__init__(message)
        self.status = status
        self.err_type = err_type

    def body(self) -> JsonObject:
        return {"error": {"message": str(self), "type": self.err_type, "param": None, "code": self.status}}


def bad_request(message: str) -> HttpError:
    return HttpError(400, message, "BadRequestError")


@dataclass(frozen=True)
class Limits:
    """What the server allows: its model name, context length, and a fixed output length."""

    model: str
    max_model_len: int
    output_tokens: int | None = None


@dataclass(frozen=True)
class GenRequest:
    """A validated generation request."""

    chat: bool
    streaming: bool
    include_usage: bool
    prompt_tokens: int
    n_tokens: int
    finish_reason: str
    prompt_ids: list[int] | None = None  # for the prefix cache (engine mode with caching only)
    limit: int = 0  # the output tokens the request allows (max_tokens, or what fits)


def json_body(request: Request) -> JsonObject:
    """The request's JSON object, or a 400."""
    try:
        body = request.json()
    except (ValueError, UnicodeDecodeError) as e:
        raise bad_request(f"request body is not valid JSON: {e}") from None
    if not isinstance(body, dict):
        raise bad_request("request body must be a JSON object")
    return body


def prompt_ids(body: JsonObject, counter: TokenCounter, chat: bool | None = None) -> list[int]:
    """Token ids of the prompt (``/tokenize``, and the prefix cache); raises ``PromptError``.

    ``chat`` None (``/tokenize``): ``messages`` if present, else ``prompt``.
    """
    if chat or (chat is None and "messages" in body):
        return counter.chat_ids(body.get("messages"))
    if "prompt" in body and not chat:
        prompt = completion_prompt(body["prompt"])
        return prompt if isinstance(prompt, list) else counter.ids(prompt)
    raise PromptError("send 'prompt' or 'messages'")


def _ids(body: JsonObject, chat: bool, counter: TokenCounter) -> list[int]:
    """Prompt token ids; their number is the prompt's token count (one pass instead of two)."""
    try:
        if not chat and "prompt" not in body:
            raise PromptError("'prompt' is required")
        return prompt_ids(body, counter, chat)
    except PromptError as e:
        raise bad_request(str(e)) from None


def _count_prompt(body: JsonObject, chat: bool, counter: TokenCounter) -> int:
    try:
        if chat:
            return counter.count_chat(body.get("messages"))
        if "prompt" not in body:
            raise PromptError("'prompt' is required")
        prompt = completion_prompt(body["prompt"])
        return len(prompt) if isinstance(prompt, list) else counter.count(prompt)
    except PromptError as e:
        raise bad_request(str(e)) from None


def _output_limit(body: JsonObject, chat: bool, prompt_tokens: int, limits: Limits) -> int:
    requested = body.get("max_completion_tokens") if chat else None
    if requested is None:
        requested = body.get("max_tokens")
    if requested is not None and (
        isinstance(requested, bool) or not isinstance(requested, int) or requested < 1
    ):
        raise bad_request(f"max_tokens must be an integer >= 1, got {requested!r}")
    limit = (
        requested if requested is not None else min(DEFAULT_MAX_TOKENS, limits.max_model_len - prompt_tokens)
    )
    if limit < 1 or prompt_tokens + limit > limits.max_model_len:
        raise bad_request(
            f"This model's maximum context length is {limits.max_model_len} tokens. However, you "
            f"requested {prompt_tokens + max(limit, 0)} tokens ({prompt_tokens} in the messages, "
            f"{max(limit, 0)} in the completion). Please reduce the length of the messages or "
            "completion."
        )
    return limit


def validate(
    body: JsonObject, chat: bool, counter: TokenCounter, limits: Limits, with_ids: bool = False
) -> GenRequest:
    """Check a chat or completions body; raises :class:`HttpError`."""
    model = body.get("model")
    if model is not None and model != limits.model:
        raise HttpError(404, f"The model `{model}` does not exist.", "NotFoundError")
    ids = _ids(body, chat, counter) if with_ids else None
    prompt_tokens = len(ids) if ids is not None else _count_prompt(body, chat, counter)
    limit = _output_limit(body, chat, prompt_tokens, limits)
    n_tokens = limit if limits.output_tokens is None else min(limits.output_tokens, limit)
    stream_opts = body.get("stream_options") or {}
    return GenRequest(
        chat=chat,
        streaming=bool(body.get("stream", False)),
        include_usage=isinstance(stream_opts, dict) and bool(stream_opts.get("include_usage")),
        prompt_tokens=prompt_tokens,
        n_tokens=n_tokens,
        finish_reason="length" if n_tokens >= limit else "stop",
        prompt_ids=ids,
        limit=limit,
    )
