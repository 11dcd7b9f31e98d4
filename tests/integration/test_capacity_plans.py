"""``llm-locust capacity`` over three simulated deployment plans whose capacities are known.

Engine-mode simulators with a decode step of ``10 + s x running`` ms and an SLO of
``tpot_p90<=0.095s``: plan A (``s = 20``) holds 4 users, plan B (``s = 10``) 8, plan C (two
replicas like A, round robin) 8. Measured P90 TPOT of B: 90.6 ms at 8 users, 100.1 at 9 (a
P50 sits lower, 95.6 at 9: a closed-loop user is out of the batch between two requests). For a
demand of 6 concurrent A fails, B and C meet it, and C (2 GPUs at $2/h) is cheaper than B (4 GPUs).
The three plans are searched at once (``--parallel 3``, as ``llm-locust demo`` does).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.locustproc import llm_locust_cli
from tests.simproc import running_sim

ENGINE = ("--mode", "engine", "--max-num-seqs", "64", "--decode-base-ms", "10")
ENGINE += ("--prefill-ms-per-token", "0.01", "--output-tokens", "5")

PLANS = """
demand: {{concurrency: 6}}
slo: "success>=90%,tpot_p90<=0.095s"
workload: {{prompt_tokens: 16, max_tokens: 5}}
search: {{min: 4, step_time: 5s, warmup: 0.5s}}
plans:
  - {{name: A, endpoints: [{a}], gpus: 1, gpu_hour_cost: 2}}
  - {{name: B, endpoints: [{b}], gpus: 4, gpu_hour_cost: 2}}
  - {{name: C, endpoints: [{c1}, {c2}], gpus: 2, gpu_hour_cost: 2}}
"""


@pytest.mark.slow
# B's boundary (P90 TPOT 90.6 ms at 8 users, 100.1 at 9) moves when the client is slow to send a
# user's next request (the user is out of the batch longer: 9 passed in a parallel run): alone
@pytest.mark.serial
def test_capacity_compares_three_plans_and_picks_the_cheapest_that_meets_the_demand(tmp_path: Path) -> None:
    out = tmp_path / "cap"
    with (
        running_sim(*ENGINE, "--decode-ms-per-seq", "20") as a,
        running_sim(*ENGINE, "--decode-ms-per-seq", "10") as b,
        running_sim(*ENGINE, "--decode-ms-per-seq", "20", "--replicas", "2") as c,
    ):
        c1, c2 = c.split(",")
        plans = tmp_path / "plans.yaml"
        plans.write_text(PLANS.format(a=a, b=b, c1=c1, c2=c2))
        res = llm_locust_cli(
            "capacity", str(plans), "--results-dir", str(out), "--parallel", "3", timeout=400
        )
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
        assert "Traceback" not in res.stdout + res.stderr
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


def test_a_bad_plan_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    plans = tmp_path / "plans.yaml"
    plans.write_text(
        PLANS.format(a="http://a:1", b="http://b:1", c1="http://c:1", c2="http://c:2").replace(
            "gpus: 4", "gpu_count: 4"
        )
    )
    res = llm_locust_cli("capacity", str(plans), "--results-dir", str(tmp_path / "out"))
    assert res.returncode == 2 and res.stdout == "" and "Traceback" not in res.stderr
    assert res.stderr.strip().count("\n") == 0
    assert res.stderr.startswith(f"llm-locust capacity: error: {plans}: plans[1].gpu_count: unknown key")
    missing = llm_locust_cli("capacity", str(tmp_path / "nope.yaml"), "--results-dir", str(tmp_path / "out"))
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "nope.yaml" in missing.stderr
    assert not (tmp_path / "out").exists()
