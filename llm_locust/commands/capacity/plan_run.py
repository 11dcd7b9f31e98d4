"""One plan's search for ``llm-locust capacity``: its ``llm-locust run`` arguments (the plan
file's SLO, demand, workload and search, durations and thresholds divided by a simulated
target's speedup K), the run itself with its progress lines, and the finished search read back
from the plan's folder (``plan-args.json`` holds the exact command: a folder whose finished
search was made with the same command is not run again)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from llm_locust.commands.capacity.host import Progress, master_port_args, stop_run, worker_args
from llm_locust.commands.capacity.sim_clock import clock_text, sim_clock
from llm_locust.config.demand import DemandKind
from llm_locust.config.plans import Plan, PlanFile
from llm_locust.config.slo import scaled_slo
from llm_locust.config.stage_kind import StageKind
from llm_locust.config.think import parse_think_time
from llm_locust.load.plan import search_demand
from llm_locust.load.search import start_near
from llm_locust.results.capacity import bracket
from llm_locust.results.capacity_model import PlanResult, SimulatorClock
from llm_locust.results.plans import plan_result
from llm_locust.results.search_model import SearchResult
from llm_locust.results.summary_model import RunSummary

__all__ = ["ARGS_FILE", "PlanSearched", "first_level", "plan_search", "run_args"]

ARGS_FILE = "plan-args.json"


def _flag(args: list[str], flag: str, value: object) -> None:
    if value is not None:
        args += [flag, str(value)]


def run_args(file: PlanFile, plan: Plan, folder: Path, k: float, workers: int | None = None) -> list[str]:
    """The ``llm-locust run`` arguments of ``plan`` (durations and thresholds divided by ``k``), in
    one load process or on a master with ``workers`` local workers (its port is chosen at launch)."""
    search, workload, demand = file.search, file.workload, file.demand
    args = ["--host", plan.endpoints[0], "--endpoints", ",".join(plan.endpoints), "--headless"]
    args += ["--search", search.kind.value, "--slo", scaled_slo(file.slo, k)]
    rate = k if search.kind is StageKind.RATE else 1.0
    minimum = search.min if search.min is not None else first_level(file)
    _flag(args, "--search-min", None if minimum is None else f"{minimum * rate:g}")
    _flag(args, "--search-max", None if search.max is None else f"{search.max * rate:g}")
    args += ["--search-precision", f"{search.precision:g}", "--search-max-steps", str(search.max_steps)]
    settled = search.settled_precision
    _flag(args, "--search-settled-precision", None if settled is None else f"{settled:g}")
    args += ["--search-extensions", str(search.extensions)]
    args += ["--step-time", f"{search.step_time / k:g}s", "--warmup", f"{search.warmup / k:g}s"]
    args += ["--balance", search.balance.value, "--balance-scope", search.balance_scope.value]
    think = workload.think_time or (demand.think if demand.kind is DemandKind.USERS else None)
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
    (:func:`~llm_locust.load.search.start_near`) when it is in the search's unit
    (:func:`~llm_locust.load.plan.search_demand`, the rule ``llm-locust run`` applies to
    ``--demand``), else ``llm-locust run``'s own default."""
    kind = file.search.kind
    demand = search_demand(kind, file.demand, bool(file.workload.think_time or file.demand.think))
    if demand is None:
        return None
    level = start_near(demand)
    return max(level, 1.0) if kind is StageKind.USERS else level


def _demand_text(file: PlanFile, k: float) -> str:
    demand = file.demand
    if demand.kind is DemandKind.RATE:
        return f"rate={demand.value * k:g}"
    if demand.kind is DemandKind.CONCURRENCY:
        return f"concurrency={demand.value:g}"
    return f"users={demand.users}"  # the think time goes in --think-time, already scaled


@dataclass(frozen=True)
class PlanSearched:
    """One plan's search as the comparison reads it: its finished search (``None``: not measured,
    ``error`` says why) and its simulators' own clocks after it (wall clock; ``None``: a real target)."""

    name: str
    search: SearchResult | None
    error: str = ""
    clock: SimulatorClock | None = None


def _finished(folder: Path, args: list[str] | None) -> SearchResult | None:
    """The finished search of ``folder`` if it was made with ``args`` (``None``: whatever made
    it, a plan measured elsewhere: ``--no-run``), else ``None`` (a summary this version does not
    read as one, too)."""
    try:
        same = args is None or json.loads((folder / ARGS_FILE).read_text()) == args
        summary = RunSummary.model_validate_json((folder / "summary.json").read_bytes())
    except (OSError, ValueError):  # pydantic's ValidationError is a ValueError
        return None
    search = summary.search
    if not same or summary.interrupted or search is None or search.stop_reason is None:
        return None
    return search


def _run(name: str, folder: Path, args: list[str], progress: Progress) -> tuple[int, str]:
    """Run one plan's search, printing its progress (a sped-up target's run, given
    ``--target-speedup K``, composes its search lines in deployment time:
    :mod:`llm_locust.results.search_progress`); (exit code, last error line)."""
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
                    progress.say(name, message)
                    if message.startswith("error"):
                        error = message
            code = proc.wait()
        finally:  # interrupted (SIGINT, or SIGTERM: see host.exit_on_sigterm): the run stops too
            stop_run(proc)
            progress.running.discard(proc)
    return code, error


def _capacity_text(file: PlanFile, search: SearchResult, result: PlanResult | None) -> str:
    """The plan's capacity as the table and its verdict say it (one number, one unit)."""
    if result is None:
        return str(search.withheld)
    if result.capacity is None:
        return "no level was shown to meet the SLO"
    return f"capacity {bracket(file.demand.kind, result.capacity, result.capacity_below)}"


def plan_search(
    file: PlanFile,
    root: Path,
    number: int,
    plan: Plan,
    k: float,
    progress: Progress,
    rerun: bool = False,
    workers: int | None = None,
    no_run: bool = False,
) -> PlanSearched:
    """One plan's search (or the finished one in its folder)."""
    folder = root / plan.name
    plan_args = run_args(file, plan, folder, k, workers)
    head = f"plan {number}/{sum(1 for p in file.plans if not p.predicted)}"
    done = None if rerun else _finished(folder, None if no_run else plan_args)
    if done is not None:
        progress.say(plan.name, f"{head}: {'measured' if no_run else 'finished'} before, not run again")
        return PlanSearched(plan.name, done)
    if no_run:
        error = f"{folder} holds no finished search (--no-run runs none)"
        progress.say(plan.name, f"not measured: {error}")
        return PlanSearched(plan.name, None, error)
    scaled = f" (simulated at {k:g}x: latencies below are x{k:g}, in deployment time)" if k != 1 else ""
    progress.say(plan.name, f"{head}: searching{scaled}, results in {folder}")
    code, error = _run(plan.name, folder, plan_args, progress)
    search = _finished(folder, plan_args)
    if search is None:
        error = error or f"the run ended with exit code {code} before its search did"
        progress.say(plan.name, f"not measured: {error}")
        return PlanSearched(plan.name, None, error)
    result = None if search.withheld else plan_result(plan, file.demand, search, k)
    progress.say(plan.name, f"done: {_capacity_text(file, search, result)}; stopped: {search.stop}")
    if k == 1:
        return PlanSearched(plan.name, search)
    clocks = {url: sim_clock(url) for url in plan.endpoints}
    text, behind = clock_text(clocks, result is not None and result.capacity is not None)
    if text:
        progress.say(plan.name, text)
    return PlanSearched(plan.name, search, clock=SimulatorClock(endpoints=clocks, fell_behind=behind))
