"""The request side of the OpenAI-compatible API: paths, the body, status classes.

Pure module: builds dicts and strings; the client sends them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from llm_locust.config.redact import strip_credentials
from llm_locust.protocol.responses import parse_response_event, responses_tool
from llm_locust.protocol.sse import Chunk, parse_chunk

__all__ = ["ENDPOINT_PATHS", "api_prefix", "build_body", "classify_status", "event_parser", "shown_host"]

ENDPOINT_PATHS = {
    "chat": "/v1/chat/completions",
    "completions": "/v1/completions",
    "responses": "/v1/responses",  # the Responses API (llm_locust.protocol.responses)
}


def event_parser(endpoint: str) -> Callable[[str], Chunk]:
    """How ``endpoint``'s stream events are read: chat and completions chunks, or the Responses
    API's typed events."""
    return parse_response_event if endpoint == "responses" else parse_chunk


def build_body(config: Any, spec: Any) -> dict[str, Any]:
    """The JSON body for ``spec`` (a :class:`~llm_locust.workload.RequestSpec`) under ``config``
    (a :class:`~llm_locust.client.streaming.ClientConfig`). The Responses API takes the messages as its
    ``input``, ``max_output_tokens``, its tools flat, reports usage in every stream and stores
    nothing."""
    if config.endpoint == "responses":
        body: dict[str, Any] = {"model": config.model, "stream": True, "store": False, "input": spec.messages}
        if spec.max_tokens is not None:
            body["max_output_tokens"] = spec.max_tokens
        if _offers_tools(config):
            body["tools"] = [responses_tool(d) for d in config.tools.definitions]
        return _finish(body, config, spec)
    body = {"model": config.model, "stream": True, "stream_options": {"include_usage": True}}
    if config.endpoint == "chat":
        body["messages"] = spec.messages
    else:
        body["prompt"] = spec.prompt
    if spec.max_tokens is not None:  # the workload applies --max-tokens (its one meaning)
        body["max_tokens"] = spec.max_tokens
    if config.endpoint == "chat" and _offers_tools(config):
        body["tools"] = config.tools.definitions
    return _finish(body, config, spec)


def _offers_tools(config: Any) -> bool:
    """Whether this request offers ``--tools`` (a ``ToolOffer``: ``--tool-share`` of them)."""
    tools = getattr(config, "tools", None)
    return tools is not None and bool(tools.next())


def _finish(body: dict[str, Any], config: Any, spec: Any) -> dict[str, Any]:
    """The sampling settings and the extra bodies (the request's, then ``--extra-body``)."""
    if config.temperature is not None:
        body["temperature"] = config.temperature
    body.update(spec.extra_body)
    body.update(config.extra_body)
    return body


def classify_status(status: int) -> str:
    if status == 429:
        return "http_429"
    if 400 <= status < 500:
        return "http_4xx"
    if status >= 500:
        return "http_5xx"
    return "http_other"


def api_prefix(host: str) -> str:
    """A path prefix from ``--host`` (``http://h/openai`` -> ``/openai``; a trailing ``/v1`` is dropped)."""
    path = urlsplit(host).path.rstrip("/")
    return path[: -len("/v1")] if path.endswith("/v1") else path


def shown_host(host: str) -> str:
    """``host`` without credentials (``https://user:key@h`` -> ``https://h``), for messages."""
    return strip_credentials(host)
