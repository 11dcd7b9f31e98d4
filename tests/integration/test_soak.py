"""Soak verdicts against simulators with a known trend: one slowing down at a set rate, one steady.

The degrading simulator (``llm-locust sim --degrade-tpot-ms-per-min 10``, fixed mode) lengthens
every token interval by 10 ms per minute; with 8 output tokens (7 intervals) each request's
E2E grows by 70 ms per minute: +700 ms per 10 minutes, while its TTFT stays put. Both runs go
in parallel (two light Locust processes, 4 users each) for 150 s with 5 s windows. The
servers answer in a few hundred ms (TTFT 200 ms, tokens 20 ms apart), so the few ms the two
runs take from each other's CPU on a 2-core machine stay far below a material drift.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.locustproc import expect_exit, run_locust
from tests.simproc import start_sim, stop_sim

pytestmark = pytest.mark.host_timing  # a steady server is judged stable only with intact client timings

TIMING = ("--ttft-ms", "200", "--tpot-ms", "20", "--output-tokens", "8")
E2E_MS_PER_10_MIN = 7 * 10.0 * 10  # 7 token intervals x 10 ms per minute x 10 minutes


def _soak(results: Path, out: dict[str, Any], key: str, *sim_args: str) -> None:
    proc, url = start_sim(*TIMING, *sim_args)
    try:
        args = (
            "--window",
            "5s",
            "--slo",
            "e2e_p95_drift<=100ms",
            "--prompt-tokens",
            "32",
            "--max-tokens",
            "8",
        )
        out[key] = run_locust(url, *args, results_dir=results, users=4, run_time="150s", timeout=300)
    finally:
        stop_sim(proc)


@pytest.mark.slow
def test_degrading_server_drifts_and_steady_server_is_stable(tmp_path: Path) -> None:
    runs: dict[str, Any] = {}
    threads = [
        threading.Thread(target=_soak, args=(tmp_path / "up", runs, "up", "--degrade-tpot-ms-per-min", "10")),
        threading.Thread(target=_soak, args=(tmp_path / "flat", runs, "flat")),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(360)
    up, flat = runs["up"], runs["flat"]
    # the drift SLO decides the exit code: 3 for the degrading run, 0 for the steady one
    expect_exit(up, 3)
    expect_exit(flat, 0)

    drift = up.summary["drift"]
    e2e = drift["series"]["e2e_p95"]
    assert drift["verdict"] == "drifting" and e2e["verdict"] == "drifting" and e2e["slope"] > 0
    assert e2e["slope"] == pytest.approx(E2E_MS_PER_10_MIN, rel=0.2), e2e
    assert e2e["lower"] <= E2E_MS_PER_10_MIN * 1.05 and e2e["upper"] >= E2E_MS_PER_10_MIN * 0.95
    assert "P95 E2E +" in drift["text"] and drift["text"].startswith("drifting: ")
    assert drift["series"]["ttft_p95"]["verdict"] != "drifting"  # the degradation is in decoding
    line = next(o for o in up.summary["slo"]["objectives"] if o["name"] == "e2e_p95_drift")
    assert line["verdict"] == "fail" and line["measured"] == pytest.approx(0.7, rel=0.2)

    steady = flat.summary["drift"]
    assert steady["verdict"] == "stable", steady["text"]
    assert abs(steady["series"]["e2e_p95"]["slope"]) < 30.0  # ms per 10 min, against 700
    assert (
        next(o for o in flat.summary["slo"]["objectives"] if o["name"] == "e2e_p95_drift")["verdict"]
        == "pass"
    )
    assert len(flat.summary["windows"]) >= 30 and (flat.results_dir / "windows.csv").exists()
