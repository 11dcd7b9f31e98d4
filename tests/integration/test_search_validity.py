"""A capacity search answers only on steps the run holds valid, and a level where every request
fails is a failing step (issue 22 §3, §9), with real processes over real sockets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.locustproc import run_locust
from tests.scripted_server import running_peer
from tests.simproc import running_sim

pytestmark = pytest.mark.host_timing  # a step's validity: a saturated client makes it invalid

LIGHT = ("--prompt-tokens", "16", "--max-tokens", "5")


@pytest.mark.slow
def test_a_step_invalid_twice_withholds_the_answer(tmp_path: Path) -> None:
    """Users spawned at 0.1/s never reach 16 within the 30 s a step may take to reach its level:
    the step is invalid (neither a pass nor a fail), run once more, invalid again, and the search
    stops with its answer withheld (exit 6) in one line saying why and what to do."""
    with running_sim("--output-tokens", "5") as url:
        res = run_locust(
            url,
            *LIGHT,
            "--search", "users", "--search-min", "16", "--step-time", "3s", "--warmup", "0s",
            "--slo", "success>=90%",
            results_dir=tmp_path / "r", users=None, run_time=None, timeout=240, spawn_rate=0.1,
        )  # fmt: skip
    assert res.returncode == 6, res.stdout[-3000:] + res.stderr[-3000:]
    assert "Traceback" not in res.stdout + res.stderr
    search = res.summary["search"]
    steps = search["steps"]
    assert [(p["level"], p["verdict"], p["phase"]) for p in steps] == [
        (16, "invalid", "start"),
        (16, "invalid", "rerun"),
    ]
    assert search["stop_reason"] == "invalid" and search["capacity"] is None
    assert search["highest_pass"] is None and search["decided_by"] == []
    withheld = search["withheld"]
    assert withheld.startswith("answer withheld: "), withheld
    assert "of 16 users" in withheld, withheld
    assert "; add workers, or run on a quieter host (users=16 invalid 2 times" in withheld, withheld
    assert f"capacity: {withheld}" in res.stdout
    assert "SLO, the capacity search's answer: WITHHELD" in res.stdout
    logged = json.loads((tmp_path / "r" / "search.json").read_text())
    assert [s["verdict"] for s in logged["steps"]] == ["invalid", "invalid"]
    assert [s["verdict"] for s in res.summary["stages"]] == ["invalid", "invalid"]


@pytest.mark.slow
def test_a_level_where_every_request_fails_is_a_failing_step(tmp_path: Path) -> None:
    """A single-slot server that cuts every stream once two are in flight: 4 and 2 users fail
    every request, 1 user is served; the capacity is 1, not an exit 4 "every request has failed"."""
    with running_peer() as base:
        res = run_locust(
            f"{base}/single_slot",
            *LIGHT,
            "--search", "users", "--search-min", "4", "--step-time", "12s", "--warmup", "0s",
            "--slo", "success>=90%",
            results_dir=tmp_path / "r", users=None, run_time=None, timeout=300, spawn_rate=None,
        )  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "every request has failed" not in res.stdout + res.stderr
    search = res.summary["search"]
    got = [(p["level"], p["verdict"]) for p in search["steps"]]
    assert got == [(4, "fail"), (2, "fail"), (1, "pass")], got
    assert all(p["reason"].startswith("every request failed") for p in search["steps"][:2])
    assert search["capacity"] == 1 and search["stop_reason"] == "precision"


ENGINE = (
    *("--mode", "engine", "--max-num-seqs", "256", "--decode-base-ms", "20", "--decode-ms-per-seq", "40"),
    *("--prefill-ms-per-token", "0.01", "--output-tokens", "5"),
)


@pytest.mark.slow
def test_a_search_short_of_the_demand_stops_at_the_settled_precision(tmp_path: Path) -> None:
    """An engine whose decode step lasts 20 + 40 x running ms (``benchmarks/search_steps.py``): the
    SLO ``tpot_p90 <= 20 + 40 x 4.33`` ms holds up to 4 users. Demand 6 concurrent, from 3 users:
    3 passes, 6 fails, and the plan is short of the demand; the bisection to 4 passes, and the
    bracket 4-6 is within the settled 50 % (not the 10 %), so the search stops there, saying so,
    without probing 5."""
    threshold_s = (20 + 40 * (4 + 1 / 3)) / 1000
    with running_sim(*ENGINE) as url:
        res = run_locust(
            url,
            "--prompt-tokens", "16", "--max-tokens", "5",
            "--search", "users", "--search-min", "3", "--step-time", "10s", "--warmup", "1s",
            "--demand", "concurrency=6", "--search-settled-precision", "50%",
            "--slo", f"success>=90%,tpot_p90<={threshold_s:g}s",
            results_dir=tmp_path / "r", users=None, run_time=None, timeout=300, spawn_rate=None,
        )  # fmt: skip
    search = res.summary["search"]
    got = [(p["level"], p["verdict"]) for p in search["steps"]]
    assert got == [(3, "pass"), (6, "fail"), (4, "pass")], got
    assert search["stop_reason"] == "settled" and search["capacity"] == 4, search["stop"]
    assert search["settled_precision"] == 0.5 and search["precision"] == 0.1
    assert "short of the demand" in search["stop"]
    logged = json.loads((tmp_path / "r" / "search.json").read_text())
    assert logged["spec"]["settled_precision"] == 0.5
