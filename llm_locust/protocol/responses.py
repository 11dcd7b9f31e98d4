"""The OpenAI Responses API's stream (``POST /v1/responses``, ``--endpoint responses``) read as
the chat stream is: each event becomes a :class:`~llm_locust.protocol.sse.Chunk`.

The stream is a sequence of typed events (``event: <type>`` and ``data: {"type": <type>, ...}``),
as OpenAI documents it and vLLM serves it (``vllm/entrypoints/openai/responses``):
``response.created``, ``response.in_progress``, ``response.output_item.added``,
``response.content_part.added``, then the output, then the ``.done`` events and one last
``response.completed`` carrying the whole response and its ``usage``. No ``[DONE]``: the stream
ends with ``response.completed`` (or ``response.incomplete``, ``response.failed``).

What maps where (the record's fields are the chat stream's):

- ``response.output_text.delta``: content text (``delta``): a content chunk; the first one is the
  TTFT's mark;
- ``response.reasoning_text.delta`` and ``response.reasoning_summary_text.delta``: reasoning text
  (a reasoning chunk, not visible);
- ``response.output_item.added`` of a ``function_call`` item and
  ``response.function_call_arguments.delta``: tool-call pieces in the chat shape (``index`` the
  item's ``output_index``, ``id``, ``function.name``, ``function.arguments``), so
  :mod:`llm_locust.protocol.tools` times them the same way;
- ``response.completed``: ``usage`` (``input_tokens`` -> ``prompt_tokens``, ``output_tokens`` ->
  ``completion_tokens``, ``input_tokens_details.cached_tokens`` and
  ``output_tokens_details.reasoning_tokens`` under the chat names) and the finish: ``stop``, or
  ``tool_calls`` when the output holds a function call; ``response.incomplete`` (OpenAI) or a
  ``response.completed`` whose status is ``incomplete`` (vLLM): ``length`` when
  ``incomplete_details.reason`` is ``max_output_tokens``, else that reason;
- ``error`` and ``response.failed``: an in-stream error (its message);
- every other event (the ``.added``/``.done`` bookkeeping, ``response.created``): nothing.

Pure: no network.
"""

from __future__ import annotations

import json

from llm_locust.config.jsontypes import JsonObject, JsonValue
from llm_locust.protocol.sse import Chunk, PayloadError, _clip, _usage, load_payload

__all__ = ["END_EVENTS", "input_items", "parse_response_event", "responses_tool", "usage_as_chat"]

#: The events that end a Responses stream (the reader stops there, as at chat's ``[DONE]``).
END_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})
_TEXT = "response.output_text.delta"
_REASONING = frozenset({"response.reasoning_text.delta", "response.reasoning_summary_text.delta"})
_ARGS = "response.function_call_arguments.delta"


def parse_response_event(data: str) -> Chunk:
    """Interpret one Responses stream event's ``data``. Raises :class:`PayloadError` if
    malformed. ``Chunk.end`` marks the stream's last event."""
    obj = load_payload(data)
    if not isinstance(obj, dict):
        raise PayloadError(f"stream event is not an object: {_clip(data)}")
    kind = obj.get("type")
    if kind == _TEXT:
        return Chunk(text=_delta(obj))
    if kind in _REASONING:
        text = _delta(obj)
        return Chunk(text=text, reasoning=bool(text))
    if kind == _ARGS:
        piece: JsonObject = {"index": _index(obj), "function": {"arguments": _delta(obj)}}
        return Chunk(tool_calls=[piece])
    if kind == "response.output_item.added":
        return Chunk(tool_calls=_call_opened(obj))
    if kind == "error" or (kind is None and "error" in obj):
        return Chunk(error=_message(obj.get("error") or obj))
    if kind in END_EVENTS:
        return _ended(str(kind), obj)
    return Chunk()


