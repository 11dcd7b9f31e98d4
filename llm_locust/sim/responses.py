"""``POST /v1/responses``: the OpenAI Responses API as vLLM serves it, on the same token clock.

A Responses request is read as the chat request it amounts to (:func:`as_chat_body`: ``input``
as the messages, a text ``input`` as one user message, ``instructions`` as a system message,
``max_output_tokens`` as ``max_tokens``; usage is always reported), so its prompt, output length,
faults and scheduling are the chat path's; an agent's history comes as ``function_call`` and
``function_call_output`` items (:func:`chat_messages`). The stream (:class:`ResponsesStream`) is vLLM's
event sequence (``vllm/entrypoints/openai/responses``), ``event: <type>`` and
``data: {"type": <type>, "sequence_number": n, ...}`` per event:

- with the first token: ``response.created``, ``response.in_progress``, then the first item's
  ``response.output_item.added`` and ``response.content_part.added``: a ``reasoning`` item
  (``reasoning_text`` part) when the request has a reasoning phase, else the ``message`` item
  (``output_text`` part);
- one ``response.reasoning_text.delta`` per reasoning token, then (the reasoning item closed:
  ``response.reasoning_text.done``, ``response.content_part.done``, ``response.output_item.done``)
  the message item opened and one ``response.output_text.delta`` per answer token;
- with the last token: ``response.output_text.done``, ``response.content_part.done``,
  ``response.output_item.done`` and ``response.completed`` (status ``completed``, or
  ``incomplete`` with ``incomplete_details.reason: max_output_tokens`` when the output was cut
  by the limit: vLLM sends ``response.completed`` either way) with the usage (``input_tokens``,
  ``output_tokens``, ``total_tokens``, ``input_tokens_details.cached_tokens``,
  ``output_tokens_details.reasoning_tokens``); no ``[DONE]``.

A request that offers tools (flat ``{"type": "function", "name": ...}`` entries) gets a tool call
at ``--tool-call-rate`` as on chat (:mod:`~llm_locust.sim.tools`): a ``function_call`` item
(``response.output_item.added``), one ``response.function_call_arguments.delta`` per token, then
``response.function_call_arguments.done``, ``response.output_item.done`` and
``response.completed`` with the call as the output.
"""

from __future__ import annotations

import json

from llm_locust.config.jsontypes import JsonObject, JsonValue
from llm_locust.sim.faults import FaultKind
from llm_locust.sim.http import chunk, response_bytes
from llm_locust.sim.stream import Stream
from llm_locust.sim.tokens import OUTPUT_WORDS, PromptError

__all__ = ["ResponsesStream", "as_chat_body", "chat_messages"]


def as_chat_body(body: JsonObject) -> JsonObject:
    """The chat request a Responses request amounts to (its ``input`` items as the messages:
    :func:`chat_messages`). Raises :class:`PromptError` for an input the Responses API refuses."""
    given = body.get("input")
    messages: JsonValue = [{"role": "user", "content": given}] if isinstance(given, str) else given
    if isinstance(messages, list):
        messages = [*chat_messages(messages)]
    instructions = body.get("instructions")
    if isinstance(instructions, str) and isinstance(messages, list):
        messages = [{"role": "system", "content": instructions}, *messages]
    chat: JsonObject = {"messages": messages, "stream": body.get("stream", False)}
    tools = body.get("tools")
    if isinstance(tools, list):  # flat function tools back in the chat form (sim/tools.py reads it)
        chat["tools"] = [_chat_tool(t) for t in tools]
    chat["stream_options"] = {"include_usage": True}
    if "model" in body:
        chat["model"] = body["model"]
    if body.get("max_output_tokens") is not None:
        chat["max_tokens"] = body["max_output_tokens"]
    return chat


