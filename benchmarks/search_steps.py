"""How many steps and how long the SLO capacity search takes, and how close it lands.

    .venv/bin/python benchmarks/search_steps.py --boundaries 2,5,10

Each boundary ``B`` is set by construction: an engine-mode ``llm-locust sim`` whose decode step
lasts ``20 + 40 x running`` ms (``--decode-base-ms 20 --decode-ms-per-seq 40``, a batch limit
far above the load, 5 output tokens), so N closed-loop users see a TPOT of at most ``20 + 40 N``
ms, and the SLO ``tpot_p90 <= 20 + 40 (B + 1/3)`` ms holds up to B users and breaks at B + 1 as
long as the batch stays within a third of a user of N (a closed-loop user is out of the batch
between two requests, so at larger N the batch runs further below N and the boundary found
moves up: that is part of what this measures). A real headless ``llm-locust run --search users
--search-min 1`` (10 % precision, ``--step-time 8s``) searches it. Recorded per boundary: the
probes (level, verdict, extensions), the number of steps, the search's wall time (from the
first step's start to the last window's end), the bracket and its distance from B.
Results: ``benchmarks/results/search_steps.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
ENGINE = ["--mode", "engine", "--max-num-seqs", "256", "--decode-base-ms", "20", "--decode-ms-per-seq", "40"]
ENGINE += ["--prefill-ms-per-token", "0.01", "--output-tokens", "5"]


def _sim() -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, "-m", "llm_locust.sim", "--host", "127.0.0.1", "--port", "0", *ENGINE]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=REPO)
    line = proc.stdout.readline() if proc.stdout else ""
    return proc, line.rsplit(" ", 1)[-1].strip()


def measure(boundary: int, step_time: str, precision: str) -> dict[str, Any]:
    threshold = round((20 + 40 * (boundary + 1 / 3)) / 1000.0, 4)
    proc, url = _sim()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [sys.executable, "-m", "llm_locust.cli", "run", "--host", url, "--headless"]
            cmd += ["--search", "users", "--search-min", "1", "--search-precision", precision]
            cmd += ["--slo", f"success>=90%,tpot_p90<={threshold:g}s", "--step-time", step_time]
            cmd += ["--warmup", "1s", "--prompt-tokens", "16", "--max-tokens", "5", "--results-dir", tmp]
            began = time.time()
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, cwd=REPO)
            wall = time.time() - began
            summary = json.loads((Path(tmp) / "summary.json").read_text())
    finally:
        proc.terminate()
        proc.wait(10)
    search = summary["search"]
    stages = summary["stages"]
    searching = stages[-1]["span"]["end"] - stages[0]["span"]["start"] if stages else None
    lo = (search["highest_pass"] or {}).get("level")
    hi = (search["upper"] or {}).get("level")
    return {
        "boundary": boundary,
        "slo": f"tpot_p90<={threshold:g}s",
        "exit_code": run.returncode,
        "probes": [(p["level"], p["verdict"], p["extensions"]) for p in search["steps"]],
        "steps": len(search["steps"]),
        "step_runs": sum(1 + p["extensions"] for p in search["steps"]),
        "search_s": searching,
        "process_s": wall,
        "highest_pass": lo,
        "lowest_not_passed": hi,
        "off_by": None if lo is None else boundary - lo,
        "stop_reason": search["stop_reason"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boundaries", default="2,5,10")
    parser.add_argument("--step-time", default="8s")
    parser.add_argument("--precision", default="10%")
    args = parser.parse_args()
    out = []
    for b in (int(x) for x in args.boundaries.split(",")):
        result = measure(b, args.step_time, args.precision)
        print(json.dumps(result), flush=True)
        out.append(result)
    path = REPO / "benchmarks" / "results" / "search_steps.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
