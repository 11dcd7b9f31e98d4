"""Issue 8 §1/§2/§6 against real locust and simulator processes: every stage runs at its level,
no request in flight at a stop or a step down goes unrecorded, and the end of a run leads
with the answer.

Concurrency is rebuilt here from ``requests.jsonl`` alone (each record's ``[start, start + e2e]``
interval), independently of the summary's own Little's law code.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tests.locustproc import expect_exit, run_locust
from tests.simproc import running_sim

pytestmark = pytest.mark.host_timing  # spawn speed, in-flight counts, valid stages: the client's own speed

#: E2E = 20 ms + 39 x 20 ms = 0.8 s per request.
FIXED = ("--ttft-ms", "20", "--tpot-ms", "20", "--output-tokens", "40")
LIGHT = ("--prompt-tokens", "32", "--max-tokens", "40")


def intervals(rows: list[dict]) -> list[tuple[float, float]]:
    return [(r["start_time"], r["start_time"] + r["e2e"]) for r in rows if r.get("e2e") is not None]


def mean_in_flight(rows: list[dict], a: float, b: float) -> float:
    """Time-weighted mean of requests in flight over [a, b], from the records."""
    return sum(max(0.0, min(e, b) - max(s, a)) for s, e in intervals(rows)) / (b - a)


def max_in_flight(rows: list[dict], a: float, b: float) -> int:
    grid = np.arange(a, b, 0.02)
    iv = np.array(intervals(rows))
    return int(max(((iv[:, 0] <= t) & (t < iv[:, 1])).sum() for t in grid))


def stage_span(summary: dict, st: dict) -> tuple[float, float]:
    t0 = summary["config"]["plan_t0"]
    return t0 + st["start_s"], t0 + st["start_s"] + st["duration_s"]


@pytest.mark.slow
@pytest.mark.serial  # how fast the client spawns and whether its own loop kept up: run alone
def test_ramp_without_spawn_rate_reaches_every_level(tmp_path: Path) -> None:
    """No -r: each stage reaches its user count in about a second and holds it (main: 8 -> 24
    at Locust's default 1 user/s never got there in a 6 s step)."""
    with running_sim(*FIXED) as url:
        res = run_locust(
            url,
            "--ramp",
            "2,8,24",
            "--step-time",
            "6s",
            *LIGHT,
            users=None,
            run_time=None,
            spawn_rate=None,
            stop_timeout=None,
            results_dir=tmp_path / "r",
        )
    expect_exit(res, 0)
    s, rows = res.summary, res.rows
    assert s["incomplete"] == 0  # the default drain let every request in flight finish
    for st in s["stages"]:
        target = int(st["target"])
        assert st["peak_users"] == target, st["label"]
        assert st["target_reached_s"] is not None and st["target_reached_s"] < 2.0, st
        assert st["time_at_target_s"] >= st["duration_s"] - 2.5, st
        assert st["valid"] is True and st["invalid_reason"] == "", (st["invalid_reason"], st.get("client"))
        start, end = stage_span(s, st)
        reached = start + st["target_reached_s"]
        # rebuilt from the records alone: the stage ran at its level to its very end
        assert max_in_flight(rows, reached, end) == target, st["label"]
        assert mean_in_flight(rows, reached + 1.0, end) == pytest.approx(target, rel=0.05), st["label"]
        assert mean_in_flight(rows, end - 1.0, end) == pytest.approx(target, rel=0.05), st["label"]
        # and the summary's own Little's law columns agree with it and with each other
        law = st["littles_law"]
        assert law["mean_in_flight"] == pytest.approx(target, rel=0.05), st["label"]
        assert law["product"] == pytest.approx(law["mean_in_flight"], rel=0.15), st["label"]
    ramp = [r for r in rows if r.get("rampup")]
    assert ramp, "requests sent while a stage was still spawning are marked ramp-up"
    assert s["rampup_requests"] == len(ramp)
    for r in ramp:
        st = s["stages"][r["stage"]]
        assert r["start_time"] < stage_span(s, st)[0] + st["target_reached_s"] + 0.2
    measured = [r for r in rows if not r.get("rampup") and not r.get("warmup") and r["stage"] is not None]
    assert sum(st["completed"] for st in s["stages"]) == len(measured)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["flag", "env"])
