"""What sends a request, as the runtime sees it: the streaming client, one per replica
(:class:`~llm_locust.runtime.replicas.ReplicaClients`) or paced
(:class:`~llm_locust.runtime.backoff.PacedClient`). One Protocol, so the users, the open-loop
dispatch and the bursts take any of them.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from llm_locust.config.jsontypes import JsonObject

if TYPE_CHECKING:
    from llm_locust.client.streaming import ClientConfig
    from llm_locust.record import RequestRecord

__all__ = ["Sender"]


class Sender(Protocol):
    """Sends one body and fills its record; returns the streamed text when ``keep_text``."""

    @property
    def config(self) -> ClientConfig: ...

    def send(self, body: JsonObject, record: RequestRecord, keep_text: bool = False) -> str: ...

    def close(self) -> None: ...
