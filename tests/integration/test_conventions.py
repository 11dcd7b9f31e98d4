"""Conventions users bring from other tools (issue 27 §4), through real runs against the simulator:
``--percentiles`` as ``vllm bench serve --metric-percentiles``, ``-u`` beside ``--ramp``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from llm_locust.config.build import build_config, load_warnings
from tests.locustproc import expect_exit, llm_locust_cli, run_locust
from tests.records import linear_percentile
from tests.simproc import running_sim

SIM = ("--ttft-ms", "30", "--tpot-ms", "5", "--output-tokens", "6")
LIGHT = ("--prompt-tokens", "16", "--max-tokens", "6")
HOST = "http://127.0.0.1:9"


@pytest.mark.slow
def test_percentiles_reach_the_summary_the_text_and_a_rebuild(tmp_path: Path) -> None:
    results = tmp_path / "r"
    with running_sim(*SIM) as url:
        res = run_locust(
            url, *LIGHT, "--percentiles", "50,90,99,99.9", results_dir=results, users=2, run_time="3s"
        )
    expect_exit(res, 0)
    summary = res.summary
    assert summary["percentiles"] == [50, 90, 99, 99.9]
    measured = [r for r in res.rows if r["outcome"] == "ok" and not r.get("warmup") and not r.get("rampup")]
    assert len(measured) == summary["completed"] > 10
    timed = [r for r in measured if not r.get("client_stall_s")]  # stalled inside: latency left out
    assert len(timed) == summary["completed"] - summary["client_stalled"]
    ttft = [r["ttft"] * 1000 for r in timed]
    assert summary["p99.9_ttft_ms"] == pytest.approx(linear_percentile(ttft, 99.9), rel=1e-6)
    printed = [line.split() for line in res.stdout.splitlines() if line.startswith("P99.9 TTFT")]
    assert len(printed) == 1 and float(printed[0][-1]) == pytest.approx(summary["p99.9_ttft_ms"], abs=0.006)
    # `llm-locust summarize` rebuilds the same keys from the folder (the option is in run.json)
    folder = tmp_path / "copy"
    shutil.copytree(results, folder)
    (folder / "summary.json").unlink()
    expect_exit(llm_locust_cli("summarize", str(folder), timeout=120), 0)
    rebuilt = json.loads((folder / "summary.json").read_text())
    assert rebuilt["p99.9_ttft_ms"] == summary["p99.9_ttft_ms"]


@pytest.mark.slow
def test_users_beside_a_ramp_warns_once_that_the_ramp_decides(tmp_path: Path) -> None:
    with running_sim(*SIM) as url:
        res = run_locust(url, *LIGHT, "--ramp", "1,2", "--step-time", "1s", users=5, run_time=None)
    expect_exit(res, 0)
    warned = [line for line in res.stderr.splitlines() if "-u/--users 5 is ignored" in line]
    assert warned == [
        "llm-locust: warning: -u/--users 5 is ignored: --ramp decides the number of users of each stage"
    ]


def test_load_warnings_name_the_model_that_decides() -> None:
    def warns(**values: str) -> list[str]:
        return load_warnings(build_config({"host": HOST, **values}))

    assert warns(num_users="3") == []  # -u alone decides
    assert warns(ramp="1,2") == []  # the ramp alone
    assert warns(ramp="1,2", num_users="3") == [
        "-u/--users 3 is ignored: --ramp decides the number of users of each stage"
    ]
    assert warns(search="users", slo="success>=99%", num_users="3")[0].endswith(
        "--search users decides the number of users of each stage"
    )
    assert warns(request_rate="2", num_users="3") == []
