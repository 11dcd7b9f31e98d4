"""``llm-locust capacity``'s plan file refused in one line. The comparison of three simulated plans
whose capacities are known is in test_decision_page.py (one run for it and its page).
"""

from __future__ import annotations

from pathlib import Path

from tests.locustproc import llm_locust_cli

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
