"""``llm-locust demo``: "4 or 8 GPUs?" answered on simulated deployments, only from valid steps.

Starts three simulated deployments of a 70B-class model (``llm-locust sim``'s roofline model: a
rehearsal, not a prediction) on free loopback ports:

- A: one 4-GPU instance, tensor parallel 4;
- B: one 8-GPU instance, tensor parallel 8;
- C: two 4-GPU instances, TP4 each (``--replicas 2``: two URLs, no load balancer),

then runs ``llm-locust capacity`` over them: a capacity search per plan, from 32 users (near the
demand), with the ``chat`` profile for the demand "50 concurrent at peak" and the SLO "success
>= 99 %, TTFT P95 <= 5 s, E2E P95 <= 30 s", and prints the comparison, the cheapest plan that
meets the demand and the scaling from A to B and C. The simulators run ``--speedup`` times
faster than the deployments they model (default 10); the capacity command reads that from their
``/version``, runs the search with the SLO and durations divided by it and shows every number in
deployment time.

Plans are searched at once only where the host has the cores for them (``--parallel``: by
default one plan per 2 cores, so one after the other on a 2-core machine, about 3 minutes a
plan), and every answer stands on steps the run holds valid: a step measured by a saturated or
stalled load generator (a busy process, or an overloaded host) is run once more, then the
plan's answer is withheld and the demo says why (exit code 6). Measured runs: ``benchmarks/README.md``.

``--ramp-only`` runs the previous demo instead: one simulator and a graded ramp.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from llm_locust.config.stage_kind import StageKind
from llm_locust.config.units import OptionError, parse_duration

__all__ = ["main"]

DEMO_SLO = "success>=99%,ttft_p95<=5s,e2e_p95<=30s"
#: name -> the simulator's deployment flags (with --gpu, --model, --speedup)
PLANS = {
    "A-1x4gpu-tp4": (["--gpus", "4", "--tp", "4"], 4),
    "B-1x8gpu-tp8": (["--gpus", "8", "--tp", "8"], 8),
    "C-2x4gpu-tp4": (["--gpus", "4", "--tp", "4", "--replicas", "2"], 8),
}
RAMP_SIM_ARGS = ["--mode", "engine", "--max-num-seqs", "16", "--kv-cache-tokens", "120000", "--seed", "1"]
RAMP_SLO = "success>=99%,ttft_p95<=1s,e2e_p95<=20s"
LISTEN = "llm-locust sim listening on "


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="llm-locust demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--ramp-only", action="store_true", help="the short graded ramp on one simulator")
    parser.add_argument("--gpu", default="a100", help="the simulated GPU (default a100)")
    parser.add_argument(
        "--speedup", type=float, default=10.0, help="simulated seconds per second (default 10)"
    )
    parser.add_argument(
        "--step-time",
        default=None,
        help="each search step, in deployment time (default 200s); with --ramp-only each ramp stage, "
        "in wall time (default 15s)",
    )

    parser.add_argument(
        "--parallel",
        type=int,
        default=None,
        help="plans searched at once (default: one per 2 cores of this host, so one after the other "
        "on a 2-core machine: plans searched at once there measure the host's overload)",
    )
    parser.add_argument(
        "--extensions", type=int, default=2, help="runs on of a step whose interval straddles a threshold"
    )
    parser.add_argument("--gpu-hour-cost", type=float, default=2.5, help="$ per GPU-hour (default 2.5)")
    parser.add_argument("--results-dir", default="", help="default: demo-results/<timestamp>")
    parser.add_argument(
        "--ramp", default=None, help="user counts of the graded ramp (default 4,16,48); implies --ramp-only"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    from llm_locust.commands.capacity.host import exit_on_sigterm

    parser = _parser()
    args = parser.parse_args(argv)
    args.ramp_only = args.ramp_only or args.ramp is not None  # --ramp alone is no silent no-op
    try:
        step_s = parse_duration(args.step_time or ("15s" if args.ramp_only else "200s"))
    except OptionError as exc:
        print(f"llm-locust demo: error: {exc}", file=sys.stderr)
        return 2
    args.step_time = f"{step_s:g}s"
    # the warm-up fits inside a step whatever --step-time says (30 s / 2 s for the defaults)
    args.warmup = f"{min(30.0 if not args.ramp_only else 2.0, step_s / 4):g}s"
    args.ramp = args.ramp or "4,16,48"
    exit_on_sigterm()  # a terminated demo stops its simulators and runs (the finally blocks)
    results = Path(args.results_dir or f"demo-results/{time.strftime('%Y%m%d-%H%M%S')}")
    if args.ramp_only:
        return _ramp(args, results)
    sims: list[subprocess.Popen[str]] = []
    try:
        urls = {}
        for name, (flags, _gpus) in PLANS.items():
            sim_args = [
                *flags,
                "--gpu",
                args.gpu,
                "--model",
                "70b",
                "--speedup",
                f"{args.speedup:g}",
                "--seed",
                "1",
            ]
            proc, url = _start_sim(sim_args)
            sims.append(proc)
            urls[name] = url.split(",")
            print(
                f"llm-locust demo: plan {name}: simulator at {url} (llm-locust sim {' '.join(sim_args)})",
                flush=True,
            )
        plans = _plan_file(results, urls, args)
        print(f"llm-locust demo: plan file {plans}; results in {results}/<plan>/", flush=True)
        print(
            "llm-locust demo: the simulator is a rehearsal model (a first-order roofline), not a prediction",
            flush=True,
        )
        from llm_locust.commands.capacity.cli import main as capacity

        parallel = ["--parallel", str(args.parallel)] if args.parallel else []
        code = capacity([str(plans), "--results-dir", str(results), *parallel])
    finally:
        for proc in sims:
            proc.terminate()
        for proc in sims:
            proc.wait(10)
    return 0 if code in (0, 3) else code  # 3: no plan meets the demand, which is an answer too (5: withheld)


def _plan_file(results: Path, urls: dict[str, list[str]], args: argparse.Namespace) -> Path:
    import yaml

    plans = [
        {
            "name": name,
            "endpoints": urls[name],
            "gpus": gpus,
            "gpu_hour_cost": args.gpu_hour_cost,
            "gpu": args.gpu,
        }
        for name, (_flags, gpus) in PLANS.items()
    ]
    data = {
        "demand": {"concurrency": 50},
        "slo": DEMO_SLO,
        "workload": {"profile": "chat", "max_tokens": 512},
        "search": {
            "kind": StageKind.USERS.value,
            "precision": "10%",
            # a plan shown short of the demand is bracketed to 25 % only: a finer capacity would
            # not change the answer, and its refinement was most of the demo's time
            "settled_precision": "25%",
            "step_time": args.step_time,
            "warmup": args.warmup,
            "extensions": args.extensions,
        },
        "plans": plans,
    }
    results.mkdir(parents=True, exist_ok=True)
    path = results / "plans.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _ramp(args: argparse.Namespace, results: Path) -> int:
    """One engine-mode simulator at ``--speedup`` and a graded ramp with the SLO divided by it: 15 s
    stages hold 150 simulated seconds, enough requests for a P95 to be shown (72 at least)."""
    from llm_locust.config.slo import parse_slo, scaled_slo

    k = args.speedup
    slo = scaled_slo(parse_slo(RAMP_SLO), k)
    sim, url = _start_sim([*RAMP_SIM_ARGS, "--speedup", f"{k:g}"])
    try:
        print(f"llm-locust demo: simulator (engine mode) at {url}; results in {results}", flush=True)
        if k != 1:
            print(
                f"llm-locust demo: the simulator runs {k:g}x faster than the engine it models: the SLO "
                f"{RAMP_SLO} is applied as {slo}, and every latency below is wall clock (x{k:g} for the "
                f"modelled engine), every throughput {k:g}x the modelled one",
                flush=True,
            )
        cmd = [sys.executable, "-m", "llm_locust.cli", "run", "--host", url, "--headless"]
        cmd += [
            "--ramp",
            args.ramp,
            "--step-time",
            args.step_time,
            "--warmup",
            args.warmup,
            "--workload",
            "chat",
        ]
        cmd += ["--max-tokens", "512", "--slo", slo, "--results-dir", str(results)]
        code = subprocess.call([*cmd, "--only-summary", "--loglevel", "WARNING"])
    finally:
        sim.terminate()
        sim.wait(10)
    if code in (0, 3):  # 3: the SLO failed at some stage, which is the demo's point
        print(f"llm-locust demo: done. requests.jsonl and summary.json are in {results}/")
        return 0
    return code


def _start_sim(sim_args: list[str]) -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, "-m", "llm_locust.sim", "--host", "127.0.0.1", "--port", "0", *sim_args]
    sim = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    line = sim.stdout.readline() if sim.stdout else ""
    if not line.startswith(LISTEN):
        sim.kill()
        raise SystemExit(f"llm-locust demo: the simulator did not start: {line.strip()!r}")
    return sim, line[len(LISTEN) :].strip()


if __name__ == "__main__":
    sys.exit(main())
