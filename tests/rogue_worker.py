"""A rogue worker: connects to a Locust master's port with Locust's own RPC classes, as a worker
would, and prints every message it is sent (``type<TAB>repr(data)``, one a line) until the first
``spawn``, then leaves. Run as ``python -m tests.rogue_worker PORT`` (a process of its own: Locust
monkey-patches whatever imports it)."""

from __future__ import annotations

from locust import __version__
from locust.rpc import Message, zmqrpc

import secrets
import sys


def main(port: int) -> None:
    identity = f"rogue_{secrets.token_hex(4)}"
    client = zmqrpc.Client("127.0.0.1", port, identity)
    client.send(Message("client_ready", __version__, identity))
    print("connected", flush=True)
    while True:
        msg = client.recv()
        print(f"{msg.type}\t{msg.data!r}", flush=True)
        if msg.type == "spawn":  # leave: the run goes on with the real workers
            client.send(Message("client_stopped", None, identity))
            break
    client.close(linger=0)


if __name__ == "__main__":
    main(int(sys.argv[1]))
