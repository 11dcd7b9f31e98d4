"""Agent loops: a session is model turn -> tool -> model turn, the prefix growing each step.

``--agent-steps DIST`` makes every closed-loop user an agent. A session draws its number of
model turns ``N`` from ``DIST`` (the length grammar: ``fixed:4``, ``uniform:2,8``, ...). The
first turn sends the task (a user message of the workload's input length). Each turn after it
resends the whole history with two messages appended: the assistant's previous reply, carrying
a tool call (``tool_calls``, one ``function`` call with id ``call_<session>_<step>``), and the
tool's result (a ``tool`` message answering that id, its length drawn like a new input). Between
two turns the user waits for the tool: ``--tool-latency`` (a duration distribution, the
think-time grammar), drawn per step. That wait lies between two requests, so it is in no
request's latency; it is in the session's end-to-end time (first request sent -> last byte of
the last turn), which the summary reports beside each step's TTFT.

Each request carries ``session_steps`` (``N``) and, after the first, ``tool_wait_s`` (the
wait before it) in its row. A failed turn ends the session (it is counted as not completed);
a history that would no longer fit ``max_model_len`` ends it early, as for ``--multi-turn``.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_locust.config.jsontypes import JsonObject
from llm_locust.config.think import ThinkTime
from llm_locust.workload.distributions import Distribution
from llm_locust.workload.sessions import SessionConfig, SessionSource, Turn, TurnProvider

__all__ = ["TOOL_NAME", "AgentLoop", "AgentSource"]

#: The function every synthesized tool call names.
TOOL_NAME = "run_tool"


@dataclass(frozen=True)
class AgentLoop:
    """Steps per session and the tool's latency between two steps."""

    steps: Distribution
    tool_latency: ThinkTime

    def describe(self) -> JsonObject:
        return {"steps": self.steps.spec(), "tool_latency": self.tool_latency.spec()}


class AgentSource(SessionSource):
    """A session source whose turns after the first are tool results, not user messages."""

    def __init__(self, provider: TurnProvider, index: int, config: SessionConfig, loop: AgentLoop) -> None:
        self.loop = loop
        self.wait_s = 0.0  # the tool wait before the next request (0: a new session starts)
        super().__init__(provider, index, config)

    def _turns(self) -> int:
        return max(1, self.loop.steps.draw(self.p.rng))

    def _call_id(self, step: int) -> str:
        return f"call_{self.session_id}_{step}"

    def _message(self, turn: Turn) -> JsonObject:
        if self.k == 0:
            return super()._message(turn)
        return {"role": "tool", "tool_call_id": self._call_id(self.k - 1), "content": turn.user}

    def _reply(self, text: str) -> JsonObject:
        function: JsonObject = {"name": TOOL_NAME, "arguments": "{}"}
        call: JsonObject = {"id": self._call_id(self.k), "type": "function", "function": function}
        return {"role": "assistant", "content": text, "tool_calls": [call]}

    def _info(self) -> JsonObject:
        info: JsonObject = {"session_steps": self.turns}
        if self.k:
            info["tool_wait_s"] = self.wait_s
        return info

    @property
    def mid_session(self) -> bool:
        """The next request continues a session (the user waits for the tool, not thinks)."""
        return self.pending is None and 0 < self.k < self.turns

    def tool_wait(self) -> float:
        """The tool's run time before the next step (drawn now), or 0 when the session ended."""
        self.wait_s = self.loop.tool_latency.draw(self.p.rng) if self.mid_session else 0.0
        return self.wait_s
