"""The seam between "what to send" and "how to send it".

A :class:`Workload` is built once per process from the options. Each Locust user asks it
for its own :class:`RequestSource`, which hands out :class:`RequestSpec` objects one at a
time and hears back each response (multi-turn sources grow their history from it).

Pure module: no Locust, no network.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from llm_locust.config.jsontypes import JsonObject

__all__ = ["RequestSource", "RequestSpec", "Workload"]


@dataclass
class RequestSpec:
    """One request to send. ``messages`` for chat, ``prompt`` for completions.

    Workloads fill both ``messages`` and ``prompt`` (the same text; for completions the
    messages' contents joined by a space), so the endpoint can be chosen by the sender.
    ``info`` carries workload details worth recording (e.g. ``prefix_group``).
    """

    # JSON objects, their values not typed as JsonValue: a text message is a dict[str, str], which
    # a dict[str, JsonValue] cannot hold without a copy per request (dict values are invariant)
    messages: list[dict[str, Any]] | None = None
    prompt: str | None = None
    max_tokens: int | None = None
    target_input_tokens: int | None = None
    target_output_tokens: int | None = None
    session_id: str | None = None
    turn: int | None = None
    extra_body: JsonObject = field(default_factory=dict)
    info: JsonObject = field(default_factory=dict)


class RequestSource(Protocol):
    """A per-user stream of requests."""

    def next_request(self) -> RequestSpec: ...

    def observe(self, spec: RequestSpec, response_text: str, ok: bool) -> None:
        """Called after each request; multi-turn sources append the reply to their history."""
        ...


class Workload(Protocol):
    """Builds one :class:`RequestSource` per user; ``index`` makes each stream reproducible."""

    name: str

    def source(self, index: int) -> RequestSource: ...

    def describe(self) -> JsonObject:
        """A JSON-able description for ``summary.json``'s config block."""
        ...
