"""Requests spread over ``--endpoints`` replicas: one streaming client per replica, a balancer between.

A :class:`ReplicaClients` stands in for one :class:`~llm_locust.client.streaming.StreamingClient` (same
``send`` and ``close``): each request goes to the replica the process's
:class:`~llm_locust.load.replicas.Balancer` picks (``--balance-scope request``), or every request
of the user to the one replica picked when the user started (``user``; it moves when users
leaving have left its replica two above another: :meth:`~llm_locust.load.replicas.Balancer.rebalance`).
Each record carries the replica that served it (``replica``). Clients are made on first use, so a
user bound to one replica opens one connection.
"""

from __future__ import annotations

from dataclasses import replace

from llm_locust.client.streaming import ClientConfig, StreamingClient
from llm_locust.config.balance import BalanceScope
from llm_locust.config.jsontypes import JsonObject
from llm_locust.load.replicas import Balancer
from llm_locust.record import RequestRecord

__all__ = ["ReplicaClients", "make_client"]


class ReplicaClients:
    """Per-replica clients behind a balancer; ``scope``: pick for every request, or once for the user."""

    def __init__(
        self, config: ClientConfig, balancer: Balancer, scope: BalanceScope, concurrency: int = 1
    ) -> None:
        self.config = config
        self.balancer = balancer
        self.scope = BalanceScope(scope)  # a name that is no member: ValueError
        self.concurrency = concurrency
        self._clients: dict[int, StreamingClient] = {}
        self._mine = balancer.acquire() if self.scope is BalanceScope.USER else None

    def _client(self, index: int) -> StreamingClient:
        if index not in self._clients:
            host = self.balancer.replicas[index]
            self._clients[index] = StreamingClient(replace(self.config, host=host), self.concurrency)
        return self._clients[index]

    def send(self, body: JsonObject, record: RequestRecord, keep_text: bool = False) -> str:
        if self._mine is not None:
            index = self._mine = self.balancer.rebalance(self._mine)
        elif record.session_id is not None:  # a session stays on one replica (its prefix cache)
            index = self.balancer.acquire_for(record.session_id)
        else:
            index = self.balancer.acquire()
        record.replica = self.balancer.replicas[index]
        try:
            return self._client(index).send(body, record, keep_text=keep_text)
        finally:
            if self._mine is None:
                self.balancer.release(index)

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
        if self._mine is not None:
            self.balancer.release(self._mine)
            self._mine = None


def make_client(
    config: ClientConfig, balancer: Balancer | None, scope: BalanceScope, concurrency: int = 1
) -> StreamingClient | ReplicaClients:
    """A client for one user (or one open-loop dispatcher): to ``--host``, or over the replicas."""
    if balancer is None:
        return StreamingClient(config, concurrency)
    return ReplicaClients(config, balancer, scope, concurrency)
