"""Soak verdicts against servers with a known trend: one slowing down at a set rate, one steady.

The degrading server (``tests/degrading_server.py``, until the simulator's own slow
degradation is on main) adds ``60 ms`` of TTFT per minute: +600 ms per 10 minutes. Both runs
go in parallel (two light Locust processes, 4 users each) for 150 s with 5 s windows. The
servers answer in a few hundred ms (TTFT 200 ms, 8 tokens 20 ms apart), so the few ms the
two runs take from each other's CPU on a 2-core machine stay far below a material drift.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.locustproc import REPO, run_locust
from tests.simproc import start_sim, stop_sim

SERVER = (sys.executable, str(REPO / "tests" / "degrading_server.py"))
TIMING = ("--ttft-ms", "200", "--tpot-ms", "20", "--tokens", "8")
RATE_MS_PER_10_MIN = 600.0


def _soak(results: Path, out: dict[str, Any], key: str, *server_args: str) -> None:
    proc, url = start_sim(*TIMING, *server_args, command=SERVER)
    try:
        args = ("--window", "5s", "--slo", "ttft_p95_drift<=100ms")
        out[key] = run_locust(url, *args, results_dir=results, users=4, run_time="150s", timeout=300)
    finally:
        stop_sim(proc)


@pytest.mark.slow
def test_degrading_server_drifts_and_steady_server_is_stable(tmp_path: Path) -> None:
    runs: dict[str, Any] = {}
    threads = [
        threading.Thread(target=_soak, args=(tmp_path / "up", runs, "up", "--ttft-ms-per-min", "60")),
        threading.Thread(target=_soak, args=(tmp_path / "flat", runs, "flat")),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(360)
    up, flat = runs["up"], runs["flat"]
    for res in (up, flat):
        assert "Traceback" not in res.stderr and "Traceback" not in res.stdout
    # the drift SLO decides the exit code: 3 for the degrading run, 0 for the steady one
    assert (up.returncode, flat.returncode) == (3, 0), (up.stderr[-2000:], flat.stderr[-2000:])

    drift = up.summary["drift"]
    ttft = drift["series"]["ttft_p95"]
    assert drift["verdict"] == "drifting" and ttft["verdict"] == "drifting" and ttft["slope"] > 0
    assert ttft["slope"] == pytest.approx(RATE_MS_PER_10_MIN, rel=0.2), ttft
    assert ttft["lower"] <= RATE_MS_PER_10_MIN * 1.05 and ttft["upper"] >= RATE_MS_PER_10_MIN * 0.95
    assert drift["text"].startswith("drifting: P95 TTFT +")
    line = next(o for o in up.summary["slo"]["objectives"] if o["name"] == "ttft_p95_drift")
    assert line["verdict"] == "fail" and line["measured"] == pytest.approx(0.6, rel=0.2)

    steady = flat.summary["drift"]
    assert steady["verdict"] == "stable", steady["text"]
    assert abs(steady["series"]["ttft_p95"]["slope"]) < 20.0  # ms per 10 min, against 600
    assert (
        next(o for o in flat.summary["slo"]["objectives"] if o["name"] == "ttft_p95_drift")["verdict"]
        == "pass"
    )
    assert len(flat.summary["windows"]) >= 30 and (flat.results_dir / "windows.csv").exists()
