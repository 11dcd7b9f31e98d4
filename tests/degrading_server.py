"""A minimal OpenAI-compatible streaming server that slows down at a known rate.

    python tests/degrading_server.py --ttft-ms 40 --ttft-ms-per-min 60 --tokens 8 --tpot-ms 5
        -> prints "llm-locust sim listening on http://127.0.0.1:PORT", serves until killed
    (tests start it with tests.simproc.start_sim(..., command=(python, this file)))

Every response's time to first token is ``ttft_ms + ttft_ms_per_min * minutes since the
server started``, so a soak against it has a known TTFT slope (``ttft_ms_per_min * 10`` ms
per 10 minutes). Not a product feature: the test stand-in until the bundled simulator's
slow degradation (``llm-locust sim --degrade-...``) is on main; then the soak test uses that.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

START = time.monotonic()


def _chunk(payload: dict | str) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    body = f"data: {data}\n\n".encode()
    return b"%x\r\n%s\r\n" % (len(body), body)


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, bytes] | None:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    body = await reader.readexactly(length) if length else b""
    return lines[0], body


async def _serve(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, args: argparse.Namespace
) -> None:
    try:
        while True:
            try:
                request = await _read_request(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            if request is None:
                return
            line, _ = request
            if line.startswith("GET /v1/models"):
                body = json.dumps(
                    {"object": "list", "data": [{"id": "degrading", "max_model_len": 32768}]}
                ).encode()
                head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                head += f"Content-Length: {len(body)}\r\n\r\n"
                writer.write(head.encode() + body)
                await writer.drain()
                continue
            elapsed_min = (time.monotonic() - START) / 60.0
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            await writer.drain()
            await asyncio.sleep((args.ttft_ms + args.ttft_ms_per_min * elapsed_min) / 1000.0)
            for i in range(args.tokens):
                if i:
                    await asyncio.sleep(args.tpot_ms / 1000.0)
                delta = {"choices": [{"index": 0, "delta": {"content": f"w{i} "}, "finish_reason": None}]}
                writer.write(_chunk(delta))
                await writer.drain()
            done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}
            usage = {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": args.tokens}}
            writer.write(_chunk(done) + _chunk(usage) + _chunk("[DONE]") + b"0\r\n\r\n")
            await writer.drain()
    finally:
        writer.close()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--ttft-ms", type=float, default=40.0)
    parser.add_argument("--ttft-ms-per-min", type=float, default=0.0)
    parser.add_argument("--tokens", type=int, default=8)
    parser.add_argument("--tpot-ms", type=float, default=5.0)
    args = parser.parse_args()
    server = await asyncio.start_server(lambda r, w: _serve(r, w, args), args.host, args.port)
    port = server.sockets[0].getsockname()[1]
    print(f"llm-locust sim listening on http://127.0.0.1:{port}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
