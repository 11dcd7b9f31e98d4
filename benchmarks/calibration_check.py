"""Calibrate on a ramp, predict, and measure: is ``llm-locust predict`` within 15 % of ``capacity``?

    .venv/bin/python benchmarks/calibration_check.py --deployments all --speedup 10
    .venv/bin/python benchmarks/calibration_check.py --measure capacity   # measured by `llm-locust capacity`

For each simulated deployment (``llm-locust sim --gpu G --model M --gpus TP``; the calibrator is
not told these) this:

1. runs a closed-loop ramp of at least four levels on one replica (``llm-locust run --ramp``,
   chat profile, outputs capped at 512, ``--target-speedup K``);
2. measures the SLO capacity of three plans: one replica, two replicas behind round robin, and
   one replica with twice the chat prompt length (each plan its own simulator process, one
   after the other: the host is shared, and parallel searches saturated the load generator).
   ``--measure capacity`` (the issue's reading): ``llm-locust capacity`` with a plan file per
   plan, the search's own steps (``--search-step``/``--search-warmup`` of deployment time),
   its answer as a user gets it. ``--measure ramp`` (the default, the older reading): a ramp
   of levels 8 % apart around the prediction, the highest level passing with every lower one
   passing, and where lines through the levels' P95s cross the SLO;
3. fits ``llm-locust calibrate`` on the ramp (and once more with ``--holdout`` at its highest
   level), and asks ``llm-locust predict`` for the same three plans.

Everything is in deployment seconds. The SLO is ``ttft_p95<=5s,e2e_p95<=30s``. Results go to
``benchmarks/results/calibration_check.json`` and a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SLO = "ttft_p95<=5s,e2e_p95<=30s"
SLO_TTFT, SLO_E2E = 5.0, 30.0
#: name: (gpu, model, tp, ramp levels, demand)
DEPLOYMENTS = {
    "a100-70b-tp4": ("a100", "70b", 4, [6, 12, 18, 24, 30], 24),
    "l40s-32b-tp4": ("l40s", "32b", 4, [12, 24, 36, 48, 60], 48),
    "a100_40gb-32b-tp2": ("a100-40gb", "32b", 2, [4, 8, 12, 16, 20, 24], 16),
}
CHAT = {"profile": "chat", "max_tokens": 512}
LONG = {
    "input_tokens": "lognormal:mean=2310,std=1800,min=2,max=16000",
    "output_tokens": "lognormal:mean=211,std=150,min=7,max=512",
}


def _sim(
    gpu: str, model: str, tp: int, replicas: int, speedup: float
) -> tuple[subprocess.Popen[str], list[str]]:
    cmd = [sys.executable, "-m", "llm_locust.sim", "--port", "0", "--gpu", gpu, "--model", model]
    cmd += ["--gpus", str(tp), "--replicas", str(replicas), "--speedup", f"{speedup:g}", "--seed", "1"]
    cmd += ["--max-model-len", "20000"]  # a100-40gb at TP2 holds 22,380 tokens of KV
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=REPO)
    line = proc.stdout.readline() if proc.stdout else ""
    return proc, line.split(" on ", 1)[1].strip().split(",")


def _cli(*args: str, timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "llm_locust.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def ramp(dep: tuple[Any, ...], folder: Path, args: argparse.Namespace) -> float:
    gpu, model, tp, levels, _ = dep
    sim, urls = _sim(gpu, model, tp, 1, args.speedup)
    t0 = time.monotonic()
    try:
        out = _cli(
            "run", "--host", urls[0], "--headless", "--ramp", ",".join(map(str, levels)),
            "--step-time", args.ramp_step, "--warmup", args.ramp_warmup, "--workload", "chat",
            "--max-tokens", "512", "--seed", "1", "--target-speedup", f"{args.speedup:g}",
            "--results-dir", str(folder), "--overwrite", "--only-summary", "--loglevel", "WARNING",
        )  # fmt: skip
    finally:
        sim.terminate()
        sim.wait(10)
    if out.returncode not in (0, 3):
        raise SystemExit(f"ramp failed: {out.stderr[-1500:]}")
    return time.monotonic() - t0


def _levels(predicted: float, replicas: int, span: tuple[float, float] = (0.65, 1.45)) -> list[int]:
    """Closed-loop levels from ``span[0]`` to ``span[1]`` times the prediction, about 8 % apart
    (whole users, a multiple of the replicas so every replica gets the same share)."""
    out: list[int] = []
    x = span[0] * predicted
    while x <= span[1] * predicted:
        level = max(replicas, round(x / replicas) * replicas)
        if level not in out:
            out.append(level)
        x *= 1.08
    return out


def _verdicts(folder: Path, levels: list[int], k: float) -> dict[int, dict[str, Any]]:
    """Each level's TTFT and E2E P95 in deployment time (x k) and whether the SLO holds."""
    import numpy as np

    rows = [json.loads(line) for line in (folder / "requests.jsonl").read_text().splitlines()]
    out = {}
    for stage, users in enumerate(levels):
        ok = [r for r in rows if r["stage"] == stage and not r["warmup"] and r["outcome"] == "ok"]
        failed = sum(1 for r in rows if r["stage"] == stage and not r["warmup"] and r["outcome"] != "ok")
        if not ok:
            out[users] = {"requests": 0, "pass": False}
            continue
        t95 = float(np.percentile([r["ttft"] * k for r in ok], 95))
        e95 = float(np.percentile([r["e2e"] * k for r in ok], 95))
        passed = t95 <= SLO_TTFT and e95 <= SLO_E2E and failed == 0
        out[users] = {"requests": len(ok), "failed": failed, "ttft_p95": t95, "e2e_p95": e95, "pass": passed}
    return out


