"""``llm-locust capacity`` over three simulated deployment plans whose capacities are known, and
its ``capacity.html`` opened by headless Chromium with no network: one comparison, checked by
every test here (it was two: test_capacity_plans ran the same three plans on the same
simulators, 35-40 s of the serial part each).

Engine-mode simulators with a decode step of ``10 + 20 x running`` ms, 12-token answers and an
SLO of ``tpot_p90<=0.095s``: 4 running sequences take 90 ms a step, 5 take 110. Plan A (one
replica) holds 4 users; plan B (two replicas of 2 GPUs, 4 GPUs) and plan C (two replicas of 1 GPU)
hold 8, each user kept on the least-loaded replica for its life (5 + 4 at 9 users). A closed-loop
user is out of the batch for about a step between two requests, longer when its load process is
slow to send the next, so a level's P90 sits below its full batch's step; 12-token answers (13
steps a request) keep that small. B was one replica of ``10 + 10 x running`` ms with 5-token
answers (90 ms at 8 users, 100 at 9): with each read timed by the kernel's receive stamp (the
client's own lag no longer added to TPOT) it read 92.3-97.4 ms at 9 users in this test's three
parallel plans (2026-12-02), a pass on a busy host. The SLO's TTFT and E2E lines (P95 under 1 s
and 2 s; a request takes about 1.2 s at 8 users) bind no plan at its capacity; the page draws
them. For a demand of 6 concurrent A fails, B and C meet it, and C (2 GPUs at $2/h) is cheaper
than B (4 GPUs). The three plans are searched at once (``--parallel 3``, as ``llm-locust demo``
does). The page must load nothing, raise no script error, and draw
every chart with the numbers of ``capacity.json`` (computed here from the file, not from the
page's modules). The module runs beside test_capacity_workers (both ``paired``: Makefile); three
times so on 2026-12-03 16:52-16:56 UTC, TPOT P90 A at 4 users 90.0-90.1 ms, B at 8 86.4-86.5 and
at 9 108.2: as alone.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.browser import NetworkTrap, chromium_binary, dump_dom, echarts_state, screenshot
from tests.locustproc import BIN, REPO, env, llm_locust_cli
from tests.simproc import running_sim

ARTIFACTS = REPO / "test-artifacts"
ENGINE = ("--mode", "engine", "--max-num-seqs", "64", "--decode-base-ms", "10")
ENGINE += ("--prefill-ms-per-token", "0.01", "--output-tokens", "12")
PLANS = """
demand: {{concurrency: 6}}
slo: "success>=90%,ttft_p95<=1s,e2e_p95<=2s,tpot_p90<=0.095s"
workload: {{prompt_tokens: 16, max_tokens: 12}}
search: {{min: 4, step_time: 5s, warmup: 0.5s, balance: least-in-flight, balance_scope: user}}
plans:
  - {{name: A, endpoints: [{a}], gpus: 1, gpu_hour_cost: 2}}
  - {{name: B, endpoints: [{b1}, {b2}], gpus: 4, gpu_hour_cost: 2}}
  - {{name: C, endpoints: [{c1}, {c2}], gpus: 2, gpu_hour_cost: 2}}