def chat_messages(items: list[JsonValue]) -> list[JsonObject]:
    """Responses input items as chat messages, as vLLM reads them: a message (``role`` user,
    assistant, system or developer) as itself, a ``function_call`` item as the tool call of the
    assistant message before it (or of one of its own), a ``function_call_output`` as the ``tool``
    message answering its ``call_id``; ``reasoning`` items carry no prompt here. A chat-only shape
    (a ``tool`` role, a message with ``tool_calls``) is refused, as the API refuses it."""
    out: list[JsonObject] = []
    for item in items:
        if not isinstance(item, dict):
            raise PromptError("each input item must be an object")
        kind = item.get("type", "message")
        if kind == "function_call":
            call: JsonObject = {
                "id": item.get("call_id"),
                "type": "function",
                "function": _call_function(item),
            }
            if out and out[-1]["role"] == "assistant":
                calls = out[-1].get("tool_calls")
                out[-1] = {**out[-1], "tool_calls": [*(calls if isinstance(calls, list) else ()), call]}
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            out.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": item.get("output")})
        elif kind == "message":
            role = item.get("role")
            if role not in _ROLES:
                raise PromptError(
                    f"input item role {role!r} is not one of {', '.join(_ROLES)} "
                    "(a tool's result is a function_call_output item)"
                )
            if "tool_calls" in item:
                raise PromptError("an input message has no tool_calls (a tool call is a function_call item)")
            out.append({"role": role, "content": _parts_as_text(item.get("content"))})
        elif kind != "reasoning":
            raise PromptError(f"input item type {kind!r} is not supported by the simulator")
    return out


_ROLES = ("user", "assistant", "system", "developer")


def _call_function(item: JsonObject) -> JsonObject:
    return {"name": item.get("name"), "arguments": item.get("arguments", "")}


def _parts_as_text(content: JsonValue) -> JsonValue:
    """A message's ``input_text``/``output_text`` parts as chat's ``text`` parts (counted as such)."""
    if not isinstance(content, list):
        return content
    return [
        {"type": "text", "text": p.get("text", "")}
        if isinstance(p, dict) and p.get("type") in ("input_text", "output_text")
        else p
        for p in content
    ]


def _chat_tool(tool: JsonValue) -> JsonValue:
    if isinstance(tool, dict) and tool.get("type") == "function" and "function" not in tool:
        return {"type": "function", "function": {k: v for k, v in tool.items() if k != "type"}}
    return tool


def _dumps(obj: JsonValue) -> str:
    return json.dumps(obj, separators=(",", ":"))


