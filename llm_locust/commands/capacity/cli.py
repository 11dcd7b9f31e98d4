"""``llm-locust capacity PLANS.yaml --results-dir DIR``: the capacity search against each plan.

For each deployment plan of the file (:mod:`llm_locust.config.plans`) this runs one headless
``llm-locust run --search ...`` against the plan's endpoints, with the file's SLO, demand and
workload, into ``DIR/<plan>/`` (its ``requests.jsonl``, ``summary.json``, ``run.log`` and
``plan-args.json``, the exact command). A plan whose folder holds a finished search made with the
same command is not run again, so an interrupted comparison resumes where it stopped. Then it
compares the plans (:mod:`llm_locust.results.plans`), prints the table and writes
``DIR/capacity.json``. The plans are searched one after the other, or up to ``--parallel N`` at
once (default: one per two cores of this host, :func:`host_parallel`; each has its own targets
and its own ``llm-locust run``; a stopped comparison stops every run). Each plan's load runs in
one process, or with ``--workers N`` on a Locust master with N local worker processes, the plan
folder's files the same (:mod:`llm_locust.commands.capacity.host`: how plans share this host's cores; the
Kubernetes way, a Job per plan, is in docs/kubernetes.md). Progress is printed as
it goes, ``[m:ss] [plan] ...``: each step as the search starts and judges it (its verdict and
the decision), each plan's capacity when it is done. A search without ``search.min`` starts
near the demand (:func:`first_level`).

Simulated deployments: a target whose ``GET /version`` says it is ``llm-locust-sim`` with a
``speedup`` K runs K times faster than the deployment it models. The run is then given the
deployment's SLO, think time, step time and warm-up divided by K (rates multiplied by K), and
every number of the comparison is converted back: latencies x K, throughputs / K
(:mod:`llm_locust.results.timescale`). The table says so; ``capacity.json`` is all deployment
time (its ``time_scale`` block says so, with each plan's factor); each plan's folder keeps the
measured wall-clock numbers (its summary's ``config.options.time_scale`` is K) and its
``report.html`` is drawn in deployment time, with a note on the page. After a simulated plan's
search its simulators' own clocks are read (``llm_sim_schedule_*`` on ``/metrics``,
:func:`sim_clock`): a simulator that fell behind its schedule ran slow, which the progress line
and ``capacity.json`` (``simulator_clock``, its seconds in deployment time too) say.

Exit codes: 0 some plan meets the demand, 3 none does, 6 the answer is withheld (a plan as cheap
as the answer stopped on a step invalid twice: the load generator saturated, or the host was
overloaded), 2 a bad plan file or a plan whose target could not be measured (the others are
still run and compared).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from llm_locust.commands.capacity.host import (
    CORES_PER_PLAN,
    STOP_WAIT_S,
    Progress,
    cores,
    host_parallel,
    master_port_args,
    oversubscribed,
    positive_int,
    worker_args,
)
from llm_locust.commands.capacity.job_env import plan_env
from llm_locust.commands.capacity.predicted import check_predictable, predicted_rows
from llm_locust.commands.capacity.sim_clock import clock_text, sim_clock, time_scale
from llm_locust.config.plans import Plan, PlanFile, PlanFileError, load_plan_file
from llm_locust.config.register import OneLineParser
from llm_locust.config.slo import scaled_slo
from llm_locust.config.think import parse_think_time
from llm_locust.load.search import start_near
from llm_locust.results.capacity import amount
from llm_locust.results.capacity_model import PlanResult, SimulatorClock
from llm_locust.results.plans import compare_plans, format_comparison, plan_result
from llm_locust.results.predicted_plans import predicted_lines
from llm_locust.results.timescale import deployment_time, scaled

__all__ = ["exit_on_sigterm", "first_level", "host_parallel", "main", "run_args", "scaled_slo"]

CAPACITY_FILE = "capacity.json"
ARGS_FILE = "plan-args.json"
NO_PLAN_MEETS = 3
#: A plan as cheap as the answer withheld its own (a step invalid twice): the comparison has none.
WITHHELD = 6


def _flag(args: list[str], flag: str, value: Any) -> None:
    if value is not None:
        args += [flag, str(value)]


def run_args(file: PlanFile, plan: Plan, folder: Path, k: float, workers: int | None = None) -> list[str]:
    """The ``llm-locust run`` arguments of ``plan`` (durations and thresholds divided by ``k``), in
    one load process or on a master with ``workers`` local workers (its port is chosen at launch)."""
    search, workload, demand = file.search, file.workload, file.demand
    args = ["--host", plan.endpoints[0], "--endpoints", ",".join(plan.endpoints), "--headless"]
    args += ["--search", search.kind, "--slo", scaled_slo(file.slo, k)]
    rate = k if search.kind == "rate" else 1.0
    minimum = search.min if search.min is not None else first_level(file)
    _flag(args, "--search-min", None if minimum is None else f"{minimum * rate:g}")
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
    if k != 1:  # the folder's report in deployment time; its summary says the factor
        args += ["--target-speedup", f"{k:g}"]
    args += worker_args(workers)
    return [*args, "--results-dir", str(folder), "--overwrite", "--only-summary", "--loglevel", "INFO"]


def first_level(file: PlanFile) -> float | None:
    """Where a plan's search starts when the file gives no ``search.min``: near the demand
    (:func:`~llm_locust.load.search.start_near`) when it is in the search's unit (users, or
    concurrency for a closed loop without think time, whose users are its concurrency; req/s for
    a rate search), else ``llm-locust run``'s own default."""
    demand, kind = file.demand, file.search.kind
    think = file.workload.think_time or demand.think
    if kind == "users" and (demand.kind == "users" or (demand.kind == "concurrency" and not think)):
        level = start_near(demand.value)
        return max(level, 1.0)
    if kind == "rate" and demand.kind == "rate":
        return start_near(demand.value)
    return None