def measure(
    dep: tuple[Any, ...],
    folder: Path,
    args: argparse.Namespace,
    predicted: dict[str, Any],
    done: dict[str, Any],
) -> dict[str, Any]:
    """Each plan's SLO capacity measured over the wire: a ramp through levels around the
    prediction, each level judged on its records; the capacity is the highest level that
    passes with every lower one passing. One plan at a time (the host is shared)."""
    gpu, model, tp = dep[:3]
    out: dict[str, Any] = dict(done)
    for plan, replicas, workload in (("one", 1, CHAT), ("two", 2, CHAT), ("long", 1, LONG)):
        if (done.get(plan) or {}).get("capacity") is not None:
            continue
        low, high = (float(x) for x in args.measure_span.split(","))
        levels = _levels(predicted[plan]["capacity"], replicas, (low, high))
        proc, urls = _sim(gpu, model, tp, replicas, args.speedup)
        run = folder / f"measure-{plan}"
        lengths = ["--workload", "chat", "--max-tokens", "512"] if workload is CHAT else [
            "--input-tokens", LONG["input_tokens"], "--output-tokens", LONG["output_tokens"]]  # fmt: skip
        t0 = time.monotonic()
        try:
            res = _cli(
                "run", "--host", urls[0], "--endpoints", ",".join(urls), "--balance", "round-robin",
                "--headless", "--ramp", ",".join(map(str, levels)), "--step-time", args.measure_step,
                "--warmup", args.ramp_warmup, *lengths, "--seed", "1",
                "--target-speedup", f"{args.speedup:g}",
                "--results-dir", str(run), "--overwrite", "--only-summary", "--loglevel", "WARNING",
            )  # fmt: skip
        finally:
            proc.terminate()
            proc.wait(10)
        if res.returncode not in (0, 3):
            raise SystemExit(f"measuring ramp failed: {res.stderr[-1500:]}")
        by_level = _verdicts(run, levels, args.speedup)
        cap = 0
        for users in levels:
            if not by_level[users]["pass"]:
                break
            cap = users
        out[plan] = {"capacity": cap, "levels": levels, "by_level": by_level, "wall_s": time.monotonic() - t0}
        out[plan]["note"] = (
            "below the lowest level" if cap == 0 else "at the highest level" if cap == levels[-1] else ""
        )
        print(f"measured {folder.name} {plan}: {cap} of {levels} ({out[plan]['wall_s']:.0f} s)", flush=True)
        (folder / "measured.json").write_text(json.dumps(out))
    return out


