"""Replicas without a load balancer (--endpoints) and users who think (--think-time), on real simulators."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.locustproc import run_locust
from tests.simproc import running_sim

FAST = ("--ttft-ms", "20", "--tpot-ms", "5")
LIGHT = ("--prompt-tokens", "16", "--max-tokens", "8")


def test_round_robin_shares_requests_and_a_slow_replica_shows_as_skew(tmp_path: Path) -> None:
    with running_sim(*FAST) as fast, running_sim(*FAST, "--slowdown", "4") as slow:
        res = run_locust(
            fast, *LIGHT, "--endpoints", f"{fast},{slow}", users=4, run_time="6s", results_dir=tmp_path / "rr"
        )
        least = run_locust(
            fast,
            *LIGHT,
            "--endpoints",
            f"{fast},{slow}",
            "--balance",
            "least-in-flight",
            users=4,
            run_time="6s",
            results_dir=tmp_path / "lif",
        )
    for r in (res, least):
        assert r.returncode == 0, r.stderr[-2000:]
        assert "Traceback" not in r.stdout + r.stderr
    replicas = res.summary["replicas"]
    assert set(replicas) == {fast, slow}
    for url in (fast, slow):  # round robin per request: half each, whatever their speed
        assert replicas[url]["share"] == pytest.approx(0.5, abs=0.1)
        assert replicas[url]["failed"] == 0 and replicas[url]["p95_e2el_ms"] is not None
    assert replicas[slow]["p50_ttft_ms"] > 2.5 * replicas[fast]["p50_ttft_ms"], replicas
    counts = Counter(row["replica"] for row in res.rows)
    assert set(counts) == {fast, slow} and sum(counts.values()) == len(res.rows)
    assert f"{fast[:31]:<32}" in res.stdout  # the per-replica table
    # least-in-flight sends more to the replica that frees its slots sooner
    shares = least.summary["replicas"]
    assert shares[fast]["share"] > 0.6, shares


def test_preflight_checks_every_replica_and_names_the_one_refused(tmp_path: Path) -> None:
    with running_sim(*FAST) as fast:
        dead = "http://127.0.0.1:9"  # discard port: nothing listens
        res = run_locust(fast, *LIGHT, "--endpoints", f"{fast},{dead}", users=1, run_time="3s")
    assert res.returncode == 2 and "Traceback" not in res.stdout + res.stderr
    lines = [line for line in res.stderr.splitlines() if "llm-locust: error" in line]
    assert len(lines) == 1 and f"replica {dead}" in lines[0], res.stderr[-2000:]


def test_users_with_think_time_keep_fewer_requests_in_flight_littles_law(tmp_path: Path) -> None:
    """N users with mean think Z and mean E2E W keep N W / (W + Z) in flight on average.

    12 users, E2E about 0.45 s, exponential think with a 1 s mean: about 3.7 in flight. The
    tolerance, 15 %, covers the first request of each user (sent without a pause) and the
    random pauses over a 12 s run (about 330 of them: their mean is within 11 % at 2 sigma)."""
    with running_sim("--ttft-ms", "100", "--tpot-ms", "50", "--output-tokens", "8") as url:
        res = run_locust(
            url,
            *LIGHT,
            "--think-time",
            "exponential:mean=1s",
            users=12,
            run_time="12s",
            results_dir=tmp_path / "t",
        )
    assert res.returncode == 0, res.stderr[-2000:]
    conc = res.summary["concurrency"]
    assert conc["peak_users"] == 12 and conc["think_time_mean_s"] == 1.0
    w = conc["mean_e2e_s"]
    expected = 12 * w / (w + 1.0)
    assert conc["closed_loop_expected_in_flight"] == pytest.approx(expected)
    assert conc["mean_in_flight"] == pytest.approx(expected, rel=0.15), conc
    assert conc["mean_in_flight"] < 6  # far from the 12 users
    assert conc["arrival_rate"] * w == pytest.approx(conc["mean_in_flight"], rel=0.15)  # L = λW
    assert "concurrency: 12 users" in res.stdout and "users x W/(W+Z)" in res.stdout
