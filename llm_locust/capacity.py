"""``llm-locust capacity PLANS.yaml --results-dir DIR``: the capacity search against each plan in turn.

For each deployment plan of the file (:mod:`llm_locust.config.plans`) this runs one headless
``llm-locust run --search ...`` against the plan's endpoints, with the file's SLO, demand and
workload, into ``DIR/<plan>/`` (its ``requests.jsonl``, ``summary.json``, ``run.log`` and
``plan-args.json``, the exact command). A plan whose folder holds a finished search made with the
same command is not run again, so an interrupted comparison resumes where it stopped. Then it
compares the plans (:mod:`llm_locust.results.plans`), prints the table and writes
``DIR/capacity.json``. Progress (each step as the search starts and judges it) is printed as it
goes.

Simulated deployments: a target whose ``GET /version`` says it is ``llm-locust-sim`` with a
``speedup`` K runs K times faster than the deployment it models. The run is then given the
deployment's SLO, think time, step time and warm-up divided by K (rates multiplied by K), and
every number of the comparison is converted back: latencies x K, throughputs / K. The table
says so; each plan's folder keeps the measured (wall-clock) numbers and ``capacity.json`` the
factor.

Exit codes: 0 some plan meets the demand, 3 none does, 2 a bad plan file or a plan whose target
could not be measured (the others are still run and compared).
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from llm_locust.config.plans import Plan, PlanFile, PlanFileError, load_plan_file
from llm_locust.config.register import OneLineParser
from llm_locust.config.slo import SloSpec
from llm_locust.config.think import parse_think_time
from llm_locust.results.plans import compare_plans, deployment_time, format_comparison

__all__ = ["exit_on_sigterm", "main", "run_args", "scaled_slo", "time_scale"]

CAPACITY_FILE = "capacity.json"
ARGS_FILE = "plan-args.json"
NO_PLAN_MEETS = 3
#: How long a run gets to finish its drain and write its summary when the comparison is stopped.
STOP_WAIT_S = 60.0


def time_scale(url: str, timeout: float = 5.0) -> float:
    """How many times faster than real time ``url`` runs: the simulator's ``speedup``, else 1."""
    try:
        with urllib.request.urlopen(f"{url}/version", timeout=timeout) as reply:
            data = json.loads(reply.read())
    except (OSError, ValueError):
        return 1.0
    if isinstance(data, dict) and data.get("version") == "llm-locust-sim":
        return float(data.get("speedup") or 1.0)
    return 1.0


def scaled_slo(spec: SloSpec, k: float) -> str:
    """The SLO with every latency threshold divided by ``k`` (the success ratio unchanged)."""
    parts = []
    for line in spec.lines:
        if line.metric == "success":
            parts.append(line.text)
        else:
            parts.append(f"{line.name}{line.op}{line.threshold / k:.6g}s")
    return ",".join(parts)


def _flag(args: list[str], flag: str, value: Any) -> None:
    if value is not None:
        args += [flag, str(value)]


def run_args(file: PlanFile, plan: Plan, folder: Path, k: float) -> list[str]:
    """The ``llm-locust run`` arguments of ``plan`` (durations and thresholds divided by ``k``)."""
    search, workload, demand = file.search, file.workload, file.demand
    args = ["--host", plan.endpoints[0], "--endpoints", ",".join(plan.endpoints), "--headless"]
    args += ["--search", search.kind, "--slo", scaled_slo(file.slo, k)]
    rate = k if search.kind == "rate" else 1.0
    _flag(args, "--search-min", None if search.min is None else f"{search.min * rate:g}")
    _flag(args, "--search-max", None if search.max is None else f"{search.max * rate:g}")
    args += ["--search-precision", f"{search.precision:g}", "--search-max-steps", str(search.max_steps)]
    args += ["--search-extensions", str(search.extensions)]
    args += ["--step-time", f"{search.step_time / k:g}s", "--warmup", f"{search.warmup / k:g}s"]
    args += ["--balance", search.balance, "--balance-scope", search.balance_scope]
    think = workload.think_time or (demand.think if demand.kind == "users" else None)
    if think:
        args += ["--think-time", parse_think_time(think).scaled(1 / k).spec()]
    args += ["--demand", _demand_text(file, k)]
    for key, flag in (
        ("profile", "--workload"),
        ("max_tokens", "--max-tokens"),
        ("input_tokens", "--input-tokens"),
        ("output_tokens", "--output-tokens"),
        ("prompt_tokens", "--prompt-tokens"),
        ("dataset", "--dataset"),
        ("seed", "--seed"),
    ):
        _flag(args, flag, getattr(workload, key))
    _flag(args, "--model", plan.model)
    return [*args, "--results-dir", str(folder), "--overwrite", "--only-summary", "--loglevel", "INFO"]


def _demand_text(file: PlanFile, k: float) -> str:
    demand = file.demand
    if demand.kind == "rate":
        return f"rate={demand.value * k:g}"
    if demand.kind == "concurrency":
        return f"concurrency={demand.value:g}"
    return f"users={demand.users}"  # the think time goes in --think-time, already scaled


