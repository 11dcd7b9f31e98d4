"""Memory and time of the end-of-run summary over a synthetic ``requests.jsonl``.

Writes a results folder with ``N`` records (a 4-stage ramp, an SLO with TTFT, TPOT, ITL
and E2E lines, 1 % failures, warm-up and ramp-up records, output lengths uniform in
``--min-tokens``..``--max-tokens`` so every record carries that many ITL gaps) and its
``run.json``, then runs ``llm-locust summarize DIR --no-report`` in a child process,
sampling its RSS every 50 ms: peak RSS, wall time, and the ITL precision and token-arrival
precision the summary states. (``report.html`` is left out: the report reads every row
into memory, ~4 KB a record, see benchmarks/README.md.)

    .venv/bin/python benchmarks/summary_memory.py --records 1000000
    # -> benchmarks/results/summary_memory.json

The summary is the code every run's end uses (``results.finalize.build_summary`` and
``add_analysis`` (time windows, drift, vLLM keys) over ``results.columns.read_columns``);
``summarize`` only adds reading ``run.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import psutil

REPO = Path(__file__).resolve().parent.parent
T0 = 1_700_000_000.0
STAGES = (4, 16, 48, 96)


def run_json(stage_s: float) -> dict[str, Any]:
    stages = [
        {"index": i, "kind": "users", "target": float(u), "start_s": i * stage_s, "duration_s": stage_s,
         "spawn_rate": float(u), "warmup_s": 5.0, "label": f"users={u}"}
        for i, u in enumerate(STAGES)
    ]  # fmt: skip
    levels = {str(i): {"peak_users": u, "target_reached_s": 1.0, "time_at_target_s": stage_s - 1.0}
              for i, u in enumerate(STAGES)}  # fmt: skip
    return {
        "format": 1,
        "start_time": T0,
        "t0": T0,
        "stages": stages,
        "slo": ["success>=99%", "ttft_p95<=1s", "tpot_p99<=60ms", "itl_p99<=100ms", "e2e_p95<=20s"],
        "drain": {"seconds": 30.0, "source": "benchmark"},
        "levels": levels,
        "config": {"role": "master", "target": "synthetic"},
    }


def write_records(path: Path, n: int, args: argparse.Namespace) -> tuple[float, int]:
    """``n`` rows spread evenly over the stages; returns (duration, total gaps)."""
    rng = np.random.default_rng(1)
    stage_s = args.stage_s
    span = stage_s * len(STAGES)
    gaps_total = 0
    block = 10_000
    with open(path, "wb") as f:
        for first in range(0, n, block):
            size = min(block, n - first)
            starts = T0 + (first + np.arange(size)) * span / n
            ttft = rng.lognormal(np.log(0.3), 0.5, size)
            tokens = rng.integers(args.min_tokens, args.max_tokens + 1, size)
            failed = rng.random(size) < 0.01
            lines = []
            for j in range(size):
                k = int(tokens[j])
                itl = np.round(rng.gamma(4.0, 0.005, k - 1), 6)
                gaps_total += k - 1
                e2e = float(ttft[j] + itl.sum())
                stage = min(int((starts[j] - T0) // stage_s), len(STAGES) - 1)
                row = {
                    "request_id": f"w-{first + j}", "start_time": float(starts[j]),
                    "outcome": "http_5xx" if failed[j] else "ok", "message": "", "status": 200,
                    "endpoint": "chat", "ttft": float(ttft[j]), "tpot": (e2e - float(ttft[j])) / (k - 1),
                    "e2e": e2e, "itl": itl.tolist(), "prompt_tokens": 1000, "completion_tokens": k,
                    "token_source": "usage", "prompt_token_source": "usage", "finish_reason": "length",
                    "max_tokens": k, "short_output": False, "usage_conflict": None,
                    "target_input_tokens": 1000, "target_output_tokens": k, "chunks": k, "stage": stage,
                    "warmup": bool((starts[j] - T0) % stage_s < 5.0), "send_lag": None,
                    "intended_offset": None,
                    "session_id": None, "turn": None, "worker": f"w{j % 4}",
                    "rampup": bool((starts[j] - T0) % stage_s < 1.0),
                }  # fmt: skip
                lines.append(orjson.dumps(row))
            f.write(b"\n".join(lines) + b"\n")
    return span, gaps_total


def measure(directory: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "llm_locust.cli", "summarize", str(directory), "--no-report"]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    child = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        try:
            peak = max(peak, child.memory_info().rss)
        except psutil.Error:
            break
        time.sleep(0.05)
    out, err = proc.communicate()
    wall = time.monotonic() - start
    if proc.returncode not in (0, 3):
        raise RuntimeError(f"summarize exited {proc.returncode}: {err.decode()[-2000:]}")
    return {
        "wall_s": wall,
        "peak_rss_mib": peak / 2**20,
        "exit_code": proc.returncode,
        "stdout_tail": out.decode()[-600:],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--min-tokens", type=int, default=50)
    parser.add_argument("--max-tokens", type=int, default=400)
    parser.add_argument(
        "--stage-s", type=float, default=900.0, help="seconds per stage of the synthetic ramp"
    )
    parser.add_argument("--keep", help="write the results folder here (default: a temporary folder)")
    parser.add_argument("--out", default=str(REPO / "benchmarks/results/summary_memory.json"))
    args = parser.parse_args(argv)
    directory = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="llm-locust-summary-"))
    directory.mkdir(parents=True, exist_ok=True)
    requests = directory / "requests.jsonl"
    t = time.monotonic()
    _, gaps = write_records(requests, args.records, args)
    (directory / "run.json").write_text(json.dumps(run_json(args.stage_s)))
    written_s = time.monotonic() - t
    result = measure(directory)
    summary = json.loads((directory / "summary.json").read_text())
    out = {
        "benchmark": "summary_memory",
        "records": args.records,
        "itl_gaps": gaps,
        "file_mib": requests.stat().st_size / 2**20,
        "generate_s": written_s,
        **result,
        "itl_precision": summary.get("itl_precision"),
        "completed": summary.get("completed"),
        "stages": len(summary.get("stages") or []),
        "p99_itl_ms": summary.get("p99_itl_ms"),
        "windows": len(summary.get("windows") or []),
        "token_arrivals": summary.get("token_arrivals", {"method": "exact"}),
        "loadavg": os.getloadavg(),
        "python": sys.version.split()[0],
    }
    print(json.dumps({k: v for k, v in out.items() if k != "stdout_tail"}, indent=2))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    if not args.keep:
        requests.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