def measure_with_capacity(
    dep: tuple[Any, ...],
    folder: Path,
    args: argparse.Namespace,
    done: dict[str, Any],
) -> dict[str, Any]:
    """Each plan's SLO capacity as ``llm-locust capacity`` measures it (the issue's reading):
    a plan file per plan (its own simulator, started for it and stopped after), the demand
    the deployment's, the search ``--search-step``/``--search-warmup`` of deployment time a
    step (divided by the simulator's speed-up, which the search reads from its ``/version``).
    The capacity is the plan's ``capacity`` in ``capacity.json`` (withheld: None, and why)."""
    gpu, model, tp, _, demand = dep
    out: dict[str, Any] = dict(done)
    for plan, replicas, workload in (("one", 1, CHAT), ("two", 2, CHAT), ("long", 1, LONG)):
        if plan in done and "withheld" in done[plan]:  # finished (withheld or not): reused
            continue
        proc, urls = _sim(gpu, model, tp, replicas, args.speedup)
        run = folder / f"capacity-{plan}"
        wl: dict[str, Any] = {"profile": "chat", "max_tokens": 512} if workload is CHAT else dict(LONG)
        wl["seed"] = 1
        spec = {
            "demand": {"concurrency": demand * replicas},
            "slo": SLO,
            "workload": wl,
            "search": {"step_time": args.search_step, "warmup": args.search_warmup},
            "plans": [{"name": plan, "endpoints": urls, "gpus": tp * replicas, "gpu_hour_cost": 2.5}],
        }
        plan_file = folder / f"plans-{plan}.yaml"
        plan_file.write_text(json.dumps(spec))  # JSON is YAML
        t0 = time.monotonic()
        try:
            res = _cli("capacity", str(plan_file), "--results-dir", str(run), "--rerun")
        finally:
            proc.terminate()
            proc.wait(10)
        (folder / f"capacity-{plan}.log").write_text(res.stdout + res.stderr)
        if res.returncode not in (0, 3, 6) or not (run / "capacity.json").exists():
            raise SystemExit(f"capacity failed ({res.returncode}): {res.stderr[-1500:]}")
        result = json.loads((run / "capacity.json").read_text())["plans"][0]
        steps = [
            {"level": s.get("level"), "verdict": s.get("verdict"), "requests": s.get("requests"),
             "p95_ttft_ms": s.get("p95_ttft_ms"), "p95_e2el_ms": s.get("p95_e2el_ms"),
             "reason": s.get("reason")}
            for s in result.get("steps", [])
        ]  # fmt: skip
        out[plan] = {
            "capacity": result.get("capacity"),
            "capacity_below": result.get("capacity_below"),
            "withheld": result.get("withheld"),
            "invalid_steps": result.get("invalid_steps"),
            "steps": steps,
            "simulator_clock": result.get("simulator_clock"),
            "wall_s": time.monotonic() - t0,
        }
        print(
            f"capacity {folder.name} {plan}: {out[plan]['capacity']} (below "
            f"{out[plan]['capacity_below']}; withheld: {out[plan]['withheld']}; invalid steps "
            f"{out[plan]['invalid_steps']}) in {out[plan]['wall_s']:.0f} s",
            flush=True,
        )
        (folder / "capacity_measured.json").write_text(json.dumps(out))
    return out


def crossing(by_level: dict[str, dict[str, Any]]) -> float:
    """Where least-squares lines of the measured levels' TTFT and E2E P95 against their users
    first cross the SLO's bounds: a second reading of the measured capacity, less moved by one
    level that a host stall failed than "every lower level passes" (nan: no rising line)."""
    import numpy as np

    out = []
    for key, bound in (("ttft_p95", SLO_TTFT), ("e2e_p95", SLO_E2E)):
        pts = [(float(u), v[key]) for u, v in by_level.items() if v.get("requests")]
        if len(pts) < 2:
            continue
        slope, icpt = np.polyfit([u for u, _ in pts], [e for _, e in pts], 1)
        if slope > 0:
            out.append(float((bound - icpt) / slope))
    return min(out) if out else float("nan")


