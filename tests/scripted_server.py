"""A scripted HTTP peer for client edge cases the simulator does not produce on purpose.

    python tests/scripted_server.py   -> prints "port N", serves until killed

The request path picks the script: ``/<scenario>/v1/chat/completions``. Each script is a
list of (bytes to send, seconds to wait after) followed by a clean close or an abort.
Not a product feature: the bundled simulator is the realistic server; this peer only
produces byte-level oddities (HTML bodies, torn streams, events split across writes).
"""

from __future__ import annotations

import json
import socket
import socketserver
import struct
import sys
import time


def sse(obj: object) -> bytes:
    return b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n"


def delta(text: str) -> dict:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}


def chunked(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def plain(status: int, reason: str, body: bytes, content_type: str = "application/json") -> bytes:
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\n"
    head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    return head.encode() + body


HEAD_SSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
USAGE = {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}}


def body_stream(events: list[bytes], end: bytes = b"0\r\n\r\n") -> list[tuple[bytes, float]]:
    return [(HEAD_SSE, 0.0)] + [(chunked(e), 0.02) for e in events] + [(end, 0.0)]


SCENARIOS: dict[str, list[tuple[bytes, float]] | str] = {
    "ok": body_stream(
        [
            sse({"choices": [{"delta": {"role": "assistant", "content": ""}}]}),
            sse(delta("a")),
            sse(delta("b")),
            sse(delta("c")),
            sse(USAGE),
            sse(b"[DONE]"),
        ]
    ),
    # one event delivered in three TCP writes, 50 ms apart, and CRLF line endings
    "split": [
        (HEAD_SSE, 0.0),
        (chunked(b'data: {"choices":[{"delta":'), 0.05),
        (chunked(b'{"content":"x"}}]}\r'), 0.05),
        (chunked(b"\n\r\n"), 0.05),
        (chunked(b"data: " + json.dumps(delta("y")).encode() + b"\r\n\r\n"), 0.0),
        (b"0\r\n\r\n", 0.0),
    ],
    "no_usage_no_done": body_stream([sse(delta("a")), sse(delta("b"))]),
    "html": [(plain(200, "OK", b"<html>oops</html>\n\n\n", "text/html"), 0.0)],
    "unauthorized": [(plain(401, "Unauthorized", b'{"error": {"message": "invalid api key xx12345"}}'), 0.0)],
    "broken": "abort",
    "malformed": body_stream([sse(delta("a")), b'data: {"id": broken\n\n', sse(delta("b"))]),
    "stream_error": body_stream([sse(delta("a")), sse({"error": {"message": "engine died"}})]),
    "empty": body_stream([sse({"choices": [{"delta": {"role": "assistant"}}]}), sse(b"[DONE]")]),
}


class Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        data = b""
        while b"\r\n\r\n" not in data:
            more = sock.recv(65536)
            if not more:
                return
            data += more
        head, _, rest = data.partition(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            ),
            0,
        )
        while len(rest) < length:
            rest += sock.recv(65536)
        scenario = head.split(b" ")[1].decode().strip("/").split("/")[0]
        script = SCENARIOS.get(scenario, SCENARIOS["ok"])
        if script == "abort":
            sock.sendall(HEAD_SSE + chunked(sse(delta("a"))))
            time.sleep(0.05)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()  # RST, mid-stream
            return
        for payload, wait in script:  # type: ignore[union-attr]
            sock.sendall(payload)
            if wait:
                time.sleep(wait)
        sock.shutdown(socket.SHUT_WR)


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


if __name__ == "__main__":
    with Server(("127.0.0.1", 0), Handler) as server:
        print(f"port {server.server_address[1]}", flush=True)
        sys.stdout.flush()
        server.serve_forever()
