"""Tool calls: the simulator answers a request that offers ``tools`` with a call (issue 28 §1).

``llm-locust sim --tool-call-rate P`` answers that share of the chat requests whose body has a
non-empty ``tools`` list with a call to the first tool, its arguments ``--tool-args-tokens N``
tokens long, streamed as vLLM and OpenAI stream them: one ``delta.tool_calls[0]`` piece per
token on the token clock. The schedule is the text stream's: piece 0 (it carries the call's
``id``, ``type`` and ``function.name`` and the first piece of ``arguments``) at the prefill
time, piece ``k`` ``k`` decode steps later, the last (``N - 1`` steps after the first) with
``finish_reason: "tool_calls"``. The arguments are a JSON object ``{"<param>": "<words>"}``
(the tool's first required parameter, else its first, else ``input``) cut into ``N``
pieces; ``max_tokens`` below ``N`` cuts them (``finish_reason: "length"``, arguments not JSON).

Pure module: no network.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from llm_locust.config.jsontypes import JsonObject, JsonValue
from llm_locust.sim.tokens import OUTPUT_WORDS

__all__ = ["ToolCall", "decide_tool_call"]


@dataclass(slots=True)
class ToolCall:
    """The call a response streams: its id, the function's name and the argument pieces."""

    call_id: str
    name: str
    pieces: list[str]

    def delta(self, i: int) -> JsonObject:
        """The ``delta`` of token ``i``: the call's head with the first piece, then pieces."""
        if i == 0:
            function: JsonObject = {"name": self.name, "arguments": self.pieces[0]}
            return {
                "tool_calls": [{"index": 0, "id": self.call_id, "type": "function", "function": function}]
            }
        return {"tool_calls": [{"index": 0, "function": {"arguments": self.pieces[i]}}]}

    def message(self, n: int) -> list[JsonValue]:
        """The whole call (a non-streaming response) with its first ``n`` pieces."""
        function: JsonObject = {"name": self.name, "arguments": "".join(self.pieces[:n])}
        return [{"id": self.call_id, "type": "function", "function": function}]


def decide_tool_call(
    body: JsonObject, rng: random.Random, rate: float, n_args: int, call_id: str, offset: int
) -> ToolCall | None:
    """A call when the body offers tools and the draw falls under ``rate``; else ``None``."""
    tools = body.get("tools")
    if rate <= 0 or not isinstance(tools, list) or not tools or rng.random() >= rate:
        return None
    first: JsonObject = tools[0] if isinstance(tools[0], dict) else {}
    found = first.get("function")
    function: JsonObject = found if isinstance(found, dict) else {}
    given = function.get("name")
    name = given if isinstance(given, str) else "tool"
    return ToolCall(call_id, name, _pieces(_param(function.get("parameters")), n_args, offset))


def _param(parameters: JsonValue) -> str:
    if not isinstance(parameters, dict):
        return "input"
    required, properties = parameters.get("required"), parameters.get("properties")
    if isinstance(required, list) and required and isinstance(required[0], str):
        return required[0]
    if isinstance(properties, dict) and properties:
        return str(next(iter(properties)))
    return "input"


def _pieces(param: str, n: int, offset: int) -> list[str]:
    """``n`` pieces whose concatenation is ``{"param": "words"}``."""
    head = "{" + json.dumps(param) + ': "'
    if n == 1:
        return [head + '"}']
    words = [OUTPUT_WORDS[(offset + i) % len(OUTPUT_WORDS)] for i in range(n - 2)]
    return [head, *words, '"}']
