"""CPU per request of the client's per-request path, two refs alternating (issue 23, issue 29 §1).

Headless Locust in one process (``locustfiles/chat.py``, the local runner, ``-u`` users) with
the network exchange replaced by a fake that yields to the hub once and fills the record as a
200-token stream would (chunk times, first visible token, finish reason, usage), so everything
else a request costs runs as in a real run: the user's task, the workload's next request, the
body, the record, the client's send and its settling, Locust's statistics, the row made in the
event loop's idle time (fold), the bus, ``requests.jsonl``, the failure tally and the live
aggregates. Not in it: the socket, llhttp and the SSE decode (``chunk_cpu.py`` measures that
per chunk). The users keep the process busy, so process CPU / requests is the per-request cost
whatever else the host runs; a busy host still moves it (a process given less of a core runs
with colder caches: 10-30 % between runs at load 5-15), so refs alternate, round after round,
and the medians are compared.

    .venv/bin/python benchmarks/request_cpu.py --code old=28a63e6 --code new=. --rounds 3
    .venv/bin/python benchmarks/request_cpu.py --code new=. --profile /tmp/prof   # py-spy, raw
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_common import export

__all__ = ["main"]

PROBE = r"""
import gc, json, os, subprocess, sys, time
import locust
import gevent
try:
    from llm_locust.client import streaming as client_module
except ImportError:  # before the client package (28a63e6 and older)
    import llm_locust.client as client_module

TOKENS = int(os.environ["RC_TOKENS"])
OFFSETS = [0.1 + 0.01 * i for i in range(TOKENS)]
USAGE = {"prompt_tokens": 128, "completion_tokens": TOKENS}
done = [0]


def fake_exchange(self, payload, record, stream):
    gevent.sleep(0)  # the user waits for its reply: one switch to the hub and back
    t = record.t_sent
    record.status = 200
    times = [t + o for o in OFFSETS]
    record.chunk_times.extend(times)
    record.t_first_visible = times[0]
    record.visible_chars = 3 * TOKENS
    record.finish_reason = "stop"
    stream.usage = dict(USAGE)
    record.t_end = times[-1] + 0.001
    done[0] += 1


client_module.StreamingClient._exchange = fake_exchange
warmup, window = float(os.environ["RC_WARMUP"]), float(os.environ["RC_WINDOW"])
spy_out, cprofile_out = os.environ.get("RC_PYSPY"), os.environ.get("RC_CPROFILE")


def measure():
    gevent.sleep(warmup)
    if spy_out:  # py-spy samples the window (raw format)
        cmd = [os.environ["RC_PYSPY_BIN"], "record", "--pid", str(os.getpid()), "-d", str(int(window)),
               "-r", "250", "--nonblocking", "--format", "raw", "-o", spy_out]
        subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    profile = None
    if cprofile_out:  # exact call counts (its timings are inflated)
        import cProfile
        profile = cProfile.Profile()
        profile.enable()
    g0 = [s["collections"] for s in gc.get_stats()]
    c0, n0 = time.process_time(), done[0]
    gevent.sleep(window)
    c1, n1 = time.process_time(), done[0]
    g1 = [s["collections"] for s in gc.get_stats()]
    if profile is not None:
        profile.disable()
        profile.dump_stats(cprofile_out)
    with open(os.environ["RC_OUT"], "w") as out:
        json.dump({"cpu_s": c1 - c0, "requests": n1 - n0, "gc": [b - a for a, b in zip(g0, g1)]}, out)


locust.events.test_start.add_listener(lambda **_: gevent.spawn(measure))
from locust.main import main
sys.argv = ["locust", *sys.argv[1:]]
main()
"""


def probe(
    code: Path, args: argparse.Namespace, spy: Path | None = None, cprofile: Path | None = None
) -> dict[str, Any]:
    """One run of ``code``: CPU per request in the window, the requests, the collections."""
    users, tokens, warmup, window = args.users, args.tokens, args.warmup, args.window
    with tempfile.TemporaryDirectory(prefix="request-cpu-") as tmp:
        out = Path(tmp) / "out.json"
        env = {
            **os.environ,
            "RC_PYSPY": str(spy or ""),
            "RC_PYSPY_BIN": shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy"),
            "RC_CPROFILE": str(cprofile or ""),
            "PYTHONPATH": str(code),
            "RC_TOKENS": str(tokens),
            "RC_WARMUP": str(warmup),
            "RC_WINDOW": str(window),
            "RC_OUT": str(out),
        }
        cmd = [
            sys.executable,
            "-c",
            PROBE,
            "-f",
            str(code / "locustfiles/chat.py"),
            "--headless",
            "-u",
            str(users),
            "-r",
            str(users),
            "-t",
            f"{int(warmup + window + 2)}s",
            "-H",
            "http://127.0.0.1:9",  # never connected to: the exchange is faked
            "--skip-preflight",
            "--model",
            "mock-llm",
            "--prompt-tokens",
            "128",
            "--output-tokens",
            str(tokens),
            "--tokenizer",
            "none",
            "--results-dir",
            str(Path(tmp) / "results"),
            "--only-summary",
            "--loglevel",
            "WARNING",
        ]
        proc = subprocess.run(cmd, env=env, cwd=code, capture_output=True, text=True, timeout=600)
        if not out.exists():
            raise RuntimeError(f"probe failed ({proc.returncode}): {proc.stderr[-3000:]}")
        result = json.loads(out.read_text())
    return {
        "cpu_ms_per_request": 1e3 * result["cpu_s"] / max(result["requests"], 1),
        "requests": result["requests"],
        "cpu_s": result["cpu_s"],
        "gc_collections": result["gc"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--code",
        action="append",
        default=[],
        help="NAME=GITREF (. = the working tree), repeatable; default: main and the working tree",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each ref once per round in turn")
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--tokens", type=int, default=200, help="chunks per faked stream")
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--window", type=float, default=8.0, help="seconds measured")
    parser.add_argument("--profile", help="py-spy raw profiles of each run's window into this directory")
    parser.add_argument(
        "--cprofile", help="cProfile of each run's window (exact call counts) into this directory"
    )
    args = parser.parse_args(argv)
    specs = args.code or ["main=main", "new=."]
    for directory in (args.profile, args.cprofile):
        if directory:
            Path(directory).mkdir(parents=True, exist_ok=True)
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="request-cpu-code-") as tmp:
        refs = {}
        for spec in specs:
            name, _, ref = spec.partition("=")
            refs[name] = export(ref or name, Path(tmp) / name)
        for round_ in range(args.rounds):
            for name, code in refs.items():
                tag = f"{name}-{round_ + 1}"
                spy = Path(args.profile) / f"{tag}.txt" if args.profile else None
                cprof = Path(args.cprofile) / f"{tag}.prof" if args.cprofile else None
                r = probe(code, args, spy, cprof)
                results.setdefault(name, []).append(r["cpu_ms_per_request"])
                print(
                    f"round {round_ + 1} {name}: {r['cpu_ms_per_request']:.3f} ms CPU per request "
                    f"({r['requests']} requests, {r['cpu_s']:.2f} s CPU, collections {r['gc_collections']}; "
                    f"load {Path('/proc/loadavg').read_text().split()[0]})",
                    flush=True,
                )
    for name, values in results.items():
        print(
            f"{name}: median {statistics.median(values):.3f} ms, best {min(values):.3f} ms CPU per request "
            f"({args.users} users, {args.tokens}-chunk records)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
