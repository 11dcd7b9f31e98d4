"""Locust's real master and worker runners in one process, joined by an in-memory RPC channel.

As Locust tests its own runners (``locust/test/test_runners.py``: ``mocked_rpc`` patches
``locust.rpc.rpc.Server`` and ``Client``), the ZeroMQ sockets are replaced and everything above
them is Locust's: the handshake (``client_ready`` / ``ack``), heartbeats, and the dispatch of
custom messages (``register_message``) to llm-locust's handlers. Every message is serialized
with Locust's own ``Message.serialize`` (msgpack), so what a handler gets is what the wire
would carry. No socket, no subprocess: the master's and the workers' greenlets share the hub.

Use :func:`fleet_of` as a context manager::

    with fleet_of(workers=2) as pair:
        pair.master  # a MasterRunner on its own Environment
        pair.workers  # WorkerRunners, connected (their ``ack`` arrived)
"""

from __future__ import annotations

from locust.env import Environment
from locust.event import Events
from locust.rpc import Message, rpc
from locust.runners import MasterRunner, WorkerRunner

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import gevent
from gevent.queue import Queue

__all__ = ["Pair", "Wire", "fleet_of", "settle"]


@dataclass
class Wire:
    """The channel: one queue into the master, one per worker; every message as its bytes."""

    to_master: Queue = field(default_factory=Queue)
    to_worker: dict[str, Queue] = field(default_factory=dict)
    #: every message the master received, in order: (worker id, type)
    log: list[tuple[str, str]] = field(default_factory=list)

    def server_class(self) -> type:
        wire = self

        class Server:
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                pass

            def send_to_client(self, msg: Message) -> None:
                wire.to_worker.setdefault(msg.node_id, Queue()).put(msg.serialize())

            def recv_from_client(self) -> tuple[str, Message]:
                msg = Message.unserialize(wire.to_master.get())
                wire.log.append((msg.node_id, msg.type))
                return msg.node_id, msg

            def close(self, linger: Any = None) -> None:
                pass

        return Server

    def client_class(self) -> type:
        wire = self

        class Client:
            def __init__(self, host: str, port: int, identity: str) -> None:
                self.identity = identity
                wire.to_worker.setdefault(identity, Queue())

            def send(self, msg: Message) -> None:
                wire.to_master.put(msg.serialize())

            def recv(self) -> Message:
                return Message.unserialize(wire.to_worker[self.identity].get())

            def close(self, linger: Any = None) -> None:
                pass

        return Client


@dataclass
class Pair:
    """A master and its workers on the one wire."""

    wire: Wire
    master: MasterRunner
    workers: list[WorkerRunner]

    def send_raw(self, worker: WorkerRunner, kind: str, data: Any) -> None:
        """A message from ``worker`` to the master as the wire would carry it (e.g. a resend)."""
        self.wire.to_master.put(Message(kind, data, worker.client_id).serialize())


def settle(seconds: float = 0.05) -> None:
    """Let the runners' greenlets pass the messages on the wire."""
    gevent.sleep(seconds)


@contextlib.contextmanager
def fleet_of(
    workers: int = 1, user_classes: list[type] | None = None, worker_events: Events | None = None
) -> Iterator[Pair]:
    """A master and ``workers`` connected workers (see the module docstring), each on its own
    Environment with ``user_classes`` (the workers' with ``worker_events``, if given: one worker
    then); stopped on exit."""
    assert worker_events is None or workers == 1, "an Events object belongs to one environment"
    classes = list(user_classes or [])
    wire = Wire()
    saved = rpc.Server, rpc.Client
    rpc.Server, rpc.Client = wire.server_class(), wire.client_class()  # type: ignore[misc]
    runners: list[Any] = []
    try:
        master = Environment(user_classes=classes).create_master_runner("*", 0)
        runners.append(master)
        nodes = []
        for _ in range(workers):
            environment = Environment(user_classes=classes, events=worker_events)
            node = environment.create_worker_runner("127.0.0.1", 0)
            runners.append(node)
            nodes.append(node)
        settle()
        assert master.worker_count == workers, "the fake channel's handshake did not complete"
        yield Pair(wire, master, nodes)
    finally:
        rpc.Server, rpc.Client = saved  # type: ignore[misc]
        for runner in reversed(runners):  # nothing of theirs left on the hub for the next test
            runner.user_greenlets.kill(block=True)
            runner.greenlet.kill(block=True)
