"""A scripted HTTP peer for client edge cases the simulator does not produce on purpose.

    python tests/scripted_server.py   -> prints "port N", serves until killed
    with running_peer() as base: ...  -> the same as a subprocess, base = "http://127.0.0.1:N"

The request path picks the script: ``/<scenario>/v1/chat/completions``. Each script is a
list of (bytes to send, seconds to wait after) followed by a clean close or an abort.
``/<scenario>/v1/models`` and ``/<scenario>/tokenize`` (or ``/extras/tokenize``) answer
from :data:`MODELS` and :func:`tokenize_reply`, so one peer also plays the servers that
preflight and ``--tokenizer server`` meet; ``GET /<scenario>/count`` says how many
completions that scenario was asked for, over how many connections, and ``GET
/<scenario>/headers`` the header lines of its last completion request. Scenario ``strict``
answers 404 for a model its list does not have; ``keepalive`` serves one request after the
other on one connection; ``single_slot`` plays a server with one slot (llama.cpp with
``--parallel 1`` as seen): five tokens 50 ms apart, every stream in flight cut (RST) as soon as
a second one arrives, so one user is served and two are not. Not a product feature: the bundled simulator is
the realistic server; this peer only produces byte-level and protocol oddities (HTML
bodies, torn streams, events split across writes, wrong shapes, other servers' dialects).
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import socketserver
import struct
import subprocess
import sys
import threading
import time
import zlib
from collections import Counter
from collections.abc import Iterator


def sse(obj: object) -> bytes:
    return b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n"


def delta(text: str, finish: str | None = None) -> dict:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}


def chunked(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def plain(status: int, reason: str, body: bytes, content_type: str = "application/json") -> bytes:
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\n"
    head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    return head.encode() + body


HEAD_SSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
HEAD_CLOSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
USAGE = {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}}
USAGE_5 = {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12}}
ROLE = sse({"choices": [{"delta": {"role": "assistant", "content": ""}}]})
ABC = [sse(delta("a")), sse(delta("b")), sse(delta("c", "stop"))]
HOLD = -1.0  # a script's wait: send nothing more until the client hangs up (bounded: 60 s)
NOT_UTF8 = b'data: {"choices": [{"delta": {"content": "\xff"}}]}\n\n'
BAD_CHUNK = b"zz\r\nnot a chunk size\r\n"  # broken chunked encoding


def body_stream(events: list[bytes], end: bytes = b"0\r\n\r\n") -> list[tuple[bytes, float]]:
    return [(HEAD_SSE, 0.0)] + [(chunked(e), 0.02) for e in events] + [(end, 0.0)]


def compressed(coding: str, events: list[bytes]) -> list[tuple[bytes, float]]:
    """A stream gzip-encoded (never asked for), each event flushed in its own chunk, 20 ms apart;
    or, for another coding, the head that names it (the body is never decoded)."""
    head = HEAD_SSE.replace(b"\r\n\r\n", f"\r\nContent-Encoding: {coding}\r\n\r\n".encode())
    if coding != "gzip":
        return [(head + chunked(b"\x1b\x00\x00\x00"), 0.0), (b"0\r\n\r\n", 0.0)]
    packer = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)
    parts = [packer.compress(e) + packer.flush(zlib.Z_SYNC_FLUSH) for e in events] + [packer.flush()]
    return [(head, 0.0)] + [(chunked(p), 0.02) for p in parts] + [(b"0\r\n\r\n", 0.0)]


def usage(completion: object, prompt: object = 7) -> bytes:
    return sse({"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion}})


def think(text: str) -> bytes:
    return sse({"choices": [{"index": 0, "delta": {"reasoning_content": text}, "finish_reason": None}]})


#: Two reasoning chunks, then an answer whose first content chunk carries four tokens.
REASONING = [ROLE, think("hmm"), think(" so"), sse(delta("one two three four")), sse(delta(" five"))]
REASONING += [sse(delta(" six", "stop"))]
REASONING_USAGE = {
    "prompt_tokens": 7,
    "completion_tokens": 8,
    "completion_tokens_details": {"reasoning_tokens": 2},
}
REASONING_USAGE["prompt_tokens_details"] = {"cached_tokens": 5}  # type: ignore[assignment]

SCENARIOS: dict[str, list[tuple[bytes, float]] | str] = {
    "ok": body_stream([ROLE, *ABC, sse(USAGE), sse(b"[DONE]")]),
    # one event delivered in three TCP writes, 50 ms apart, and CRLF line endings
    "split": [
        (HEAD_SSE, 0.0),
        (chunked(b'data: {"choices":[{"delta":'), 0.05),
        (chunked(b'{"content":"x"}}]}\r'), 0.05),
        (chunked(b"\n\r\n"), 0.05),
        (chunked(b"data: " + json.dumps(delta("y", "stop")).encode() + b"\r\n\r\n"), 0.0),
        (b"0\r\n\r\n", 0.0),
    ],
    "no_usage": body_stream([*ABC, sse(b"[DONE]")]),
    "reasoning": body_stream([*REASONING, sse({"choices": [], "usage": REASONING_USAGE}), sse(b"[DONE]")]),
    "reasoning_no_usage": body_stream([*REASONING, sse(b"[DONE]")]),
    # 3 tokens then a clean end: no finish_reason, no [DONE] (chunked, and close-delimited)
    "cut_chunked": body_stream([sse(delta("a")), sse(delta("b")), sse(delta("c"))]),
    "cut_close": [(HEAD_CLOSE, 0.0), (sse(delta("a")) + sse(delta("b")), 0.02), (sse(delta("c")), 0.0)],
    # 41 tokens, [DONE] without any finish_reason, then the body ends without its last chunk
    "cut_41": [(HEAD_SSE, 0.0)]
    + [(chunked(sse(delta(f"t{i} "))), 0.002) for i in range(41)]
    + [(chunked(sse(b"[DONE]")), 0.0)],
    "ttft_41": [(HEAD_SSE, 0.02)]  # cut_41 with its first token 20 ms after the headers
    + [(chunked(sse(delta(f"t{i} "))), 0.002) for i in range(41)]
    + [(chunked(sse(b"[DONE]")), 0.0)],
    "early_stop": body_stream([sse(delta("a")), sse(delta("b", "stop")), usage(2), sse(b"[DONE]")]),
    "usage_conflict": body_stream(
        [*(sse(delta(w)) for w in "abcd"), sse(delta("e", "length")), usage(50), sse(b"[DONE]")]
    ),
    # valid JSON of the wrong shape, and bytes that are not UTF-8
    "usage_lots": body_stream([*ABC, sse({"choices": [], "usage": "lots"}), sse(b"[DONE]")]),
    "tokens_abc": body_stream([*ABC, usage("abc"), sse(b"[DONE]")]),
    "choices_null": body_stream([sse(delta("a")), sse({"choices": [None]}), sse(b"[DONE]")]),
    "delta_string": body_stream([sse(delta("a")), sse({"choices": [{"delta": "b"}]}), sse(b"[DONE]")]),
    "content_number": body_stream([sse(delta("a")), sse({"choices": [{"delta": {"content": 5}}]})]),
    "not_utf8": body_stream([sse(delta("a")), NOT_UTF8]),
    # one broken chunked encoding: in the same read as the head, or after a token
    "bad_chunk_first": [(HEAD_SSE + chunked(sse(delta("a"))) + BAD_CHUNK, 0.0)],
    "bad_chunk_later": [(HEAD_SSE, 0.05), (chunked(sse(delta("a"))), 0.05), (BAD_CHUNK, 0.0)],
    # a token, and in the same write (so the same read) bad bytes: broken chunked encoding, or
    # an event that is not UTF-8
    "bad_chunk_with_token": [(HEAD_SSE, 0.05), (chunked(sse(delta("a"))) + BAD_CHUNK, 0.0)],
    "not_utf8_with_token": [
        (HEAD_SSE, 0.05),
        (chunked(sse(delta("a")) + NOT_UTF8), 0.0),
        (b"0\r\n\r\n", 0.0),
    ],
    # a body compressed though the request asked for no coding
    "gzip": compressed("gzip", [ROLE, *ABC, sse(USAGE), sse(b"[DONE]")]),
    "brotli": compressed("br", []),
    # Content-Encoding sent twice (a proxy adding its own): the codings stacked, "gzip, gzip"
    "gzip_twice": [
        (HEAD_SSE.replace(b"\r\n\r\n", b"\r\nContent-Encoding: gzip\r\nContent-Encoding: gzip\r\n\r\n"), 0.0),
        (chunked(b"\x1f\x8b"), 0.0),
        (b"0\r\n\r\n", 0.0),
    ],
    # llama.cpp reports an error inside a stream as an ``error:`` field
    "llama_error": body_stream([b'error: {"code": 400, "message": "the request exceeds the context"}\n\n']),
    "context_400": [
        (plain(400, "Bad Request", b'{"error": {"message": "maximum context length exceeded"}}'), 0.0)
    ],
    "html": [(plain(200, "OK", b"<html>oops</html>\n\n\n", "text/html"), 0.0)],
    # a JSON body, and a redirect to a login page, where a stream was asked for
    "json_200": [(plain(200, "OK", b'{"object": "list", "data": []}'), 0.0)],
    "redirect": [
        (
            b"HTTP/1.1 301 Moved Permanently\r\nLocation: https://login.example.test/sso?next=%2Fv1\r\n"
            b"Content-Type: text/html\r\nContent-Length: 12\r\nConnection: close\r\n\r\n<a>moved</a>",
            0.0,
        )
    ],
    # Location twice (a login proxy in front of another): both named
    "redirect_twice": [
        (
            b"HTTP/1.1 302 Found\r\nLocation: https://a.example.test/sso\r\nLocation: https://b.example.test/\r\n"
            b"Content-Length: 0\r\nConnection: close\r\n\r\n",
            0.0,
        )
    ],
    # Retry-After twice (a proxy adding its own): the client's header map holds both
    "retry_twice": [
        (
            plain(429, "Too Many Requests", b'{"error": {"message": "slow down"}}').replace(
                b"\r\n\r\n", b"\r\nRetry-After: 3\r\nRetry-After: 7\r\n\r\n", 1
            ),
            0.0,
        )
    ],
    "unauthorized": [(plain(401, "Unauthorized", b'{"error": {"message": "invalid api key xx12345"}}'), 0.0)],
    "broken": "abort",
    "malformed": body_stream([sse(delta("a")), b'data: {"id": broken\n\n', sse(delta("b"))]),
    "stream_error": body_stream([sse(delta("a")), sse({"error": {"message": "engine died"}})]),
    "empty": body_stream([sse({"choices": [{"delta": {"role": "assistant"}, "finish_reason": "stop"}]})]),
    "silent": "silent",
    # five tokens: one alone, three in one write (one read: two gaps of 0 s), one alone; 20 ms apart
    "coalesced": [
        (HEAD_SSE + chunked(ROLE), 0.02),
        (chunked(sse(delta("a"))), 0.02),
        (chunked(sse(delta("b")) + sse(delta("c")) + sse(delta("d"))), 0.02),
        (chunked(sse(delta("e", "stop")) + sse(USAGE_5) + sse(b"[DONE]")), 0.0),
        (b"0\r\n\r\n", 0.0),
    ],
    # a long answer, one token every 200 ms: a client stopped mid-stream
    "slow": [(HEAD_SSE, 0.0)] + [(chunked(sse(delta("t"))), 0.2) for _ in range(50)] + [(b"0\r\n\r\n", 0.0)],
    # a complete stream, [DONE] included, whose HTTP body never ends (HOLD: the server waits
    # for the client to hang up)
    "done_open": [(HEAD_SSE, 0.0)]
    + [(chunked(e), 0.02) for e in [*ABC, sse(USAGE)]]
    + [(chunked(sse(b"[DONE]")), HOLD)],
    # two tokens, then nothing for 10 s (the client's timeout ends it first)
    "stall": [(HEAD_SSE, 0.0), (chunked(sse(delta("a"))), 0.02), (chunked(sse(delta("b"))), 10.0)],
    # max_tokens ignored: 12 tokens whatever was asked, and a usage that says so
    "long_answer": body_stream(
        [*(sse(delta(f"w{i} ")) for i in range(11)), sse(delta("end", "stop")), usage(12), sse(b"[DONE]")]
    ),
}

#: Scenarios busy for a while after their first request: (path suffix, status, Retry-After
#: seconds, busy for seconds). While busy they answer the status with Retry-After, then as
#: "ok" does.
BUSY: dict[str, tuple[str, int, int, float]] = {
    "busy_429": ("/chat/completions", 429, 2, 2.0),  # the test request, rate-limited for 2 s
    "busy_503": ("/v1/models", 503, 1, 1.0),  # the model list, while the server starts
    "always_429": ("/chat/completions", 429, 1, 3600.0),  # asks for 1 s, but is never ready
}
_BUSY_SINCE: dict[str, float] = {}

#: Scenarios served on a kept-alive connection, one request after the other: "ok" ([DONE], then
#: the body's last chunk 20 ms later).
KEEP_ALIVE = {"keepalive": SCENARIOS["ok"]}


def big_event(size: int) -> list[tuple[bytes, float]]:
    """Scenario ``big<N>k``: one content event of N KiB of text, finish_reason in it, sent in
    one write (the client reads it in pieces of its read size)."""
    event = sse(delta("x" * size, "stop"))
    return [(HEAD_SSE + chunked(event) + chunked(sse(b"[DONE]")) + b"0\r\n\r\n", 0.0)]


#: ``GET /<scenario>/v1/models``: a body, or ``None`` to never answer.
MODELS: dict[str, bytes | None] = {
    "default": json.dumps({"data": [{"id": "m", "max_model_len": 4096}, {"id": "m2"}]}).encode(),
    "nolen": json.dumps({"data": [{"id": "m"}]}).encode(),
    "silent": None,  # and its chat completions never answer either
    "models_silent": None,  # chat completions answer
}


def tokenize_reply(scenario: str, path: str, body: dict) -> dict | None:
    """Three servers' tokenize dialects; ``None`` for a 404 (wrong route or field)."""
    if scenario == "llamacpp_python":  # llama-cpp-python: /extras/tokenize {"input"}, BOS included
        if not path.endswith("/extras/tokenize") or "input" not in body:
            return None
        return {"tokens": [1, *range(len(_pieces(body["input"])))]}
    if scenario == "llamacpp":  # llama.cpp: /tokenize {"content", "add_special"}; other fields: no tokens
        if not path.endswith("/tokenize") or path.endswith("/extras/tokenize"):
            return None
        if "content" not in body:
            return {"tokens": []}
        bos = [1] if body.get("add_special", True) else []
        return {"tokens": bos + list(range(len(_pieces(body["content"]))))}
    if "prompt" not in body:  # vLLM: /tokenize {"prompt"}
        return None
    return {"count": len(_pieces(body["prompt"])), "max_model_len": 4096}