def _finished(folder: Path, args: list[str]) -> dict[str, Any] | None:
    """The finished search of ``folder`` if it was made with ``args``, else ``None``."""
    try:
        same = json.loads((folder / ARGS_FILE).read_text()) == args
        summary = json.loads((folder / "summary.json").read_text())
    except (OSError, ValueError):
        return None
    search = summary.get("search") or {}
    if not same or summary.get("interrupted") or search.get("stop_reason") is None:
        return None
    return search


def _run(name: str, folder: Path, args: list[str], k: float = 1.0) -> tuple[int, str]:
    """Run one plan's search, printing its progress (latencies in deployment time); (exit
    code, last error line)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ARGS_FILE).write_text(json.dumps(args) + "\n")
    cmd = [sys.executable, "-m", "llm_locust.cli", "run", *args]
    error = ""
    with open(folder / "run.log", "w", encoding="utf-8") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                log.write(line)
                if "llm-locust: search" in line or "llm-locust: error" in line:
                    message = line.split("llm-locust: ", 1)[1].strip()
                    print(f"[{name}] {deployment_time(message, k)}", flush=True)
                    if message.startswith("error"):
                        error = message
            code = proc.wait()
        finally:  # interrupted (SIGINT, or SIGTERM: see exit_on_sigterm): the run stops too
            if proc.poll() is None:
                proc.terminate()
                proc.wait(STOP_WAIT_S)
    return code, error


def exit_on_sigterm() -> None:
    """SIGTERM raises ``SystemExit(143)`` so cleanup (``finally``) runs: no run or simulator is
    left behind by a terminated comparison."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="llm-locust capacity", description=__doc__.split("\n\n")[0])
    parser.add_argument("plans", help="the plan file (YAML): demand, slo, workload, search, plans")
    parser.add_argument("--results-dir", required=True, help="one folder per plan, and capacity.json")
    parser.add_argument("--rerun", action="store_true", help="run every plan again, finished or not")

    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    exit_on_sigterm()
    try:
        file = load_plan_file(args.plans)
    except PlanFileError as exc:
        sys.stderr.write(f"llm-locust capacity: error: {exc}\n")
        return 2
    root = Path(args.results_dir)
    if root.exists() and not root.is_dir():
        sys.stderr.write(f"llm-locust capacity: error: --results-dir {root}: exists and is not a directory\n")
        return 2
    scales = {plan.name: time_scale(plan.endpoints[0]) for plan in file.plans}
    searches, errors = {}, {}
    for number, plan in enumerate(file.plans, 1):
        name, search, error = _plan(file, root, number, plan, scales[plan.name], rerun=args.rerun)
        if search is None:
            errors[name] = error
        else:
            searches[name] = search
    return _report(file, root, searches, scales, errors)


def _plan(
    file: PlanFile, root: Path, number: int, plan: Plan, k: float, rerun: bool = False
) -> tuple[str, dict[str, Any] | None, str]:
    """One plan's search (or the finished one in its folder): (name, search block, error)."""
    folder = root / plan.name
    plan_args = run_args(file, plan, folder, k)
    head = f"[{plan.name}] plan {number}/{len(file.plans)}"
    done = None if rerun else _finished(folder, plan_args)
    if done is not None:
        print(f"{head}: finished before, not run again", flush=True)
        return plan.name, done, ""
    scaled = f" (simulated at {k:g}x)" if k != 1 else ""
    print(f"{head}: searching{scaled}, results in {folder}", flush=True)
    if k != 1:
        print(
            f"[{plan.name}] the simulator runs {k:g}x faster: latencies below are x{k:g}, in deployment time"
        )
    code, error = _run(plan.name, folder, plan_args, k)
    search = _finished(folder, plan_args)
    if search is None:
        error = error or f"the run ended with exit code {code} before its search did"
        print(f"[{plan.name}] not measured: {error}", flush=True)
        return plan.name, None, error
    return plan.name, search, ""


def _report(
    file: PlanFile, root: Path, searches: dict[str, Any], scales: dict[str, float], errors: dict[str, str]
) -> int:
    report = compare_plans(file, searches, scales)
    for result in report["plans"]:
        result["folder"] = str(root / result["name"])
    report["not_measured"] = errors
    root.mkdir(parents=True, exist_ok=True)
    (root / CAPACITY_FILE).write_text(json.dumps(report, indent=2) + "\n")
    if report["plans"]:
        print(format_comparison(report))
    factors = sorted({k for name, k in scales.items() if name in searches and k != 1})
    if factors:
        shown = ", ".join(f"{k:g}x" for k in factors)
        print(
            f"simulated at {shown}: latencies and throughputs shown in real-time (deployment) terms; "
            "the plan folders hold the measured wall-clock numbers"
        )
    for name, error in errors.items():
        print(f"{name}: not measured: {error}")
    print(f"capacity.json: {root / CAPACITY_FILE}")
    if errors:
        return 2
    return 0 if report["cheapest"] is not None else NO_PLAN_MEETS