def input_items(messages: JsonValue) -> JsonValue:
    """Chat messages as the Responses API's ``input`` items: a message as itself; an assistant's
    ``tool_calls`` as ``function_call`` items after its text (``call_id``, ``name``,
    ``arguments``); a ``tool`` message as the ``function_call_output`` of its ``call_id`` (an agent
    loop's history, :mod:`llm_locust.workload.agent`). Messages without tools are sent as they are."""
    if not isinstance(messages, list) or not any(
        isinstance(m, dict) and (m.get("role") == "tool" or "tool_calls" in m) for m in messages
    ):
        return messages
    items: list[JsonValue] = []
    for m in messages:
        if not isinstance(m, dict):
            items.append(m)
        elif m.get("role") == "tool":
            output = m.get("content") or ""
            items.append({"type": "function_call_output", "call_id": m.get("tool_call_id"), "output": output})
        elif not isinstance(calls := m.get("tool_calls"), list):
            items.append(m)
        else:
            if m.get("content"):
                items.append({"role": m.get("role"), "content": m["content"]})
            items.extend(_call_item(call) for call in calls)
    return items


def _call_item(call: JsonValue) -> JsonObject:
    """A chat ``tool_calls`` entry as a ``function_call`` input item."""
    call = call if isinstance(call, dict) else {}
    function = call.get("function")
    function = function if isinstance(function, dict) else {}
    return {
        "type": "function_call",
        "call_id": call.get("id"),
        "name": function.get("name"),
        "arguments": function.get("arguments") or "",
    }


def responses_tool(definition: JsonObject) -> JsonObject:
    """A chat ``tools`` entry (``{"type": "function", "function": {...}}``, as ``--tools`` reads
    it) in the Responses API's flat form (``{"type": "function", "name": ..., "parameters": ...}``)."""
    function = definition.get("function")
    if definition.get("type") != "function" or not isinstance(function, dict):
        return definition  # already flat, or a built-in tool type: as given
    return {"type": "function", **function}


def usage_as_chat(usage: JsonValue) -> JsonObject | None:
    """A Responses ``usage`` under the chat stream's names (the counts checked as chat's are)."""
    if not usage:
        return None
    if not isinstance(usage, dict):
        raise PayloadError(f"usage is not an object: {_clip(json.dumps(usage))}")
    chat: JsonObject = {}
    for ours, theirs in (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens")):
        if usage.get(theirs) is not None:
            chat[ours] = usage[theirs]
    if usage.get("total_tokens") is not None:
        chat["total_tokens"] = usage["total_tokens"]
    for ours, theirs in (
        ("prompt_tokens_details", "input_tokens_details"),
        ("completion_tokens_details", "output_tokens_details"),
    ):
        if isinstance(usage.get(theirs), dict):
            chat[ours] = usage[theirs]
    return _usage(chat)


def _delta(obj: JsonObject) -> str:
    delta = obj.get("delta")
    if delta is None or isinstance(delta, str):
        return delta or ""
    raise PayloadError(f"{obj.get('type')}: delta is not a string: {_clip(json.dumps(delta))}")


def _index(obj: JsonObject) -> int:
    index = obj.get("output_index", 0)
    if not isinstance(index, int) or isinstance(index, bool):
        raise PayloadError(f"{obj.get('type')}: output_index is not an integer: {_clip(json.dumps(index))}")
    return index


def _call_opened(obj: JsonObject) -> list[JsonObject] | None:
    """A ``function_call`` item's opening as a chat tool-call piece (its id and name)."""
    item = obj.get("item")
    if not isinstance(item, dict) or item.get("type") != "function_call":
        return None
    function: JsonObject = {"name": item.get("name") or "", "arguments": item.get("arguments") or ""}
    return [{"index": _index(obj), "id": item.get("call_id") or item.get("id"), "function": function}]


def _ended(kind: str, obj: JsonObject) -> Chunk:
    response = obj.get("response")
    if not isinstance(response, dict):
        raise PayloadError(f"{kind}: response is not an object: {_clip(json.dumps(response))}")
    chunk = Chunk(usage=usage_as_chat(response.get("usage")), end=True)
    if kind == "response.failed":
        chunk.error = _message(response.get("error") or "the response failed")
    elif kind == "response.incomplete" or response.get("status") == "incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        chunk.finish_reason = "length" if reason in (None, "max_output_tokens") else str(reason)
    else:
        output = response.get("output")
        calls = isinstance(output, list) and any(
            isinstance(item, dict) and item.get("type") == "function_call" for item in output
        )
        chunk.finish_reason = "tool_calls" if calls else "stop"
    return chunk


def _message(error: JsonValue) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error)
