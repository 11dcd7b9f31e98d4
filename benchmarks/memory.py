"""Memory of a long distributed run: does the master or a worker grow with the request count?

    .venv/bin/python benchmarks/memory.py --duration 90 --users 32

Starts the simulator (tiny, fast responses so requests pile up quickly), a master with the
Prometheus exporter and one worker, samples both processes' RSS every few seconds, and
prints RSS against the number of requests finished so far. Records go to disk as they
finish and live aggregates are fixed-size histograms, so RSS should level off after
warm-up while the request count keeps climbing.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=90, help="seconds of load")
    parser.add_argument("--users", type=int, default=32)
    parser.add_argument("--every", type=float, default=5.0, help="sampling interval (s)")
    parser.add_argument("--out", default="benchmarks/results/memory.json")
    args = parser.parse_args()
    sim = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llm_locust.sim",
            "--port",
            "0",
            "--ttft-ms",
            "2",
            "--tpot-ms",
            "1",
            "--output-tokens",
            "8",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    url = sim.stdout.readline().split()[-1]  # type: ignore[union-attr]
    results = Path(tempfile.mkdtemp()) / "r"
    port, mport = free_port(), free_port()
    common = [str(BIN / "locust"), "-f", str(REPO / "locustfiles/chat.py"), "--host", url]
    light = ["--prompt-tokens", "16", "--max-tokens", "8"]
    master = subprocess.Popen(
        [
            *common,
            "--master",
            "--master-bind-host",
            "127.0.0.1",
            "--master-bind-port",
            str(port),
            "--headless",
            "--expect-workers",
            "1",
            "-u",
            str(args.users),
            "-r",
            str(args.users),
            "-t",
            f"{args.duration}s",
            "--results-dir",
            str(results),
            "--prometheus-port",
            str(mport),
            "--only-summary",
            *light,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    worker = subprocess.Popen(
        [*common, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port), *light],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    samples = []
    try:
        t0 = time.time()
        while master.poll() is None:
            time.sleep(args.every)
            done = _lines(results / "requests.jsonl")
            try:
                rss = [psutil.Process(p.pid).memory_info().rss / 2**20 for p in (master, worker)]
            except psutil.NoSuchProcess:
                break
            samples.append(
                {
                    "t": round(time.time() - t0, 1),
                    "requests": done,
                    "master_rss_mib": round(rss[0], 1),
                    "worker_rss_mib": round(rss[1], 1),
                }
            )
            print(json.dumps(samples[-1]), flush=True)
    finally:
        for p in (master, worker, sim):
            if p.poll() is None:
                p.terminate()
            p.wait(30)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"args": vars(args), "samples": samples}, indent=1) + "\n")
    return 0


def _lines(path: Path) -> int:
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except FileNotFoundError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
