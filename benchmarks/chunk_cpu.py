"""CPU per token of the client's pure decode path, old and new alternating (issue 29 §1).

``StreamEvents.feed`` (SSE framing, JSON, the chunk onto its record) over 200-token streams
framed as the yardstick server frames them, one event per read and four (a busy reader's
coalesced reads). Process CPU time, not wall time, so a busy host changes it little; each
ref runs in its own interpreter (``git archive`` of the ref first on ``PYTHONPATH``).

    .venv/bin/python benchmarks/chunk_cpu.py --code main --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_common import export

__all__ = ["main"]

PROBE = r"""
import json, sys, time
from llm_locust.protocol.stream import Stream, StreamEvents
from llm_locust.record import RequestRecord

def event(i, last=False):
    delta = {} if last else {"content": f" w{i}"}
    obj = {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1796179316,
           "model": "mock-llm", "choices": [{"index": 0, "delta": delta, "logprobs": None,
           "finish_reason": "stop" if last else None}]}
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"

events = [event(i) for i in range(200)] + [event(200, True), b"data: [DONE]\n\n"]
out = {}
for group in (1, 4):
    reads = [b"".join(events[i : i + group]) for i in range(0, len(events), group)]
    best = float("inf")
    for _ in range(7):
        start = time.process_time()
        for _ in range(100):
            record = RequestRecord(request_id="x", endpoint="chat", wall_start=0.0, t_sent=0.5)
            stream = StreamEvents(record, Stream())
            for read in reads:
                if stream.feed(read, 1.0):
                    break
            stream.end(2.0)
            assert len(record.chunk_times) == 200
        best = min(best, time.process_time() - start)
    out[group] = 1e6 * best / (100 * 200)
print(json.dumps(out))
"""


def probe(code: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, cwd=code, capture_output=True, text=True, check=True
    )
    return {f"{k} event(s)/read": v for k, v in json.loads(proc.stdout).items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", default="main", help="the git ref to compare with the working tree")
    parser.add_argument("--rounds", type=int, default=2, help="old/new pairs, alternating")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="chunk-cpu-") as tmp:
        refs = {args.code: export(args.code, Path(tmp) / "old"), "working tree": export(".", Path(tmp))}
        for round_ in range(args.rounds):
            for name, code in refs.items():
                figures = ", ".join(f"{k} {v:.2f} us" for k, v in probe(code).items())
                print(f"round {round_ + 1} {name}: CPU per chunk {figures}", flush=True)
    print("load average:", Path("/proc/loadavg").read_text().split()[0])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
