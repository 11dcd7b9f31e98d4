"""The capacity search distributed: the master decides, the workers follow (users and rates)."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_locust.load.search import SearchSpec, replay
from tests.integration.test_capacity_search import ENGINE, LIGHT
from tests.locustproc import run_distributed
from tests.simproc import running_sim

pytestmark = pytest.mark.host_timing  # the steps' verdicts need a client that is not saturated


def _replayed(search: dict, spec: SearchSpec) -> None:
    steps = search["steps"]
    decisions = replay(spec, [(p["level"], p["verdict"], p["extensions"]) for p in steps])
    assert [d.level for d in decisions[:-1]] == [p["level"] for p in steps]
    assert decisions[-1].reason == search["stop_reason"]


@pytest.mark.slow
def test_a_user_search_over_two_workers_is_decided_by_the_master(tmp_path: Path) -> None:
    with running_sim(*ENGINE) as url:
        res = run_distributed(
            url,
            *LIGHT,
            "--search",
            "users",
            "--search-min",
            "1",
            "--slo",
            "success>=90%,tpot_p90<=0.114s",
            "--step-time",
            "8s",
            "--warmup",
            "1s",
            results_dir=tmp_path / "r",
            users=1,
            run_time="600s",
            timeout=400,
        )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Traceback" not in res.stdout + res.stderr
    search = res.summary["search"]
    _replayed(search, SearchSpec("users", 1))
    lo, hi = search["highest_pass"]["level"], search["upper"]["level"]
    assert (lo, hi) == (2, 3), search["steps"]  # the boundary the one-process test finds
    workers = {r["worker"] for r in res.rows}
    assert len(workers) == 2  # both workers sent the load the master decided
    for p in search["steps"]:
        stage = res.summary["stages"][p["index"]]
        assert stage["target_reached_s"] is not None and stage["valid"], stage


@pytest.mark.slow
def test_a_rate_search_over_two_workers_sends_the_rates_the_master_announces(tmp_path: Path) -> None:
    # 4 batch slots, about 0.13 s per request: the engine saturates near 30 req/s; up to 16
    # req/s every step passes, and the search stops at its maximum
    engine = ("--mode", "engine", "--max-num-seqs", "4", "--decode-base-ms", "25", "--decode-ms-per-seq", "0")
    with running_sim(*engine, "--prefill-ms-per-token", "0.01", "--output-tokens", "5") as url:
        res = run_distributed(
            url,
            *LIGHT,
            "--search",
            "rate",
            "--search-min",
            "4",
            "--search-max",
            "16",
            "--slo",
            "success>=90%,ttft_p90<=0.2s",
            "--step-time",
            "6s",
            "--warmup",
            "1s",
            results_dir=tmp_path / "r",
            users=1,
            run_time="600s",
            timeout=400,
        )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Traceback" not in res.stdout + res.stderr
    search = res.summary["search"]
    _replayed(search, SearchSpec("rate", 4.0, maximum=16))
    assert [p["level"] for p in search["steps"]] == [4.0, 8.0, 16.0], search["steps"]
    assert search["capacity"] == 16 and search["stop_reason"] == "maximum"
    expected = scheduled = 0.0
    for p in search["steps"]:  # both workers sent every arrival scheduled in each step's window
        stage = res.summary["stages"][p["index"]]
        window = stage["window"]["end"] - stage["window"]["start"]
        assert abs(stage["sent_rate"] - stage["scheduled_rate"]) * window <= 2, (p["label"], stage)
        expected += p["level"] * window
        scheduled += stage["scheduled_rate"] * window
    assert abs(scheduled - expected) <= 3 * expected**0.5, (scheduled, expected)  # Poisson, 3 sigma
    assert len({r["worker"] for r in res.rows if r.get("stage") is not None}) == 2