class ResponsesStream(Stream):
    """One ``/v1/responses`` response: vLLM's events, one delta event per token."""

    __slots__ = ("_seq",)

    def _build_templates(self) -> None:
        self._seq = 0

    def _event(self, kind: str, **fields: JsonValue) -> str:
        seq, self._seq = self._seq, self._seq + 1
        payload = {"type": kind, "sequence_number": seq, **fields}
        return f"event: {kind}\ndata: {_dumps(payload)}\n\n"

    def _item_id(self, kind: str) -> str:
        return ("rs_" if kind == "reasoning" else "msg_") + self.meta[0].removeprefix("resp_")

    def _opened(self, kind: str, index: int) -> str:
        item_id = self._item_id(kind)
        if kind == "reasoning":
            item: JsonObject = {
                "id": item_id,
                "summary": [],
                "type": "reasoning",
                "status": "in_progress",
            }
            part: JsonObject = {"text": "", "type": "reasoning_text"}
        else:
            item = {
                "id": item_id,
                "content": [],
                "role": "assistant",
                "status": "in_progress",
                "type": "message",
            }
            part = {"annotations": [], "text": "", "type": "output_text", "logprobs": []}
        return self._event("response.output_item.added", output_index=index, item=item) + self._event(
            "response.content_part.added", output_index=index, item_id=item_id, content_index=0, part=part
        )

    def _closed(self, kind: str, index: int, text: str) -> str:
        item_id = self._item_id(kind)
        where: JsonObject = {"output_index": index, "item_id": item_id, "content_index": 0}
        done = "response.reasoning_text.done" if kind == "reasoning" else "response.output_text.done"
        part_type = "reasoning_text" if kind == "reasoning" else "output_text"
        return (
            self._event(done, text=text, **where)
            + self._event("response.content_part.done", part={"text": text, "type": part_type}, **where)
            + self._event("response.output_item.done", output_index=index, item=self._item(kind, text))
        )

    def _item(self, kind: str, text: str) -> JsonObject:
        item_id = self._item_id(kind)
        if kind == "reasoning":
            thought: list[JsonValue] = [{"text": text, "type": "reasoning_text"}]
            return {
                "id": item_id,
                "summary": [],
                "type": "reasoning",
                "content": thought,
                "status": "completed",
            }
        content: list[JsonValue] = [{"annotations": [], "text": text, "type": "output_text"}]
        return {
            "id": item_id,
            "content": content,
            "role": "assistant",
            "status": "completed",
            "type": "message",
        }

    def _response(self, status: str) -> JsonObject:
        rid, created, model = self.meta
        response: JsonObject = {
            "id": rid,
            "object": "response",
            "created_at": created,
            "model": model,
            "status": status,
            "output": [],
            "usage": None,
            "incomplete_details": None,
        }
        if status in ("completed", "incomplete") and self.tool_call is not None:
            response["output"] = [self._call_item(True, self.n_tokens)]
            response["usage"] = self._responses_usage()
        elif status in ("completed", "incomplete"):
            r = self.reasoning_tokens
            items = [self._item("reasoning", self._text(0, r))] if self.n_reasoning is not None else []
            response["output"] = [*items, self._item("message", self._text(r, self.n_tokens))]
            response["usage"] = self._responses_usage()
        if status == "incomplete":
            response["incomplete_details"] = {"reason": "max_output_tokens"}
        return response

    def _responses_usage(self) -> JsonObject:
        usage: JsonObject = {
            "input_tokens": self.prompt_tokens,
            "input_tokens_details": {"cached_tokens": self.cached_tokens or 0},
            "output_tokens": self.n_tokens,
            "output_tokens_details": {"reasoning_tokens": self.n_reasoning or 0},
            "total_tokens": self.prompt_tokens + self.n_tokens,
        }
        return usage

    def _call_item(self, done: bool, n: int) -> JsonObject:
        call = self.tool_call
        assert call is not None
        return {
            "type": "function_call",
            "id": "fc_" + self.meta[0].removeprefix("resp_"),
            "call_id": call.call_id,
            "name": call.name,
            "arguments": "".join(call.pieces[:n]),
            "status": "completed" if done else "in_progress",
        }

    def _call_bytes(self, i: int, last: bool) -> bytes:
        """A function call instead of text: its item, one arguments delta a token, its end."""
        call = self.tool_call
        assert call is not None
        item_id = "fc_" + self.meta[0].removeprefix("resp_")
        out = ""
        if i == 0:
            started = self._response("in_progress")
            out += self._event("response.created", response=started)
            out += self._event("response.in_progress", response=started)
            out += self._event("response.output_item.added", output_index=0, item=self._call_item(False, 0))
        out += self._event(
            "response.function_call_arguments.delta", output_index=0, item_id=item_id, delta=call.pieces[i]
        )
        if last:
            arguments = "".join(call.pieces[: self.n_tokens])
            out += self._event(
                "response.function_call_arguments.done", output_index=0, item_id=item_id, arguments=arguments
            )
            item = self._call_item(True, self.n_tokens)
            out += self._event("response.output_item.done", output_index=0, item=item)
            status = "incomplete" if self.finish_reason == "length" else "completed"
            out += self._event("response.completed", response=self._response(status))
        data = chunk(out.encode())
        return data + b"0\r\n\r\n" if last else data

    def _token_bytes(self, i: int, last: bool) -> bytes:
        if self.tool_call is not None:
            return self._call_bytes(i, last)
        reasoning = self.n_reasoning or 0
        out = ""
        if i == 0:
            started = self._response("in_progress")
            out += self._event("response.created", response=started)
            out += self._event("response.in_progress", response=started)
            out += self._opened("reasoning" if reasoning else "message", 0)
        if reasoning and i == reasoning:  # the reasoning item closes, the message opens
            out += self._closed("reasoning", 0, self._text(0, reasoning))
            out += self._opened("message", 1)
        word = OUTPUT_WORDS[(self.offset + i) % len(OUTPUT_WORDS)]
        index = 0 if i < reasoning or not reasoning else 1
        kind = "response.reasoning_text.delta" if i < reasoning else "response.output_text.delta"
        item = self._item_id("reasoning" if i < reasoning else "message")
        out += self._event(kind, output_index=index, item_id=item, content_index=0, delta=word)
        if last:
            if i < reasoning:  # the limit cut the reasoning: it closes, an empty message follows
                out += self._closed("reasoning", 0, self._text(0, self.n_tokens))
                out += self._opened("message", 1)
                index = 1
            text = self._text(min(reasoning, self.n_tokens), self.n_tokens)
            out += self._closed("message", index, text)
            status = "incomplete" if self.finish_reason == "length" else "completed"
            out += self._event("response.completed", response=self._response(status))
        data = chunk(out.encode())
        return data + b"0\r\n\r\n" if last else data

    def _full_response(self) -> bytes:
        status = "incomplete" if self.finish_reason == "length" else "completed"
        data = _dumps(self._response(status)).encode()
        if self.fault is not None and self.fault.kind is FaultKind.MALFORMED:
            data = data[: len(data) // 2]  # truncated JSON with a correct Content-Length
        return response_bytes(200, data, close=not self.conn.keep_alive)
