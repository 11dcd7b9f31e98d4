"""``predict_from:`` plans: predicted from a measured plan's search, shown beside its measured twin.

Engine-mode simulators with a decode step of ``10 + 20 x running`` ms and an SLO of
``tpot_p90<=0.095s`` (as in test_capacity_plans.py): one replica holds 4 users (90 ms at 4, 110
at 5), two behind round robin hold 8. Plan A (one replica) is measured; C is the same engine on
two replicas, measured too; A2 is ``predict_from: A`` with ``replicas: 2``, never sent a request.
Its predicted capacity must land where C's measurement did, within one user, and be shown
marked as predicted, with its interval, in capacity.json, the table and capacity.html, and never
be named as the answer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.locustproc import llm_locust_cli
from tests.simproc import running_sim

ENGINE = ("--mode", "engine", "--max-num-seqs", "64", "--decode-base-ms", "10")
ENGINE += ("--prefill-ms-per-token", "0.01", "--output-tokens", "5", "--decode-ms-per-seq", "20")

PLANS = """
demand: {{concurrency: 6}}
slo: "success>=90%,tpot_p90<=0.095s"
workload: {{input_tokens: 16, output_tokens: 5, max_tokens: 5}}
search: {{min: 4, step_time: 5s, warmup: 0.5s}}
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
    # twin lies inside it, and the point within 2 users (the fresh-clone make test of 2026-12-02
    # predicted 6, interval 6..8, for a measured 8). Why not within 1: the point hangs on the
    # model's TPOT p90 at 4 users a replica against the 95-ms SLO, 5 % above the engine's 90 ms (A
    # measured p95 90 ms at 4 users). A fit of 12.4 + 20.1 x running ms (base 2.4 ms high) gave 92.7
    # ms there, its 20 bootstrap draws 91.5..95.2: one over the SLO, which predicts 6. Within 1
    # needs the step at batch 4 to 5 %; the calibrator states decode_base within 3 % and the
    # per-sequence term within 10 % beyond their intervals (results/calibrate.py), up to 9 % at
    # batch 4. Moving the SLO to 100 ms does not help: over sockets a user's next request misses
    # the step that began as its last one ended (A measured p50/p95 86/90 ms at 4 users, 100/102 at
    # 5), the model's virtual clock keeps every user in every step (112.8 ms at 5), so the measured
    # p90 at 5 sits on 100 ms (a run on 2026-12-02 at load 13 measured C 10, predicted 8..8).
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
