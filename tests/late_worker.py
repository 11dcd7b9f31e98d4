"""A worker that connects on cue: it loads Locust's RPC classes, prints ``loaded``, waits for a line
on stdin, then sends ``client_ready`` and a heartbeat a second, and prints the type of every
message the master sends (one a line) until ``quit`` or ``SECONDS`` passed. Run as
``python -m tests.late_worker PORT SECONDS`` (a process of its own: Locust monkey-patches
whatever imports it)."""

from __future__ import annotations

from locust import __version__
from locust.rpc import Message, zmqrpc

import secrets
import sys
import time

import gevent


def main(port: int, seconds: float) -> None:
    identity = f"late_{secrets.token_hex(4)}"
    client = zmqrpc.Client("127.0.0.1", port, identity)
    print("loaded", flush=True)
    sys.stdin.readline()
    client.send(Message("client_ready", __version__, identity))
    print("ready", flush=True)
    state = {"state": "ready", "current_cpu_usage": 0, "current_memory_usage": 0}

    def beat() -> None:
        while True:
            client.send(Message("heartbeat", state, identity))
            gevent.sleep(1.0)

    gevent.spawn(beat)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with gevent.Timeout(max(end - time.monotonic(), 0.01), False):
            msg = client.recv()
            print(msg.type, flush=True)
            if msg.type == "quit":
                break
    client.close(linger=0)


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]))
