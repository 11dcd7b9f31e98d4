"""``llm-locust demo``: the main job, end to end, against the bundled simulator.

Starts ``llm-locust sim`` in engine mode (continuous batching, a KV-cache budget) on a
free loopback port, runs a graded ramp with the ``chat`` profile (lengths from the Azure
2023 conversation trace) and an SLO, prints the summary and the per-stage table, leaves
the results folder, and stops the simulator. The question it answers is the seed's:
how much load does this deployment hold within the SLO?
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["main"]

SIM_ARGS = ["--mode", "engine", "--max-num-seqs", "16", "--kv-cache-tokens", "120000", "--seed", "1"]
DEFAULT_SLO = "success>=99%,ttft_p95<=1s,e2e_p95<=20s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="llm-locust demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--ramp", default="4,16,48", help="user counts of the ramp (default 4,16,48)")
    parser.add_argument("--step-time", default="15s", help="time per step (default 15s)")
    parser.add_argument("--slo", default=DEFAULT_SLO, help="the SLO (default %(default)s)")
    parser.add_argument("--results-dir", default="", help="default: demo-results/<timestamp>")
    args = parser.parse_args(argv)
    results = Path(args.results_dir or f"demo-results/{time.strftime('%Y%m%d-%H%M%S')}")
    sim, url = _start_sim()
    try:
        print(f"llm-locust demo: simulator (engine mode) at {url}; results in {results}", flush=True)
        cmd = [
            sys.executable,
            "-m",
            "llm_locust.cli",
            "run",
            "--host",
            url,
            "--headless",
            "--ramp",
            args.ramp,
            "--step-time",
            args.step_time,
            "--warmup",
            "3s",
            "--workload",
            "chat",
            "--max-tokens",
            "512",
            "--slo",
            args.slo,
            "--results-dir",
            str(results),
            "--only-summary",
            "--loglevel",
            "WARNING",
        ]
        code = subprocess.call(cmd)
    finally:
        sim.terminate()
        sim.wait(10)
    if code in (0, 3):  # 3: the SLO failed at some stage, which is the demo's point
        print(f"llm-locust demo: done. requests.jsonl and summary.json are in {results}/")
        return 0
    return code


def _start_sim() -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, "-m", "llm_locust.sim", "--host", "127.0.0.1", "--port", "0", *SIM_ARGS]
    sim = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    line = sim.stdout.readline() if sim.stdout else ""
    prefix = "llm-locust sim listening on "
    if not line.startswith(prefix):
        sim.kill()
        raise SystemExit(f"llm-locust demo: the simulator did not start: {line.strip()!r}")
    return sim, line[len(prefix) :].strip()


if __name__ == "__main__":
    sys.exit(main())