"""

PAUSE_S = 1.5  # longer than a health interval (1 s): the step's client health reads it

pytestmark = [
    pytest.mark.slow,
    # a boundary moves when the client is slow to send a user's next request (the user is out of
    # the batch longer: B's one replica read 9 users in a parallel run, with the loop's stamps): not
    # in the parallel part; beside test_capacity_workers only, whose processes are light as these are
    pytest.mark.serial,
    pytest.mark.paired,
]
needs_chromium = pytest.mark.skipif(chromium_binary() is None, reason="needs Debian's chromium")


class Comparison:
    def __init__(
        self,
        root: Path,
        plans: Path,
        urls: list[str],
        res: subprocess.CompletedProcess[str],
        pause: tuple[float, float],
    ) -> None:
        self.root, self.plans, self.urls, self.res, self.stdout = root, plans, urls, res, res.stdout
        self.pause = pause  # when plan A's load process was held (SIGSTOP), wall clock
        self.report = json.loads((root / "capacity.json").read_text())


@pytest.fixture(scope="module")
def comparison(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("decision")
    with (
        running_sim(*ENGINE, "--decode-ms-per-seq", "20") as a,
        running_sim(*ENGINE, "--decode-ms-per-seq", "20", "--replicas", "2") as b,
        running_sim(*ENGINE, "--decode-ms-per-seq", "20", "--replicas", "2") as c,
    ):
        (b1, b2), (c1, c2) = b.split(","), c.split(",")
        plans = tmp / "plans.yaml"
        plans.write_text(PLANS.format(a=a, b1=b1, b2=b2, c1=c1, c2=c2))
        cmd = [str(BIN / "llm-locust"), "capacity", str(plans), "--results-dir", str(tmp / "cap")]
        res, pause = _run_pausing([*cmd, "--parallel", "3"], tmp / "cap" / "A", tmp)
        assert res.returncode in (0, 3), res.stdout[-3000:] + res.stderr[-3000:]
        assert "Traceback" not in res.stdout + res.stderr
        yield Comparison(tmp / "cap", plans, [a, b1, b2, c1, c2], res, pause)


def _run_pausing(
    cmd: list[str], folder: Path, tmp: Path, timeout: float = 400.0
) -> tuple[subprocess.CompletedProcess[str], tuple[float, float]]:
    """Run the comparison, and pause plan A's load process (SIGSTOP, as a GC pause or a throttled
    pod would) for ``PAUSE_S`` inside its second step's window: a real invalid step."""
    err = tmp / "capacity.stderr"
    with err.open("w") as err_file:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=err_file, text=True, env=env(), cwd=str(REPO)
        )
        killer = threading.Timer(timeout, proc.kill)  # bounded, whatever happens
        killer.start()
        lines: list[str] = []
        pause = (0.0, 0.0)
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line)
                if pause == (0.0, 0.0) and re.search(r"\[A\] search step 2: ", line):
                    pause = _pause(proc.pid, folder)
            code = proc.wait()
        finally:
            killer.cancel()
    return subprocess.CompletedProcess(cmd, code, "".join(lines), err.read_text()), pause


def _pause(parent: int, folder: Path) -> tuple[float, float]:
    """SIGSTOP the plan's ``llm-locust run`` (found by its results folder) for ``PAUSE_S``, after the
    step's warm-up; the wall-clock span of the pause."""
    time.sleep(1.0)  # the warm-up is 0.5 s: the pause falls inside the measured window
    run = next(
        p for p in psutil.Process(parent).children(recursive=True) if str(folder) in " ".join(p.cmdline())
    )
    start = time.time()
    os.kill(run.pid, signal.SIGSTOP)
    try:
        time.sleep(PAUSE_S)
    finally:
        os.kill(run.pid, signal.SIGCONT)
    return start, time.time()


def _values(series: dict[str, Any]) -> list[Any]:
    return [item["value"] if isinstance(item, dict) else item for item in series["data"]]


def _series(chart: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in chart["series"] if s["name"] == name)


def _open(page: Path, shot: str) -> dict[str, Any]:
    url = page.resolve().as_uri()
    with NetworkTrap() as trap:
        dom = dump_dom(url, budget_ms=4000, flags=trap.flags)
        screenshot(url, ARTIFACTS / shot, size=(1366, 5200), budget_ms=4000, flags=trap.flags)
    assert trap.page_requests == [], trap.page_requests  # nothing left the file (the browser's own aside)
    state, errors, resources = echarts_state(dom)
    assert errors == [] and resources == []
    for key, chart in state.items():
        assert chart["drawn"] > 5 and sum(s["points"] for s in chart["series"]) > 0, key
    return state


def _tpot_p90(step: dict[str, Any]) -> float:
    return next(t["value"] for t in step["terms"] if t["name"] == "tpot_p90")