def _demand_text(file: PlanFile, k: float) -> str:
    demand = file.demand
    if demand.kind == "rate":
        return f"rate={demand.value * k:g}"
    if demand.kind == "concurrency":
        return f"concurrency={demand.value:g}"
    return f"users={demand.users}"  # the think time goes in --think-time, already scaled


def _finished(folder: Path, args: list[str] | None) -> dict[str, Any] | None:
    """The finished search of ``folder`` if it was made with ``args`` (``None``: whatever made
    it, a plan measured elsewhere: ``--no-run``), else ``None``."""
    try:
        same = args is None or json.loads((folder / ARGS_FILE).read_text()) == args
        summary = json.loads((folder / "summary.json").read_text())
    except (OSError, ValueError):
        return None
    search = summary.get("search") or {}
    if not same or summary.get("interrupted") or search.get("stop_reason") is None:
        return None
    return search


def _run(name: str, folder: Path, args: list[str], progress: Progress, k: float = 1.0) -> tuple[int, str]:
    """Run one plan's search, printing its progress (latencies in deployment time); (exit
    code, last error line)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ARGS_FILE).write_text(json.dumps(args) + "\n")
    cmd = [sys.executable, "-m", "llm_locust.cli", "run", *args]
    if "--processes" in args:  # a master of its own: a free port, not part of the saved command
        cmd += master_port_args()
    error = ""
    with open(folder / "run.log", "w", encoding="utf-8") as log:
        proc = progress.start(cmd)
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                log.write(line)
                if "llm-locust: search" in line or "llm-locust: error" in line:
                    message = line.split("llm-locust: ", 1)[1].strip()
                    progress.say(name, deployment_time(message, k))
                    if message.startswith("error"):
                        error = message
            code = proc.wait()
        finally:  # interrupted (SIGINT, or SIGTERM: see exit_on_sigterm): the run stops too
            if proc.poll() is None:
                proc.terminate()
                proc.wait(STOP_WAIT_S)
            progress.running.discard(proc)
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
    parser.add_argument(
        "--parallel",
        type=positive_int,
        default=None,
        help=f"search up to N plans at once (default: one per {CORES_PER_PLAN} cores per load process "
        "of a plan, so one after the other on a 2-core machine); each plan has its own targets and "
        "its own load processes, so N plans need N times the client's CPU",
    )
    parser.add_argument(
        "--print-env",
        metavar="PLAN",
        help="print PLAN's search as NAME=VALUE settings for its Job on Kubernetes "
        "(k8s/overlays/capacity-plan/plan.env) and run nothing",
    )
    parser.add_argument(
        "--no-run",
        action="store_true",
        help="run no plan: compare the finished searches in --results-dir/<plan>/ as they are "
        "(measured elsewhere: a Job per plan on Kubernetes, docs/kubernetes.md)",
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help="run each plan's load on a Locust master with N local worker processes (default: one "
        "load process per plan); at most this host's cores. With --parallel P the host runs P x N "
        "load processes: --parallel's default shrinks to one plan per 2 x N cores, an explicit P x N "
        "above the cores is warned about. Beyond one host: a Job per plan on Kubernetes "
        "(docs/kubernetes.md)",
    )
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
    why = check_predictable(file)
    if why:
        sys.stderr.write(f"llm-locust capacity: error: {args.plans}: {why}\n")
        return 2
    measured = [plan for plan in file.plans if not plan.predicted]
    if args.print_env is not None:
        return _print_env(file, Path(args.results_dir), args.print_env)
    host_cores = cores()
    if args.workers is not None and args.workers > host_cores:
        sys.stderr.write(
            f"llm-locust capacity: error: --workers {args.workers}: more load processes than this "
            f"host's {host_cores} cores (each needs one); use fewer, or a Job per plan on Kubernetes\n"
        )
        return 2
    if args.no_run:  # each folder says its own time scale; no request to any target
        scales = {plan.name: _folder_scale(root / plan.name) for plan in measured}
    else:
        scales = {plan.name: time_scale(plan.endpoints[0]) for plan in measured}
    progress = Progress()
    parallel = args.parallel or host_parallel(len(measured), host_cores, args.workers)
    each = "" if args.workers is None else f", each on a master with {args.workers} local workers"
    if args.parallel is None or each:
        progress.say("capacity", f"{_plans(parallel)} at once{each} ({host_cores} cores on this host)")
    warning = oversubscribed(parallel, args.workers, host_cores)
    if warning:  # on stderr: the progress lines on stdout are the plans' own
        print(f"llm-locust capacity: warning: {warning}", file=sys.stderr, flush=True)
    pool = ThreadPoolExecutor(max_workers=parallel)
    try:
        futures = [
            pool.submit(
                _plan, file, root, n, plan, scales[plan.name], progress, args.rerun, args.workers, args.no_run
            )
            for n, plan in enumerate(measured, 1)
        ]
        done = [future.result() for future in futures]
    except BaseException:  # SIGINT, SIGTERM (exit_on_sigterm): every run stops, not only this thread's
        progress.stop_all()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    searches = {name: search for name, search, _ in done if search is not None}
    errors = {name: error for name, search, error in done if search is None}
    predicted = predicted_rows(file, root, searches, errors, progress.say)
    return _report(file, root, searches, scales, errors, predicted)


def _print_env(file: PlanFile, root: Path, name: str) -> int:
    """``--print-env PLAN``: the plan's search as its Kubernetes Job's settings (deployment time:
    a sped-up simulator's scale is not applied)."""
    plans = {plan.name: plan for plan in file.plans}
    if name not in plans:
        known = ", ".join(plans)
        sys.stderr.write(f"llm-locust capacity: error: --print-env {name}: no plan of that name ({known})\n")
        return 2
    print("\n".join(plan_env(run_args(file, plans[name], root / name, 1.0), name)))
    return 0


def _folder_scale(folder: Path) -> float:
    """The time scale a plan folder's search ran at (its summary's), 1 if it says none."""
    try:
        scale = json.loads((folder / "summary.json").read_text())["config"].get("time_scale") or {}
        return float(scale.get("target_speedup") or 1.0)
    except (OSError, ValueError, KeyError, TypeError):
        return 1.0


def _decision_page(root: Path) -> None:
    """``capacity.html`` beside ``capacity.json``; a failure is one line, never the comparison's."""
    from llm_locust.report.decision_page import write_decision_page

    try:
        print(f"capacity.html: {write_decision_page(root)}")
    except Exception as exc:  # the comparison is on disk already: say so, do not fail
        print(f"capacity.html: not written: {type(exc).__name__}: {exc}")


def _capacity_text(file: PlanFile, search: dict[str, Any], result: PlanResult | None) -> str:
    """The plan's capacity as the table and its verdict say it (one number, one unit)."""
    if result is None:
        return str(search["withheld"])
    if result.capacity is None:
        return "no level was shown to meet the SLO"
    return f"capacity {amount(file.demand.kind, result.capacity)}"


def _plans(n: int) -> str:
    return "1 plan" if n == 1 else f"{n} plans"


def _plan(
    file: PlanFile,
    root: Path,
    number: int,
    plan: Plan,
    k: float,
    progress: Progress,
    rerun: bool = False,
    workers: int | None = None,
    no_run: bool = False,
) -> tuple[str, dict[str, Any] | None, str]:
    """One plan's search (or the finished one in its folder): (name, search block, error)."""
    folder = root / plan.name
    plan_args = run_args(file, plan, folder, k, workers)
    head = f"plan {number}/{sum(1 for p in file.plans if not p.predicted)}"
    done = None if rerun else _finished(folder, None if no_run else plan_args)
    if done is not None:
        progress.say(plan.name, f"{head}: {'measured' if no_run else 'finished'} before, not run again")
        return plan.name, done, ""
    if no_run:
        error = f"{folder} holds no finished search (--no-run runs none)"
        progress.say(plan.name, f"not measured: {error}")
        return plan.name, None, error
    scaled = f" (simulated at {k:g}x: latencies below are x{k:g}, in deployment time)" if k != 1 else ""
    progress.say(plan.name, f"{head}: searching{scaled}, results in {folder}")
    code, error = _run(plan.name, folder, plan_args, progress, k)
    search = _finished(folder, plan_args)
    if search is None:
        error = error or f"the run ended with exit code {code} before its search did"
        progress.say(plan.name, f"not measured: {error}")
        return plan.name, None, error
    result = None if search.get("withheld") else plan_result(plan, file.demand, search, k)
    progress.say(plan.name, f"done: {_capacity_text(file, search, result)}; stopped: {search['stop']}")
    if k != 1:
        clocks = {url: sim_clock(url) for url in plan.endpoints}
        text, behind = clock_text(clocks, result is not None and result.capacity is not None)
        search = {**search, "simulator_clock": {"endpoints": clocks, "fell_behind": behind}}
        if text:
            progress.say(plan.name, text)
    return plan.name, search, ""


def _report(
    file: PlanFile, root: Path, searches: dict[str, Any], scales: dict[str, float], errors: dict[str, str],
    predicted: list[dict[str, Any]],
) -> int:  # fmt: skip
    report = compare_plans(file, searches, scales)
    for result in report.plans:
        result.folder = str(root / result.name)
        clock = searches[result.name].get("simulator_clock")
        result.simulator_clock = (
            None if clock is None else SimulatorClock.model_validate(scaled(clock, scales[result.name]))
        )
    report.not_measured = errors
    if predicted:  # set only when there are some: an unset list is not written (a rejudge's file equals it)
        report.predicted_plans = [PlanResult.model_validate(row) for row in predicted]
    root.mkdir(parents=True, exist_ok=True)
    (root / CAPACITY_FILE).write_text(json.dumps(report.to_json(), indent=2) + "\n")
    if report.plans:
        print(format_comparison(report))
    for line in predicted_lines(predicted):
        print(line)
    factors = sorted({k for name, k in scales.items() if name in searches and k != 1})
    if factors:
        shown = ", ".join(f"{k:g}x" for k in factors)
        print(
            f"simulated at {shown}: latencies and throughputs shown in real-time (deployment) terms; "
            "the plan folders hold the measured wall-clock numbers"
        )
    for name, error in errors.items():
        print(f"{name}: {error}" if error.startswith("not predicted") else f"{name}: not measured: {error}")
    print(f"capacity.json: {root / CAPACITY_FILE}")
    _decision_page(root)
    if errors:
        return 2
    if report.withheld:
        return WITHHELD
    return 0 if report.cheapest is not None else NO_PLAN_MEETS