def predict(model_file: Path, dep: tuple[Any, ...], folder: Path) -> dict[str, Any]:
    demand = dep[4]
    out = {}
    for name, extra in (
        ("one", ["--max-tokens", "512"]),
        ("two", ["--max-tokens", "512", "--replicas", "2"]),
        ("long", ["--input-tokens", LONG["input_tokens"], "--output-tokens", LONG["output_tokens"]]),
    ):
        res = _cli("predict", str(model_file), "--slo", SLO, "--demand", str(demand), *extra,
                   "-o", str(folder / f"predict-{name}.json"))  # fmt: skip
        if res.returncode not in (0, 3):
            raise SystemExit(f"predict failed: {res.stderr[-1500:]}")
        out[name] = json.loads((folder / f"predict-{name}.json").read_text())
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deployments", default="all")
    parser.add_argument("--speedup", type=float, default=10.0)
    parser.add_argument("--ramp-step", default="20s", help="wall time per ramp level")
    parser.add_argument("--ramp-warmup", default="5s")
    parser.add_argument("--work", default="/tmp/calibration_check")
    parser.add_argument("--measure-step", default="20s", help="wall time per measured level")
    parser.add_argument(
        "--measure-span", default="0.65,1.45", help="measured levels from..to times the prediction"
    )
    parser.add_argument(
        "--measure",
        choices=("ramp", "capacity"),
        default="ramp",
        help="measure each plan with a ramp around the prediction, or with `llm-locust capacity`",
    )
    parser.add_argument("--search-step", default="200s", help="capacity: deployment time a step")
    parser.add_argument("--search-warmup", default="50s", help="capacity: deployment time of warm-up")
    parser.add_argument("--fresh", action="store_true", help="measure again what the work folder holds")
    parser.add_argument("--out", default=str(REPO / "benchmarks/results/calibration_check.json"))
    args = parser.parse_args()
    names = list(DEPLOYMENTS) if args.deployments == "all" else args.deployments.split(",")
    report: dict[str, Any] = {"command": " ".join(sys.argv), "slo": SLO, "deployments": {}}
    for name in names:
        dep = DEPLOYMENTS[name]
        folder = Path(args.work) / name
        folder.mkdir(parents=True, exist_ok=True)
        entry: dict[str, Any] = {"gpu": dep[0], "model": dep[1], "tp": dep[2], "ramp": dep[3]}
        measured = folder / ("capacity_measured.json" if args.measure == "capacity" else "measured.json")
        done = json.loads(measured.read_text()) if measured.exists() and not args.fresh else {}
        if not (folder / "ramp" / "summary.json").exists():  # a finished ramp is reused
            entry["ramp_wall_s"] = ramp(dep, folder / "ramp", args)
        cal = _cli("calibrate", str(folder / "ramp"), "-o", str(folder / "model.yaml"))
        hold = _cli("calibrate", str(folder / "ramp"), "-o", str(folder / "model-holdout.yaml"),
                    "--holdout", str(dep[3][-1]))  # fmt: skip
        entry["calibrate"] = cal.stdout
        entry["holdout"] = hold.stdout
        entry["predicted"] = predict(folder / "model.yaml", dep, folder)
        if args.measure == "capacity":
            entry["measured"] = measure_with_capacity(dep, folder, args, done)
        else:
            entry["measured"] = measure(dep, folder, args, entry["predicted"], done)
        m, p = entry["measured"], entry["predicted"]
        rows = []
        for plan in ("one", "two", "long"):
            meas, pred = m[plan]["capacity"], p[plan]["capacity"]
            err = 100 * (pred - meas) / meas if meas else float("nan")
            line = crossing(m[plan]["by_level"]) if "by_level" in m[plan] else float("nan")
            rows.append(
                {
                    "plan": plan,
                    "measured": meas,
                    "predicted": pred,
                    "interval": p[plan]["interval"],
                    "error_pct": err,
                    "e2e_p95_line_crossing": line,
                    "measured_below": m[plan].get("capacity_below"),
                    "withheld": m[plan].get("withheld"),
                }
            )
            print(
                f"{name:18s} {plan:5s} measured {meas} (P95 lines cross the SLO at "
                f"{line:.1f}) predicted {pred:g} {p[plan]['interval']} error {err:+.0f}%"
            )
        entry["rows"] = rows
        print(hold.stdout.split("held-out", 1)[-1][:1500], flush=True)
        report["deployments"][name] = entry
        Path(args.out).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