def _load(plan: dict[str, Any], step: dict[str, Any]) -> float:
    """A step's load in the demand's unit (concurrency here): its level when the search ran in that
    unit (users that do not think: capacity.json's by_level), else its mean in flight."""
    return float(step["level"] if plan.get("by_level") else step["mean_in_flight"])


@needs_chromium
def test_capacity_writes_a_decision_page_drawn_with_the_runs_numbers(comparison: Comparison) -> None:
    report, root = comparison.report, comparison.root
    assert f"capacity.html: {root / 'capacity.html'}" in comparison.stdout
    state = _open(root / "capacity.html", "capacity.png")
    plans = report["plans"]
    assert [p["name"] for p in plans] == ["A", "B", "C"]
    # capacity against the demand: the bar is the capacity, the bracket ends at the lowest step not passed
    bars = _values(_series(state["capacity"], "capacity (highest pass)"))
    assert bars == [pytest.approx(p["capacity"], abs=1e-3) for p in plans]
    bracket = _values(state["capacity"]["series"][1])
    expected = [
        [x, p["capacity"], _load(p, p["upper_step"])]
        for x, p in enumerate(plans)
        if p["capacity"] is not None and p["upper_step"] is not None
    ]
    assert [b[:3] for b in bracket] == [
        [x, pytest.approx(lo, abs=1e-3), pytest.approx(hi, abs=1e-3)] for x, lo, hi in expected
    ]
    demand = state["capacity"]["series"][0]
    assert demand["points"] == 3
    # the searches visited levels out of order (4, 8, 6, ...): the lines below must not follow that order
    assert any([s["level"] for s in p["steps"]] != sorted(s["level"] for s in p["steps"]) for p in plans)
    for i, plan in enumerate(plans):
        steps = sorted(plan["steps"], key=lambda s: (s["level"], s["index"]))
        valid = [s for s in steps if s["verdict"] != "invalid"]
        for metric in ("ttft", "e2e"):
            chart = state[f"latency-{metric}-{i}"]
            line = _values(_series(chart, f"{metric.upper()} P95"))
            want = [
                [s["mean_in_flight"], next(t["value"] for t in s["terms"] if t["name"] == f"{metric}_p95")]
                for s in valid
            ]
            assert line == [[pytest.approx(x, abs=1e-3), pytest.approx(y, abs=1e-3)] for x, y in want]
        # cost: the plan's $/hour over its output tokens per hour, at each valid step's load
        cost = _values(_series(state["cost"], plan["name"]))
        dollars = plan["gpu_hour_cost"] * plan["gpus"]
        assert cost == [
            [
                pytest.approx(_load(plan, s), abs=1e-3),
                pytest.approx(dollars / (s["output_throughput"] * 3600 / 1e6), abs=1e-3),
            ]
            for s in valid
        ]
        frontier = _values(_series(state["frontier"], plan["name"]))
        assert frontier == [
            [
                pytest.approx(1000 / s["median_tpot_ms"], abs=1e-3),
                pytest.approx(s["output_throughput"] / plan["gpus"], abs=1e-3),
            ]
            for s in valid
        ]
    # a pair's bar: its efficiency, or the low end of its range when a capacity is only bracketed
    pairs = {
        tuple(s["plans"]): (s.get("efficiency_range") or [s["efficiency"]])[0] for s in report["scaling"]
    }
    assert _values(state["scaling"]["series"][0]) == [
        pytest.approx(e * 100, abs=0.05) for e in pairs.values()
    ]
    page = (root / "capacity.html").read_text()
    for plan in plans:  # the table names each step's source: its plan folder and stage
        for s in plan["steps"]:
            assert f"{plan['name']}/summary.json stage {s['index']} ({s['label']})" in page


