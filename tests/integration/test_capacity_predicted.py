"""``predict_from:`` plans: predicted from a measured plan's search, shown beside its measured twin.

Engine-mode simulators with a decode step of ``10 + 20 x running`` ms, 12-token answers and an
SLO of ``tpot_p90<=0.100s``: one replica holds 4 users (90 ms at 4, 110 at 5), two hold 8, each
user kept on the least-loaded replica for its life (4 + 4 at 8, 5 + 4 at 9). Plan A (one replica)
is measured; C is the same engine on two replicas, measured too; A2 is ``predict_from: A`` with
``replicas: 2`` (predicted behind the search's balancer), never sent a request. Its predicted
capacity must land where C's measurement did and be shown marked as predicted, with its
interval, in capacity.json, the table and capacity.html, and never be named as the answer.

The boundaries are 10 % either side of the line on purpose. With 5-token answers, round robin
per request and a 95-ms line the measured twin sat near the line (C 8 or 9 by the run) and the
model's p90 at 4 a replica came within 5 % of it: the twin fell outside the predicted interval in
two of three runs on 2026-12-03 (7..7 and 6..7 against 8). Over sockets a closed-loop user misses
about one step between two requests, which pulls a measured p90 below the full batch's step (A:
p90 100-102 ms at 5 users with 5-token answers); 12-token answers halve that.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.locustproc import llm_locust_cli
from tests.simproc import running_sim

ENGINE = ("--mode", "engine", "--max-num-seqs", "64", "--decode-base-ms", "10")
ENGINE += ("--prefill-ms-per-token", "0.01", "--output-tokens", "12", "--decode-ms-per-seq", "20")

PLANS = """
demand: {{concurrency: 6}}
slo: "success>=90%,tpot_p90<=0.100s"
workload: {{input_tokens: 16, output_tokens: 12, max_tokens: 12}}
search: {{min: 4, step_time: 5s, warmup: 0.5s, balance: least-in-flight, balance_scope: user}}
plans:
  - {{name: A, endpoints: [{a}], gpus: 1, gpu_hour_cost: 2}}
  - {{name: C, endpoints: [{c1}, {c2}], gpus: 2, gpu_hour_cost: 2}}
  - {{name: A2, predict_from: A, replicas: 2, gpus: 2, gpu_hour_cost: 1}}
"""


@pytest.mark.slow
@pytest.mark.serial  # the boundary depends on the client sending a user's next request at once
def test_a_predicted_plan_lands_beside_its_measured_twin(tmp_path: Path) -> None:
    out = tmp_path / "cap"
    with running_sim(*ENGINE) as a, running_sim(*ENGINE, "--replicas", "2") as c:
        c1, c2 = c.split(",")
        plans = tmp_path / "plans.yaml"
        plans.write_text(PLANS.format(a=a, c1=c1, c2=c2))
        # the two measured plans are searched at once (two load processes on two cores, as
        # test_decision_page's three and test_capacity_workers' two are): C's search, not A's and C's
        cmd = ("capacity", str(plans), "--results-dir", str(out), "--parallel", "2")
        res = llm_locust_cli(*cmd, timeout=500)
    text = res.stdout + res.stderr
    assert res.returncode == 0, text[-4000:]
    assert "Traceback" not in text
    report = json.loads((out / "capacity.json").read_text())
    measured = {p["name"]: p for p in report["plans"]}
    assert set(measured) == {"A", "C"}  # the predicted plan is not among the measured ones
    (row,) = report["predicted_plans"]
    assert row["name"] == "A2" and row["replicas"] == 2
    p = row["predicted"]
    assert p["from"] == "A" and p["runs"] == [str(out / "A")]
    low, high = p["interval"]
    assert low <= row["capacity"] <= high
    twin = measured["C"]["search"]["capacity"]
    # what a prediction promises is its interval (bootstrap draws of the fitted model): the measured
    # twin lies inside it, and the point within 2 users. Before this test's boundaries were moved
    # 10 % from the line (module docstring), a fit of 12.4 + 20.1 x running ms gave 92.7 ms at 4 a
    # replica against a 95-ms line (draws 91.5..95.2) and predicted 6 for a measured 8.
    assert (p["balance"], p["balance_scope"]) == ("least-in-flight", "user")  # the search's balancer
    assert low <= twin <= high, (twin, p)
    assert abs(row["capacity"] - twin) <= 2, (row["capacity"], twin, p)
    # the model it came from was calibrated on A's folder alone, and is kept beside the prediction
    model = yaml.safe_load((out / "A2" / "model.yaml").read_text())
    assert model["runs"] == [str(out / "A")]
    assert not (out / "A2" / "requests.jsonl").exists()
    # cheaper than C ($2/h against $4/h) and predicted to meet the demand: still never the answer
    assert report["cheapest"] == "C", report["answer"]
    # the table: a marked row with its range, and the sentence saying it is not measured
    assert "~A2".ljust(20) + "A".ljust(18) in res.stdout  # the name column is 20 wide, the from column 18
    assert f"{low:g}..{high:g}" in res.stdout
    assert "~A2: PREDICTED from A (not measured)" in res.stdout
    # the decision page
    page = (out / "capacity.html").read_text()
    assert "Predicted plans (not measured)" in page and "A2 <b>(predicted)</b>" in page
    assert f"({low:g} to {high:g})" in page