def test_explicit_spawn_rate_is_honoured_and_a_short_stage_is_invalid(tmp_path: Path, how: str) -> None:
    """-r 2 (or LOCUST_SPAWN_RATE=2): 2 -> 12 users takes 5 s, longer than the 4 s step, so
    the stage never runs at its level: invalid, never pass, not in the capacity sentence."""
    rate = ("-r", "2") if how == "flag" else ()
    extra_env = {"LOCUST_SPAWN_RATE": "2"} if how == "env" else None
    with running_sim(*FIXED) as url:
        res = run_locust(
            url,
            "--ramp",
            "2,12",
            "--step-time",
            "4s",
            "--slo",
            "success>=50%",
            *rate,
            *LIGHT,
            users=None,
            run_time=None,
            spawn_rate=None,
            stop_timeout=None,  # the end of the run as users get it: the default drain
            results_dir=tmp_path / "r",
            extra_env=extra_env,
        )
    expect_exit(res, 0)  # success>=50% holds
    s = res.summary
    first, second = s["stages"]
    assert first["spawn_rate"] == 2 and second["spawn_rate"] == 2
    assert first["verdict"] == "pass"
    assert second["verdict"] == "invalid" and second["valid"] is False
    assert second["target_reached_s"] is None
    assert 2 < second["peak_users"] < 12
    match = re.fullmatch(r"reached (\d+) of 12 users", second["invalid_reason"])
    assert match and int(match.group(1)) == second["peak_users"], second["invalid_reason"]
    assert s["highest_passing_stage"] == 0
    assert "users=2 " in s["capacity"] and "users=12 did not run at its level" in s["capacity"]
    out = res.stdout
    assert f"invalid: {second['invalid_reason']}" in out
    # the answer first: capacity sentence, per-stage table, what was excluded, then the detail
    order = [
        out.index(s["capacity"]),
        re.search(r"^stage +load +ok", out, re.M).start(),  # type: ignore[union-attr]
        out.index("excluded from the statistics:"),
        out.index("llm-locust summary"),
    ]
    assert order == sorted(order), order
    # Locust's own (rounded) table comes last, on its own stream, labelled as such
    err = res.stderr
    assert -1 < err.index("Locust's own request statistics") < err.rindex("Aggregated")


def test_requests_in_flight_at_the_stop_are_recorded_incomplete(tmp_path: Path) -> None:
    """20 s streams, a 3 s run and a 1 s drain: the 4 requests still streaming at the deadline
    are written with ``outcome: incomplete`` and their marks (main: no record at all)."""
    slow = ("--ttft-ms", "50", "--tpot-ms", "100", "--output-tokens", "200")
    with running_sim(*slow) as url:
        res = run_locust(
            url,
            "--prompt-tokens",
            "32",
            "--max-tokens",
            "200",
            users=4,
            run_time="3s",
            stop_timeout="1",
            results_dir=tmp_path / "r",
        )
    expect_exit(res, 0)  # incomplete is not a failure
    rows, s = res.rows, res.summary
    assert len(rows) == 4 and all(r["outcome"] == "incomplete" for r in rows), rows
    for r in rows:
        assert r["ttft"] == pytest.approx(0.05, abs=0.04)
        assert r["chunks"] >= 20 and r["e2e"] >= 3.5
        assert "stopped" in r["message"]
    assert s["incomplete"] == 4 and s["failed"] == 0 and s["errors"] == {} and s["completed"] == 0
    t0 = min(r["start_time"] for r in rows)
    assert mean_in_flight(rows, t0 + 0.5, t0 + 3.0) == pytest.approx(4, rel=0.02)
    assert "4 incomplete" in res.stdout


@pytest.mark.slow
@pytest.mark.serial  # "stopped at once" (< 1 s) and a valid stage: the client's own speed, alone
def test_a_step_down_records_the_stopped_users_requests(tmp_path: Path) -> None:
    """--ramp 6,2 with --stop-timeout 0 (kill at once): the 4 users stopped at the step down
    leave incomplete records, so the first stage keeps 6 in flight to its end (main: it fell to 2)."""
    # E2E 3 s against 5 s steps: at the step down every user is 2 s into its second request
    mid = ("--ttft-ms", "20", "--tpot-ms", "50", "--output-tokens", "60")
    with running_sim(*mid) as url:
        res = run_locust(
            url,
            "--ramp",
            "6,2",
            "--step-time",
            "5s",
            "--prompt-tokens",
            "32",
            "--max-tokens",
            "60",
            users=None,
            run_time=None,
            spawn_rate=None,
            stop_timeout="0",
            results_dir=tmp_path / "r",
        )
    expect_exit(res, 0)
    s, rows = res.summary, res.rows
    first, second = s["stages"]
    _, end = stage_span(s, first)
    cut = [r for r in rows if r["outcome"] == "incomplete" and r["stage"] == 0]
    assert len(cut) == 4, [(r["stage"], r["outcome"]) for r in rows]
    for r in cut:
        assert r["start_time"] + r["e2e"] == pytest.approx(end, abs=0.5)
    assert mean_in_flight(rows, end - 2.0, end) == pytest.approx(6, rel=0.03)
    assert second["valid"] is True and second["target_reached_s"] < 1.0, (second["invalid_reason"], second)
    _, end2 = stage_span(s, second)
    assert mean_in_flight(rows, end2 - 2.0, end2) == pytest.approx(2, rel=0.03)
    # at the end of the plan the last 2 users are killed too (a user between two requests has none)
    at_end = [r for r in rows if r["outcome"] == "incomplete" and r["stage"] != 0]
    assert 1 <= len(at_end) <= 2
    assert s["incomplete"] == len(cut) + len(at_end) == s["excluded"]["incomplete"]