def test_a_paused_step_is_invalid_run_again_and_decides_nothing(comparison: Comparison) -> None:
    """Plan A's load process was paused for 1.5 s inside its second step (the fixture): that step is
    invalid (the client stalled), neither a pass nor a fail; the search ran its level again, and
    the plan's answer stands on valid steps only."""
    a = comparison.report["plans"][0]
    start, end = comparison.pause
    assert end - start >= PAUSE_S  # the pause happened
    paused = [s for s in a["steps"] if s["window"]["start"] <= start and end <= s["window"]["end"] + 1.0]
    assert len(paused) == 1, ([s["window"] for s in a["steps"]], comparison.pause)
    step = paused[0]
    assert step["verdict"] == "invalid" and step["invalidity"] == "client", step
    assert step["client"]["stall_s"] >= 1.0, step["client"]
    again = [s for s in a["steps"] if s["level"] == step["level"] and s["index"] > step["index"]]
    assert again, [(s["index"], s["level"], s["verdict"]) for s in a["steps"]]  # run again at its level
    assert a["decided_by"] and all(d["valid"] for d in a["decided_by"]), a["decided_by"]
    assert step["index"] not in {d["index"] for d in a["decided_by"]}
    assert a["decided_by_valid_steps"] is True
    assert f"[A] search: users={step['level']:g} invalid" in comparison.stdout, comparison.stdout[-3000:]


@needs_chromium
def test_invalid_and_inconclusive_steps_are_marked_and_explained(
    comparison: Comparison, tmp_path: Path
) -> None:
    """The real invalid step of A (paused), and a real inconclusive one: the comparison judged again
    (``rejudge``, no new load) with an E2E line at B's first step's own E2E P95, so that step's
    interval straddles it. Marked apart on the page, with their reasons."""
    b0 = comparison.report["plans"][1]["steps"][0]
    threshold = next(t["value"] for t in b0["terms"] if t["name"] == "e2e_p95")
    slo = f"success>=90%,ttft_p95<=1s,e2e_p95<={threshold!r}s,tpot_p90<=0.095s"
    res = llm_locust_cli("rejudge", str(comparison.root), "--slo", slo, "-o", str(tmp_path / "rj"))
    assert res.returncode in (0, 3) and "capacity.html" in res.stdout, res.stdout + res.stderr
    report = json.loads((tmp_path / "rj" / "capacity.json").read_text())
    a, b = report["plans"][0], report["plans"][1]
    assert b["steps"][0]["verdict"] == "inconclusive", b["steps"][0]
    assert next(t for t in b["steps"][0]["terms"] if t["name"] == "e2e_p95")["verdict"] == "inconclusive"
    state = _open(tmp_path / "rj" / "capacity.html", "capacity-marked.png")
    invalid = _series(state["latency-ttft-0"], "invalid step (not at its level)")
    held = sorted(
        (s for s in a["steps"] if s["verdict"] == "invalid"), key=lambda s: (s["level"], s["index"])
    )
    ttft = [next(t["value"] for t in s["terms"] if t["name"] == "ttft_p95") for s in held]
    assert any(s["invalidity"] == "client" for s in held)  # the paused one (a busy host may add others)
    assert _values(invalid) == [
        [pytest.approx(s["mean_in_flight"], abs=1e-3), pytest.approx(v, abs=1e-3)]
        for s, v in zip(held, ttft, strict=True)
    ]
    line = _series(state["latency-ttft-0"], "TTFT P95")
    assert len(line["data"]) == len(a["steps"]) - len(held)  # invalid steps are not joined
    marked = [
        p for p in _series(state["latency-e2e-1"], "E2E P95")["data"] if "step inconclusive" in p["name"]
    ]
    assert len(marked) == sum(s["verdict"] == "inconclusive" for s in b["steps"]), marked
    edited = next(p for p in marked if p["name"].startswith(f"{b['steps'][0]['label']} ("))
    assert edited["symbol"] == "diamond"  # its E2E line inconclusive
    page = (tmp_path / "rj" / "capacity.html").read_text()
    # escaped as the page escapes them (quotes too: "client stalled 1.5 s of the step's 5 s" is
    # written step&#x27;s, and the test looked for step's, failing whenever the pause was the reason)
    assert all(html.escape(s["reason"]) in page for s in held), [s["reason"] for s in held]
    assert html.escape(b["steps"][0]["reason"]) in page and "straddles" in page


