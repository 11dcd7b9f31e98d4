"""Capacity of simulated deployment plans under an SLO: predicted, then measured over the wire.

    .venv/bin/python benchmarks/sim_capacity.py --gpu a100 --speedup 10 --users 8,16,24,32,40,48,56,64
    .venv/bin/python benchmarks/sim_capacity.py --virtual-only --gpu h100 --users 32,64,96,128,160,192,224

The plans are the capacity issue's demo: A one 4-GPU TP4 instance, B one 8-GPU TP8 instance,
C two 4-GPU TP4 instances, a 70B-class model, the ``chat`` profile (outputs capped at
``--max-tokens`` 512 as ``llm-locust demo`` does), closed loop without think time, SLO
"TTFT P95 <= 5 s and E2E P95 <= 30 s" in simulated time.

1. Predicted: the engine on a virtual clock (``llm_locust.sim.virtual``), per user count,
   ``--virtual-seconds`` of simulated time after ``--virtual-warmup``. C is two independent
   engines with half the users each (users stick to a replica).
2. Measured (unless ``--virtual-only``): ``llm-locust sim`` with the plan's flags and
   ``--speedup K``, and a real headless ``llm-locust run --ramp USERS`` against it (for C,
   two runs in parallel, one per replica URL, each with half of every level). Latencies
   are multiplied back by K before the SLO is applied; req/s and tok/s are divided by K,
   so every number is in simulated (deployment) time.

The capacity is the highest user count that passes with every lower one passing.
Results go to ``benchmarks/results/sim_capacity.json``.
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

import numpy as np

from llm_locust.sim.deploy import GPUS, MODELS, Deployment
from llm_locust.sim.virtual import closed_loop, percentile
from llm_locust.workload.profiles import load_profile

REPO = Path(__file__).resolve().parent.parent
PLANS = {"A-1x4gpu-tp4": (4, 1), "B-1x8gpu-tp8": (8, 1), "C-2x4gpu-tp4": (4, 2)}  # name: (tp, replicas)


def _drawer(seed: int, max_tokens: int) -> Any:
    profile = load_profile("chat")
    rng = np.random.default_rng(seed)

    def draw() -> tuple[int, int]:
        s = profile.draw(rng)
        return s.input_tokens, min(s.output_tokens, max_tokens)

    return draw


def _stats(
    ttft: list[float], e2e: list[float], out_tokens: int, seconds: float, slo: tuple[float, float]
) -> dict:
    t95, e95 = percentile(ttft, 95), percentile(e2e, 95)
    return {
        "requests": len(e2e),
        "req_s": len(e2e) / seconds,
        "out_tok_s": out_tokens / seconds,
        "ttft_p50": percentile(ttft, 50),
        "ttft_p95": t95,
        "e2e_p50": percentile(e2e, 50),
        "e2e_p95": e95,
        "pass": bool(t95 <= slo[0] and e95 <= slo[1]),
    }


def predicted(args: argparse.Namespace, tp: int, replicas: int, users: int) -> dict:
    d = Deployment(GPUS[args.gpu], MODELS[args.model], tp)
    cfg = d.engine_config(prefix_caching=False)  # chat prompts are unique: no hits either way
    ttft: list[float] = []
    e2e: list[float] = []
    tokens = 0
    for r in range(replicas):
        share = users // replicas + (1 if r < users % replicas else 0)
        for o in closed_loop(
            cfg, share, _drawer(r, args.max_tokens), args.virtual_seconds, args.virtual_warmup
        ):
            ttft.append(o.ttft)
            e2e.append(o.e2e)
            tokens += o.output_tokens
    return _stats(
        ttft, e2e, tokens, args.virtual_seconds - args.virtual_warmup, (args.slo_ttft, args.slo_e2e)
    )


def _start_sim(args: argparse.Namespace, tp: int, replicas: int) -> tuple[subprocess.Popen[str], list[str]]:
    cmd = [sys.executable, "-m", "llm_locust.sim", "--port", "0", "--gpus", str(tp), "--model", args.model]
    cmd += ["--gpu", args.gpu, "--replicas", str(replicas), "--speedup", str(args.speedup), "--seed", "1"]
    sim = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=REPO)
    line = sim.stdout.readline() if sim.stdout else ""
    return sim, line.split(" on ", 1)[1].strip().split(",")


def _run(url: str, users: list[int], args: argparse.Namespace, out: Path, seed: int) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "llm_locust.cli", "run", "--host", url, "--headless", "--ramp"]
    cmd += [
        ",".join(map(str, users)),
        "--step-time",
        args.step_time,
        "--warmup",
        args.warmup,
        "--profile",
        "chat",
    ]
    cmd += ["--max-tokens", str(args.max_tokens), "--seed", str(seed), "--results-dir", str(out)]
    cmd += ["--only-summary", "--loglevel", "WARNING"]
    return subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def measured(
    args: argparse.Namespace, tp: int, replicas: int, levels: list[int], tmp: Path
) -> dict[int, dict]:
    sim, urls = _start_sim(args, tp, replicas)
    try:
        runs = []
        for r, url in enumerate(urls):
            share = [u // replicas + (1 if r < u % replicas else 0) for u in levels]
            runs.append(
                (tmp / f"tp{tp}-r{replicas}-{r}", _run(url, share, args, tmp / f"tp{tp}-r{replicas}-{r}", r))
            )
        for _, proc in runs:
            _, err = proc.communicate(timeout=len(levels) * 600)
            if proc.returncode not in (0, 3) or "Traceback" in err:
                raise SystemExit(f"llm-locust run failed ({proc.returncode}): {err[-2000:]}")
    finally:
        sim.terminate()
        sim.wait(10)
    rows = [json.loads(line) for d, _ in runs for line in (d / "requests.jsonl").read_text().splitlines()]
    k = args.speedup
    hold = _seconds(args.step_time) - _seconds(args.warmup)
    result = {}
    for stage, users in enumerate(levels):
        ok = [r for r in rows if r["stage"] == stage and not r["warmup"] and r["outcome"] == "ok"]
        ttft = [r["ttft"] * k for r in ok]
        e2e = [r["e2e"] * k for r in ok]
        tokens = sum(r["completion_tokens"] for r in ok)
        result[users] = _stats(ttft, e2e, tokens, hold * k, (args.slo_ttft, args.slo_e2e))
        result[users]["failed"] = sum(1 for r in rows if r["stage"] == stage and r["outcome"] != "ok")
    return result


def _seconds(text: str) -> float:
    return float(text[:-1]) * {"s": 1, "m": 60}[text[-1]] if text[-1] in "sm" else float(text)


def capacity(rows: dict[int, dict]) -> int:
    best = 0
    for users in sorted(rows):
        if not rows[users]["pass"]:
            break
        best = users
    return best


def _table(name: str, kind: str, rows: dict[int, dict]) -> None:
    print(f"{name} ({kind}): capacity {capacity(rows)} concurrent")
    for users, r in sorted(rows.items()):
        print(
            f"  users {users:4d}: {r['req_s']:6.2f} req/s {r['out_tok_s']:7.0f} tok/s  TTFT p50/p95 "
            f"{r['ttft_p50']:5.2f}/{r['ttft_p95']:5.2f} s  "
            f"E2E p50/p95 {r['e2e_p50']:5.1f}/{r['e2e_p95']:5.1f} s"
            f"  n={r['requests']}{'  PASS' if r['pass'] else '  fail'}",
            flush=True,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu", default="a100", choices=sorted(GPUS))
    parser.add_argument("--model", default="70b", choices=sorted(MODELS))
    parser.add_argument("--users", default="8,16,24,32,40,48,56,64", help="closed-loop levels")
    parser.add_argument("--speedup", type=float, default=10.0, help="the simulator's --speedup")
    parser.add_argument("--step-time", default="20s", help="wall time per measured level")
    parser.add_argument("--warmup", default="6s", help="start of each level excluded (wall)")
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--slo-ttft", type=float, default=5.0, help="seconds, simulated time")
    parser.add_argument("--slo-e2e", type=float, default=30.0, help="seconds, simulated time")
    parser.add_argument("--virtual-seconds", type=float, default=1800.0)
    parser.add_argument("--virtual-warmup", type=float, default=300.0)
    parser.add_argument("--virtual-only", action="store_true")
    parser.add_argument("--plans", default=",".join(PLANS))
    parser.add_argument("--out", default=str(REPO / "benchmarks/results/sim_capacity.json"))
    args = parser.parse_args()
    levels = [int(u) for u in args.users.split(",")]
    report: dict[str, Any] = {"command": " ".join(sys.argv), "args": vars(args), "plans": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.plans.split(","):
            tp, replicas = PLANS[name]
            plan: dict[str, Any] = {"tp": tp, "replicas": replicas, "gpus": tp * replicas}
            plan["predicted"] = {u: predicted(args, tp, replicas, u) for u in levels}
            _table(name, "predicted, virtual clock", plan["predicted"])
            if not args.virtual_only:
                t0 = time.monotonic()
                plan["measured"] = measured(args, tp, replicas, levels, Path(tmp))
                plan["measured_wall_s"] = time.monotonic() - t0
                _table(name, f"measured over the wire, --speedup {args.speedup:g}", plan["measured"])
            plan["capacity"] = {
                kind: capacity(plan[kind]) for kind in ("predicted", "measured") if kind in plan
            }
            report["plans"][name] = plan
    Path(args.out).write_text(json.dumps(report, indent=1))
    print(f"results: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
