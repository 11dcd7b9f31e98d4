"""``llm-locust capacity PLANS.yaml --results-dir DIR``: the capacity search against each plan.

For each deployment plan of the file (:mod:`llm_locust.config.plans`) this runs one headless
``llm-locust run --search ...`` against the plan's endpoints, with the file's SLO, demand and
workload, into ``DIR/<plan>/`` (its ``requests.jsonl``, ``summary.json``, ``run.log`` and
``plan-args.json``, the exact command). A plan whose folder holds a finished search made with the
same command is not run again, so an interrupted comparison resumes where it stopped. Then it
compares the plans (:mod:`llm_locust.results.plans`), prints the table and writes
``DIR/capacity.json``. The plans are searched one after the other, or up to ``--parallel N`` at once
(default: one per two cores of this host, :func:`.host.host_parallel`; each has its own targets and
its own ``llm-locust run``; a stopped comparison stops every run). Each plan's load runs in one
process, or with ``--workers N`` on a Locust master with N local worker processes, the plan folder's
files the same (:mod:`llm_locust.commands.capacity.host`: how plans share this host's cores; the
Kubernetes way, a Job per plan, is in docs/kubernetes.md). Progress is printed as it goes, ``[m:ss]
[plan] ...``: each step as the search starts and judges it (its verdict and the decision), each
plan's capacity when it is done. A search without ``search.min`` starts near the demand
(:func:`.plan_run.first_level`).

Simulated deployments: a target whose ``GET /version`` says it is ``llm-locust-sim`` with a
``speedup`` K runs K times faster than the deployment it models. The run is then given the
deployment's SLO, think time, step time and warm-up divided by K (rates multiplied by K), and every
number of the comparison is converted back: latencies x K, throughputs / K
(:mod:`llm_locust.results.timescale`). The table says so; ``capacity.json`` is all deployment time
(its ``time_scale`` block says so, with each plan's factor); each plan's folder keeps the measured
wall-clock numbers (its summary's ``config.options.time_scale`` is K) and its ``report.html`` is
drawn in deployment time, with a note on the page. After a simulated plan's search its simulators'
own clocks are read (``llm_sim_schedule_*`` on ``/metrics``, :func:`.sim_clock.sim_clock`): a
simulator that fell behind its schedule ran slow, which the progress line and ``capacity.json``
(``simulator_clock``, its seconds in deployment time too) say.

Exit codes: 0 some plan meets the demand, 3 none does, 6 the answer is withheld (a plan as cheap as
the answer stopped on a step invalid twice: the load generator saturated, or the host was
overloaded), 2 a bad plan file or a plan whose target could not be measured (the others are still
run and compared).
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from llm_locust.commands.capacity.host import (
    CORES_PER_PLAN,
    Progress,
    cores,
    exit_on_sigterm,
    host_parallel,
    oversubscribed,
    positive_int,
)
from llm_locust.commands.capacity.job_env import plan_env
from llm_locust.commands.capacity.plan_run import plan_search, run_args
from llm_locust.commands.capacity.predicted import check_predictable, predicted_rows
from llm_locust.commands.capacity.sim_clock import time_scale
from llm_locust.config.plans import PlanFile, PlanFileError, load_plan_file
from llm_locust.config.register import OneLineParser
from llm_locust.results.capacity_model import PlanResult, SimulatorClock
from llm_locust.results.plans import compare_plans, format_comparison
from llm_locust.results.predicted_plans import predicted_lines
from llm_locust.results.search_model import SearchResult
from llm_locust.results.summary_model import RunSummary
from llm_locust.results.timescale import scaled

__all__ = ["main"]

CAPACITY_FILE = "capacity.json"
NO_PLAN_MEETS = 3
#: A plan as cheap as the answer withheld its own (a step invalid twice): the comparison has none.
WITHHELD = 6


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
                plan_search,
                file,
                root,
                n,
                plan,
                scales[plan.name],
                progress,
                args.rerun,
                args.workers,
                args.no_run,
            )
            for n, plan in enumerate(measured, 1)
        ]
        done = [future.result() for future in futures]
    except BaseException:  # SIGINT, SIGTERM (exit_on_sigterm): every run stops, not only this thread's
        progress.stop_all()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    searches = {d.name: d.search for d in done if d.search is not None}
    errors = {d.name: d.error for d in done if d.search is None}
    clocks = {d.name: d.clock for d in done if d.clock is not None}
    predicted = predicted_rows(file, root, searches, errors, progress.say)
    return _report(file, root, searches, scales, errors, predicted, clocks)


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
        scale = RunSummary.model_validate_json((folder / "summary.json").read_bytes()).config.time_scale
    except (OSError, ValueError):  # pydantic's ValidationError is a ValueError
        return 1.0
    return 1.0 if scale is None else scale.target_speedup


def _decision_page(root: Path) -> None:
    """``capacity.html`` beside ``capacity.json``; a failure is one line, never the comparison's."""
    from llm_locust.report.decision_page import write_decision_page

    try:
        print(f"capacity.html: {write_decision_page(root)}")
    except Exception as exc:  # the comparison is on disk already: say so, do not fail
        print(f"capacity.html: not written: {type(exc).__name__}: {exc}")


def _plans(n: int) -> str:
    return "1 plan" if n == 1 else f"{n} plans"


def _report(
    file: PlanFile, root: Path, searches: dict[str, SearchResult], scales: dict[str, float],
    errors: dict[str, str], predicted: list[PlanResult], clocks: dict[str, SimulatorClock],
) -> int:  # fmt: skip
    report = compare_plans(file, searches, scales)
    for result in report.plans:
        result.folder = str(root / result.name)
        clock = clocks.get(result.name)  # its seconds in deployment time too
        result.simulator_clock = (
            None
            if clock is None
            else SimulatorClock.model_validate(scaled(clock.to_json(), scales[result.name]))
        )
    report.not_measured = errors
    if predicted:  # set only when there are some: an unset list is not written (a rejudge's file equals it)
        report.predicted_plans = predicted
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
