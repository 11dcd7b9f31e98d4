"""The request side of the OpenAI-compatible API: paths, the body, status classes.

Pure module: builds dicts and strings; the client sends them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol
from urllib.parse import urlsplit

from llm_locust.config.jsontypes import JsonObject, JsonValue
from llm_locust.config.redact import strip_credentials
from llm_locust.protocol.responses import input_items, parse_response_event, responses_tool
from llm_locust.protocol.sse import Chunk, parse_chunk
from llm_locust.protocol.tools import ToolOffer
from llm_locust.record import Outcome
from llm_locust.workload.base import RequestSpec

__all__ = [
    "ENDPOINT_PATHS",
    "BodySettings",
    "api_prefix",
    "build_body",
    "classify_status",
    "event_parser",
    "shown_host",
]

ENDPOINT_PATHS = {
    "chat": "/v1/chat/completions",
    "completions": "/v1/completions",
    "responses": "/v1/responses",  # the Responses API (llm_locust.protocol.responses)
}


def event_parser(endpoint: str) -> Callable[[str], Chunk]:
    """How ``endpoint``'s stream events are read: chat and completions chunks, or the Responses
    API's typed events."""
    return parse_response_event if endpoint == "responses" else parse_chunk


class BodySettings(Protocol):
    """What of the client's settings goes into a body (:class:`~llm_locust.client.streaming.ClientConfig`)."""

    @property
    def endpoint(self) -> str: ...

    @property
    def model(self) -> str | None: ...

    @property
    def temperature(self) -> float | None: ...

    @property
    def extra_body(self) -> Mapping[str, JsonValue]: ...

    @property
    def tools(self) -> ToolOffer | None: ...


def build_body(config: BodySettings, spec: RequestSpec) -> JsonObject:
    """The JSON body for ``spec`` under ``config``. The Responses API takes the messages as its
    ``input`` items (an agent's tool calls and results as function items: :func:`input_items`),
    ``max_output_tokens``, its tools flat, reports usage in every stream and stores nothing."""
    if config.endpoint == "responses":
        body: JsonObject = {"model": config.model, "stream": True, "store": False}
        body["input"] = input_items(_messages(spec))
        if spec.max_tokens is not None:
            body["max_output_tokens"] = spec.max_tokens
        tools = _offered(config)
        if tools is not None:
            body["tools"] = [responses_tool(d) for d in tools.definitions]
            _choose(body, tools.choice_body(flat=True))
        return _finish(body, config, spec)
    body = {"model": config.model, "stream": True, "stream_options": {"include_usage": True}}
    if config.endpoint == "chat":
        body["messages"] = _messages(spec)
    else:
        body["prompt"] = spec.prompt
    if spec.max_tokens is not None:  # the workload applies --max-tokens (its one meaning)
        body["max_tokens"] = spec.max_tokens
    tools = _offered(config) if config.endpoint == "chat" else None
    if tools is not None:
        body["tools"] = [*tools.definitions]
        _choose(body, tools.choice_body())
    return _finish(body, config, spec)


def _messages(spec: RequestSpec) -> JsonValue:
    """The request's messages as a JSON list (``None`` without them)."""
    return None if spec.messages is None else [*spec.messages]


def _offered(config: BodySettings) -> ToolOffer | None:
    """The tools this request offers (a ``ToolOffer`` offers ``--tool-share`` of the requests)."""
    tools = config.tools
    return tools if tools is not None and tools.next() else None


def _choose(body: JsonObject, choice: JsonValue) -> None:
    if choice is not None:
        body["tool_choice"] = choice


def _finish(body: JsonObject, config: BodySettings, spec: RequestSpec) -> JsonObject:
    """The sampling settings and the extra bodies (the request's, then ``--extra-body``)."""
    if config.temperature is not None:
        body["temperature"] = config.temperature
    body.update(spec.extra_body)
    body.update(config.extra_body)
    return body


def classify_status(status: int) -> Outcome:
    if status == 429:
        return Outcome.HTTP_429
    if 400 <= status < 500:
        return Outcome.HTTP_4XX
    if status >= 500:
        return Outcome.HTTP_5XX
    return Outcome.HTTP_OTHER


def api_prefix(host: str) -> str:
    """A path prefix from ``--host`` (``http://h/openai`` -> ``/openai``; a trailing ``/v1`` is dropped)."""
    path = urlsplit(host).path.rstrip("/")
    return path[: -len("/v1")] if path.endswith("/v1") else path


def shown_host(host: str) -> str:
    """``host`` without credentials (``https://user:key@h`` -> ``https://h``), for messages."""
    return strip_credentials(host)
