"""What a kernel-stamped read costs against a plain one (issue 29 §1), apart from everything else.

One TCP connection over loopback in this process; each round sends one 200-byte chunk (a chat
chunk's size) and reads it back, either with ``recv`` (the loop's own time) or through
:func:`llm_locust.client.stamps.kernel_stamped` (``recvmsg`` with its ancillary buffer, the
stamp unpacked and checked), and with a bare ``recvmsg`` (the call without a stamp) to tell the
call's cost from the stamp's. The send is the same in both, so the difference per round is the
stamped read's own cost. Process CPU time, best of ``--repeat`` blocks, the two kinds
alternating block by block so a busy host weighs on both alike.

    .venv/bin/python benchmarks/read_cost.py --rounds 20000 --repeat 9
"""

from __future__ import annotations

import argparse
import json
import socket
import time
from collections.abc import Callable
from pathlib import Path

from llm_locust.client.stamps import kernel_stamped

__all__ = ["main"]

CHUNK = b"x" * 200


def _pair() -> tuple[socket.socket, socket.socket]:
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname())
    peer, _ = server.accept()
    server.close()
    for sock in (client, peer):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return client, peer


def _block(send: Callable[[bytes], int], read: Callable[[], bytes], rounds: int) -> float:
    """CPU seconds per round of one send and one read."""
    start = time.process_time()
    for _ in range(rounds):
        send(CHUNK)
        got = read()
        while len(got) < len(CHUNK):  # loopback delivers at once, but never count on it
            got += read()
    return (time.process_time() - start) / rounds


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--json", default=None, help="also write the result here")
    args = parser.parse_args(argv)
    plain_sock, plain_peer = _pair()
    msg_sock, msg_peer = _pair()
    stamped_sock, stamped_peer = _pair()
    stamped = kernel_stamped(stamped_sock)
    if stamped is None:
        raise SystemExit("read_cost: this platform gives no SO_TIMESTAMPNS")
    recv, recvmsg = plain_sock.recv, msg_sock.recvmsg
    kinds: dict[str, tuple[Callable[[bytes], int], Callable[[], bytes]]] = {
        "recv": (plain_peer.send, lambda: recv(65536)),
        "recvmsg": (msg_peer.send, lambda: recvmsg(65536)[0]),  # the call alone: no stamp asked
        "recvmsg_stamped": (stamped_peer.send, lambda: stamped(65536, 0.0)[0]),
    }
    best = {name: float("inf") for name in kinds}
    for _ in range(args.repeat):
        for name, (send, read) in kinds.items():
            best[name] = min(best[name], _block(send, read, args.rounds))
    out = {f"{name}_us": round(1e6 * cpu, 3) for name, cpu in best.items()}
    out["stamp_cost_us"] = round(out["recvmsg_stamped_us"] - out["recv_us"], 3)
    print(json.dumps(out))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