def _served(urls: list[str]) -> float:
    """Requests the simulators finished (every finished reason, aborts too), from their /metrics."""
    total = 0.0
    for url in urls:
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as reply:
            text = reply.read().decode()
        total += sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("vllm:request_success_total")
        )
    return total


def _files(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _capacities(report: dict[str, Any]) -> dict[str, float]:
    """Each plan's capacity in users (the level of its highest pass), -1 when none passed."""
    return {
        p["name"]: -1.0 if p["capacity_step"] is None else p["capacity_step"]["level"]
        for p in report["plans"]
    }


def _scaled(slo: list[str], factor: float) -> str:
    """The SLO with each latency threshold times ``factor`` (written here, not by the code under test)."""
    out = []
    for line in slo:
        name, _, value = line.partition("<=")
        out.append(line if not value else f"{name}<={float(value.removesuffix('s')) * factor:g}s")
    return ",".join(out)


def test_rejudge_reproduces_the_comparison_and_moves_capacities_the_right_way(
    comparison: Comparison, tmp_path: Path
) -> None:
    root, report = comparison.root, comparison.report
    before, served = _files(root), _served(comparison.urls)
    assert served > 0  # the counter counts: the comparison's requests are in it
    slo = ",".join(report["slo"])
    same = llm_locust_cli(
        "rejudge", str(root), "--slo", slo, "--demand", "concurrency=6", "-o", str(tmp_path / "same")
    )
    assert same.returncode in (0, 3) and "Traceback" not in same.stderr, same.stderr
    again = json.loads((tmp_path / "same" / "capacity.json").read_text())
    assert again.pop("rejudged")["from"] == str(root)
    for plan in again["plans"]:
        plan.pop("unmeasured")
    assert again == report  # every number, verdict and sentence as the run wrote them
    assert (tmp_path / "same" / "capacity.html").stat().st_size > 100_000
    looser = llm_locust_cli(
        "rejudge", str(root), "--slo", _scaled(report["slo"], 1.5), "-o", str(tmp_path / "loose")
    )
    tighter = llm_locust_cli(
        "rejudge", str(root), "--slo", _scaled(report["slo"], 0.6), "-o", str(tmp_path / "tight")
    )
    assert looser.returncode in (0, 3) and tighter.returncode in (0, 3), looser.stderr + tighter.stderr
    loose = json.loads((tmp_path / "loose" / "capacity.json").read_text())
    tight = json.loads((tmp_path / "tight" / "capacity.json").read_text())
    base = _capacities(report)
    for name, level in base.items():
        assert _capacities(loose)[name] >= level and _capacities(tight)[name] <= level, (name, loose, tight)
    assert _capacities(loose) != _capacities(tight)  # the SLOs do move something
    assert loose["slo"] == _scaled(report["slo"], 1.5).split(",")
    for plan in loose["plans"]:  # a capacity above every measured failure is named as such
        if plan["upper_step"] is None and plan["capacity_step"] is not None:
            top = max(plan["steps"], key=lambda s: s["level"])["label"]
            assert plan["unmeasured"].endswith(f"no step above {top} was measured"), plan["unmeasured"]
    assert _files(root) == before  # DIR untouched
    assert _served(comparison.urls) == served  # and no request reached a simulator


def test_rejudge_bad_input_is_one_line(comparison: Comparison, tmp_path: Path) -> None:
    bad = llm_locust_cli("rejudge", str(comparison.root), "--slo", "e2e_p95<=", "-o", str(tmp_path / "x"))
    assert (
        bad.returncode == 2
        and bad.stderr.count("\n") == 1
        and bad.stderr.startswith("llm-locust rejudge: error: --slo")
    )
    inside = llm_locust_cli(
        "rejudge", str(comparison.root), "--slo", "e2e_p95<=1s", "-o", str(comparison.root / "x")
    )
    assert inside.returncode == 2 and "inside DIR" in inside.stderr and not (comparison.root / "x").exists()


def test_rejudge_of_one_run_folder_reproduces_its_search_and_writes_a_report(
    comparison: Comparison, tmp_path: Path
) -> None:
    folder = comparison.root / "A"
    original = json.loads((folder / "summary.json").read_text())
    slo = ",".join(json.loads((folder / "run.json").read_text())["slo"])
    res = llm_locust_cli("rejudge", str(folder), "--slo", slo, "-o", str(tmp_path / "a"))
    assert res.returncode in (0, 3) and "Traceback" not in res.stderr, res.stderr
    again = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert again["rejudged"]["from"] == str(folder) and again["rejudged"]["slo"] == slo.split(",")
    for key in ("steps", "highest_pass", "upper", "lowest_fail", "capacity", "stop", "sentence"):
        assert again["search"][key] == original["search"][key], key
    assert [s["verdict"] for s in again["stages"]] == [s["verdict"] for s in original["stages"]]
    assert (tmp_path / "a" / "report.html").stat().st_size > 100_000
    # a stricter TPOT line: no step passes any more, and the lowest level measured is named
    strict = llm_locust_cli("rejudge", str(folder), "--slo", "tpot_p90<=0.001s", "-o", str(tmp_path / "b"))
    valid = [s for s in original["search"]["steps"] if s["verdict"] != "invalid"]
    low = min(valid, key=lambda s: s["level"])["label"]
    strict_summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert strict_summary["search"]["capacity"] is None, strict.stdout[-2000:]
    assert f"below {low}: no step below {low} was measured" in strict.stdout


# last in the module: its second run (resumed) writes capacity.json again, after the tests above read it
def test_capacity_compares_three_plans_and_picks_the_cheapest_that_meets_the_demand(
    comparison: Comparison,
) -> None:
    out, plans, res = comparison.root, comparison.plans, comparison.res
    *_, c1, c2 = comparison.urls
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    again = llm_locust_cli("capacity", str(plans), "--results-dir", str(out), timeout=60)
    report = json.loads((out / "capacity.json").read_text())
    by = {p["name"]: p for p in report["plans"]}
    assert by["A"]["search"]["capacity"] == 4 and not by["A"]["meets"]
    assert by["B"]["search"]["capacity"] == 8 and by["B"]["meets"]
    assert by["C"]["search"]["capacity"] == 8 and by["C"]["meets"]
    assert report["cheapest"] == "C" and report["answer"].startswith("C is the cheapest plan that meets 6")
    for name in "ABC":  # every number is traceable to a measured stage of the plan's folder
        summary = json.loads((out / name / "summary.json").read_text())
        step = by[name]["capacity_step"]
        stage = summary["stages"][step["index"]]
        assert stage["label"] == step["label"] and stage["request_throughput"] == step["request_throughput"]
        assert (out / name / "requests.jsonl").stat().st_size > 0
    assert by["B"]["cost_per_million_at_capacity"] == pytest.approx(
        8.0 / (by["B"]["output_throughput"] * 3600 / 1e6)
    )
    assert by["C"]["replicas"] == 2 and set(
        json.loads((out / "C" / "summary.json").read_text())["replicas"]
    ) == {
        c1,
        c2,
    }
    assert "answer: C is the cheapest plan" in res.stdout and "[A] search step 1: users=4" in res.stdout
    lines = res.stdout.splitlines()  # searched at once: every plan's first step before any plan is done
    first_done = min(i for i, line in enumerate(lines) if "] done: capacity" in line)
    for name in "ABC":
        assert any(f"[{name}] search step 1: users=4 (start)" in line for line in lines[:first_done]), lines
    assert all(re.match(r"\[\d+:\d\d\] \[[ABC]\] ", line) for line in lines[:first_done]), lines
    # resumable: a finished plan is not run again
    assert again.returncode == 0 and again.stdout.count("finished before, not run again") == 3
    assert json.loads((out / "capacity.json").read_text())["cheapest"] == "C"
