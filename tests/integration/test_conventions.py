"""Conventions users bring from other tools (issue 27 §4), through real runs against the simulator:
``--percentiles`` as ``vllm bench serve --metric-percentiles``, ``-u`` beside ``--ramp``,
``--num-requests`` as ``--num-prompts`` (exactly N, distributed too)."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from llm_locust.config.build import ConfigError, build_config, load_warnings
from llm_locust.runtime.quota import share
from tests.locustproc import LocustResult, expect_exit, llm_locust_cli, run_distributed, run_locust
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


# -- --num-requests N (as vllm bench serve --num-prompts) ------------------------------------------


def _exactly(res: LocustResult, n: int) -> None:
    expect_exit(res, 0)
    rows = res.rows
    assert len(rows) == n, len(rows)  # every request of the test, none in flight at the stop
    assert res.summary["completed"] + res.summary["failed"] == n
    assert res.summary["incomplete"] == 0 and sum(res.summary["excluded"].values()) == 0


@pytest.mark.slow
def test_num_requests_sends_exactly_n_closed_and_open_loop(tmp_path: Path) -> None:
    """No -t: the run ends by itself once the N requests finished."""
    with running_sim(*SIM) as url:
        closed = run_locust(
            url, *LIGHT, "--num-requests", "7", results_dir=tmp_path / "c", users=3, run_time=None
        )
        opened = run_locust(
            url,
            *LIGHT,
            "--num-requests",
            "9",
            "--request-rate",
            "20",
            results_dir=tmp_path / "o",
            users=None,
            run_time=None,
            spawn_rate=None,
        )
    _exactly(closed, 7)
    _exactly(opened, 9)
    assert all(r["send_lag"] is not None for r in opened.rows)  # sent on the arrival schedule


@pytest.mark.slow
def test_num_requests_distributed_the_master_counts(tmp_path: Path) -> None:
    """Two workers send 5 and 4 of 9 (their shares); the master stops once all 9 reached it."""
    with running_sim(*SIM) as url:
        res = run_distributed(
            url, *LIGHT, "--num-requests", "9", results_dir=tmp_path / "d", workers=2, users=4, run_time="60s"
        )
    _exactly(res, 9)
    by_worker = sorted(Counter(r["worker"] for r in res.rows).values())
    assert by_worker == [4, 5], by_worker
    assert res.summary["duration"] < 30  # ended by the count, not by -t


@pytest.mark.slow
def test_num_requests_with_a_worker_without_users_is_refused(tmp_path: Path) -> None:
    """-u 1 on 2 workers: one worker gets no user and its share would never be sent (the run
    would never end by its count): one line, exit 2."""
    with running_sim(*SIM) as url:
        res = run_distributed(
            url, *LIGHT, "--num-requests", "4", results_dir=tmp_path / "d", workers=2, users=1, run_time="60s"
        )
    expect_exit(res, 2)
    assert "llm-locust: --num-requests: -u 1 users on 2 workers leaves a worker without users" in res.stderr


APPLIES = "--num-requests applies to -u users or a --request-rate"


def test_num_requests_only_where_every_request_counts() -> None:
    assert build_config({"host": HOST, "num_requests": "5"}).load.num_requests == 5
    assert build_config({"host": HOST, "num_requests": "5", "request_rate": "2"}).load.num_requests == 5
    for extra, line in (
        ({"num_requests": "0"}, "--num-requests '0': must be at least 1"),
        ({"num_requests": "x"}, "--num-requests 'x': not a whole number"),
        (
            {"num_requests": "5", "ramp": "1,2"},
            f"{APPLIES}, not with --ramp: every request it sends counts",
        ),
        (
            {"num_requests": "5", "warmup": "5s"},
            f"{APPLIES}, not with --warmup: every request it sends counts",
        ),
    ):
        with pytest.raises(ConfigError) as err:
            build_config({"host": HOST, **extra})
        assert str(err.value) == line


def test_shares_add_up_to_n() -> None:
    for n in (1, 7, 9, 100):
        for workers in (1, 2, 3, 8):
            parts = [share(n, slot, workers) for slot in range(workers)]
            assert sum(parts) == n and max(parts) - min(parts) <= 1, (n, workers, parts)
