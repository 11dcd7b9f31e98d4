"""Tool calls (issue 28 §1): the definitions a request offers and the streamed calls it gets back.

Request side: the definitions of ``--tools`` (:mod:`llm_locust.config.tools`), offered on a
share of the requests (``--tool-share P``, spread evenly: :class:`ToolOffer`).

Response side: a chat stream delivers a tool call as ``choices[0].delta.tool_calls[i]``, the
call's ``index`` naming which call a piece belongs to, ``function.name`` usually whole in the
first piece and ``function.arguments`` in pieces (vLLM, OpenAI). A record keeps

- ``tool_calls``: how many calls (distinct indices) the stream carried;
- ``time_to_first_tool_call``: sent -> the first tool-call delta;
- ``time_to_tool_args_complete``: sent -> the last piece of arguments (the arguments are
  complete once no further piece comes: the stream's finish);
- ``tool_args_json_ok``: every call's concatenated arguments parse as JSON.

A tool-call delta is not content: TTFT, ITL and the chunk count stay with text content, so
a response with only tool calls has no TTFT (and no TPOT) but has a
``time_to_first_tool_call``; ``finish_reason: "tool_calls"`` makes it complete.

Pure module: no network, no Locust.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from llm_locust.config.jsontypes import JsonObject, JsonValue
from llm_locust.config.tools import TOOL_CHOICE_MODES
from llm_locust.record import RequestRecord

__all__ = [
    "ToolArgs",
    "ToolOffer",
    "note_tool_deltas",
    "settle_tool_args",
]

#: A call's argument pieces, by the call's index.
ToolArgs = dict[int, list[str]]


class ToolOffer:
    """Which requests offer the tools: a share ``share`` of them, evenly spread (request ``n``
    offers them when ``floor((n + 1) * share)`` passes ``floor(n * share)``), reproducibly."""

    __slots__ = ("choice", "definitions", "sent", "share")

    def __init__(
        self, definitions: Sequence[JsonObject], share: float = 1.0, choice: str | None = None
    ) -> None:
        self.definitions = list(definitions)
        self.share = share
        self.choice = choice  # --tool-choice: a mode (auto, required, none) or a tool's name
        self.sent = 0

    def choice_body(self, flat: bool = False) -> JsonValue:
        """``tool_choice`` as sent: a mode as it is, a name as that function (the Responses API's
        ``flat`` form ``{"type": "function", "name": N}``); ``None``: none sent."""
        if self.choice is None or self.choice in TOOL_CHOICE_MODES:
            return self.choice
        if flat:
            return {"type": "function", "name": self.choice}
        return {"type": "function", "function": {"name": self.choice}}

    def next(self) -> bool:
        n, self.sent = self.sent, self.sent + 1
        return int((n + 1) * self.share + 1e-9) > int(n * self.share + 1e-9)


def note_tool_deltas(record: RequestRecord, args: ToolArgs, deltas: Sequence[JsonObject], now: float) -> None:
    """One chunk's ``delta.tool_calls``, read at ``now``: the first-delta and last-argument marks."""
    if record.t_first_tool_call is None:
        record.t_first_tool_call = now
    for position, delta in enumerate(deltas):
        index = delta.get("index")
        index = index if isinstance(index, int) and not isinstance(index, bool) else position
        pieces = args.setdefault(index, [])
        function = delta.get("function")
        piece = function.get("arguments") if isinstance(function, dict) else None
        if isinstance(piece, str) and piece:
            pieces.append(piece)
            record.t_tool_args_done = now
    record.tool_calls = len(args)


def settle_tool_args(record: RequestRecord, args: ToolArgs) -> None:
    """Whether every call's arguments, concatenated, parse as JSON (``None``: no call)."""
    if not args:
        return
    try:
        for pieces in args.values():
            json.loads("".join(pieces))
    except ValueError:
        record.tool_args_json_ok = False
    else:
        record.tool_args_json_ok = True
