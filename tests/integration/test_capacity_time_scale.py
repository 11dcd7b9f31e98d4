"""One time scale per file (issue 22 build §5) with a real ``llm-locust capacity`` against a
simulator at ``--speedup 10``: capacity.json all deployment time, the plan folder's files the
measured wall clock (and saying so), its report.html in deployment time with a note."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.locustproc import llm_locust_cli
from tests.simproc import running_sim

ENGINE = ("--mode", "engine", "--max-num-seqs", "64", "--decode-base-ms", "10", "--speedup", "10")
ENGINE += ("--prefill-ms-per-token", "0.01", "--output-tokens", "5", "--decode-ms-per-seq", "20")

PLANS = """
demand: {{concurrency: 4}}
slo: "success>=90%,e2e_p95<=20s"
workload: {{prompt_tokens: 16, max_tokens: 5}}
search: {{min: 4, max: 8, step_time: 40s, warmup: 5s, max_steps: 2}}
plans:
  - {{name: A, endpoints: [{a}], gpus: 1, gpu_hour_cost: 2}}
"""


@pytest.mark.slow
def test_capacity_json_is_deployment_time_and_the_plan_report_says_so(tmp_path: Path) -> None:
    out = tmp_path / "cap"
    with running_sim(*ENGINE) as url:
        plans = tmp_path / "plans.yaml"
        plans.write_text(PLANS.format(a=url))
        res = llm_locust_cli("capacity", str(plans), "--results-dir", str(out), timeout=300)
    assert res.returncode in (0, 3), res.stdout[-3000:] + res.stderr[-3000:]
    report = json.loads((out / "capacity.json").read_text())
    assert report["time_scale"]["clock"] == "deployment" and report["time_scale"]["speedups"] == {"A": 10.0}
    summary = json.loads((out / "A" / "summary.json").read_text())
    assert summary["config"]["time_scale"] == {"clock": "wall", "target_speedup": 10.0}
    stages = {s["index"]: s for s in summary["stages"]}
    steps = report["plans"][0]["steps"]
    assert steps
    for step in steps:
        wall = stages[step["index"]]
        e2e = next(t for t in step["terms"] if t["name"] == "e2e_p95")
        # one scale: the step's own P95 and its SLO term agree, both 10x the measured wall clock
        assert step["p95_e2el_ms"] == pytest.approx(e2e["value"] * 1000)
        assert step["p95_e2el_ms"] == pytest.approx(wall["p95_e2el_ms"] * 10)
        assert step["p95_ttft_ms"] == pytest.approx(wall["p95_ttft_ms"] * 10)
        assert step["request_throughput"] == pytest.approx(wall["request_throughput"] / 10)
        assert e2e["objective"] == "e2e_p95<=20s" and e2e["threshold"] == pytest.approx(20.0)
    page = (out / "A" / "report.html").read_text()
    assert re.search(r"<strong>Deployment time\.</strong> Measured A against a target 10x faster", page)