def _pieces(text: str) -> list[str]:
    return re.findall(r"\w+|[^\w\s]", text)


_REQUESTS: Counter[str] = Counter()
_CONNECTIONS: Counter[str] = Counter()
_HEADERS: dict[str, list[str]] = {}  # scenario -> its last completion request's header lines
_LOCK = threading.Lock()
_SLOT: list[threading.Event] = []  # single_slot: the streams in flight


def _json_reply(sock: socket.socket, status: int, obj: object) -> None:
    reason = {200: "OK", 404: "Not Found"}[status]
    sock.sendall(plain(status, reason, json.dumps(obj).encode()))


class Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        first = True
        while self._serve(sock, first):  # a KEEP_ALIVE scenario: the next request, same connection
            first = False

    def _serve(self, sock: socket.socket, first: bool) -> bool:
        data = b""
        while b"\r\n\r\n" not in data:
            more = sock.recv(65536)
            if not more:
                return False
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
        path = head.split(b" ")[1].decode()
        scenario = path.strip("/").split("/")[0]
        if self._busy(sock, scenario, path):
            return False
        if path.endswith("/v1/models"):
            self._models(sock, scenario)
        elif path.endswith("tokenize"):
            reply = tokenize_reply(scenario, path, json.loads(rest or b"{}"))
            _json_reply(sock, 404 if reply is None else 200, reply or {"detail": "Not Found"})
        elif path.endswith("/count"):
            _json_reply(sock, 200, {"requests": _REQUESTS[scenario], "connections": _CONNECTIONS[scenario]})
        elif path.endswith("/headers"):
            _json_reply(sock, 200, {"headers": _HEADERS.get(scenario, [])})
        else:
            with _LOCK:
                _HEADERS[scenario] = head.decode("latin-1").split("\r\n")[1:]
                _REQUESTS[scenario] += 1
                _CONNECTIONS[scenario] += first
            if scenario == "strict" and json.loads(rest or b"{}").get("model") not in ("m", "m2"):
                _json_reply(sock, 404, {"error": {"message": "The model does not exist."}})
                return False
            if scenario == "single_slot":
                self._single_slot(sock)
                return False
            if scenario in KEEP_ALIVE:
                for payload, wait in KEEP_ALIVE[scenario]:
                    sock.sendall(payload)
                    time.sleep(wait)
                return True
            big = re.fullmatch(r"big(\d+)k", scenario)
            self._script(
                sock, big_event(int(big[1]) * 1024) if big else SCENARIOS.get(scenario, SCENARIOS["ok"])
            )
        return False

    def _busy(self, sock: socket.socket, scenario: str, path: str) -> bool:
        """A BUSY scenario's refusal with Retry-After, while it is busy (counted as a request)."""
        suffix, status, seconds, busy_for = BUSY.get(scenario, ("-", 0, 0, 0.0))
        if not path.endswith(suffix):
            return False
        with _LOCK:
            since = _BUSY_SINCE.setdefault(scenario, time.monotonic())
            if time.monotonic() - since >= busy_for:
                return False
            _REQUESTS[scenario] += 1
        reason = {429: "Too Many Requests", 503: "Service Unavailable"}[status]
        body = json.dumps({"error": {"message": "busy, come back later"}}).encode()
        reply = plain(status, reason, body).replace(
            b"\r\n\r\n", f"\r\nRetry-After: {seconds}\r\n\r\n".encode(), 1
        )
        sock.sendall(reply)
        return True

    def _single_slot(self, sock: socket.socket) -> None:
        cut = threading.Event()
        with _LOCK:
            for other in _SLOT:
                other.set()  # a second stream: every one in flight is cut
            if _SLOT:
                cut.set()
            _SLOT.append(cut)
        try:
            sock.sendall(HEAD_SSE)
            for i in range(5):
                if cut.wait(0.05):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    sock.close()  # RST, mid-stream
                    return
                sock.sendall(chunked(sse(delta(f"t{i} ", "stop" if i == 4 else None))))
            sock.sendall(chunked(usage(5)) + chunked(sse(b"[DONE]")) + b"0\r\n\r\n")
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        finally:
            with _LOCK:
                _SLOT.remove(cut)

    def _models(self, sock: socket.socket, scenario: str) -> None:
        body = MODELS.get(scenario, MODELS["default"])
        if body is None:
            _wait_for_close(sock)
            return
        sock.sendall(plain(200, "OK", body))

    def _script(self, sock: socket.socket, script: list[tuple[bytes, float]] | str) -> None:
        if script == "silent":
            _wait_for_close(sock)
            return
        if script == "abort":
            sock.sendall(HEAD_SSE + chunked(sse(delta("a"))))
            time.sleep(0.05)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()  # RST, mid-stream
            return
        try:
            for payload, wait in script:  # type: ignore[union-attr]
                sock.sendall(payload)
                if wait == HOLD:
                    _wait_for_close(sock)
                    return
                if wait:
                    time.sleep(wait)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the client hung up first (it stops reading at a bad chunk)


def _wait_for_close(sock: socket.socket) -> None:
    """Say nothing until the client gives up (bounded: 60 s)."""
    sock.settimeout(60)
    try:
        while sock.recv(65536):
            pass
    except OSError:
        pass


@contextlib.contextmanager
def running_peer() -> Iterator[str]:
    """This module as a real server process (its own sockets); yields its base URL."""
    proc = subprocess.Popen([sys.executable, __file__], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        yield f"http://127.0.0.1:{int(line.split()[1])}"
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    # 50 clients connect at once (tests/unit/client/test_reader.py): with socketserver's backlog of 5 a
    # busy machine dropped SYNs, and a retried connect outlived the client's 5 s timeout
    request_queue_size = 128


if __name__ == "__main__":
    with Server(("127.0.0.1", 0), Handler) as server:
        print(f"port {server.server_address[1]}", flush=True)
        sys.stdout.flush()
        server.serve_forever()
