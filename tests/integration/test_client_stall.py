"""A load generator paused mid-run (SIGSTOP) says which of its records the pause is in, and
the records keep the server's timing.

Before ``client_stall_s`` a worker paused for 10 s reported its in-flight requests as
10-s server latency. Here a real headless run against the simulator is paused for 2 s
while requests stream. The bytes that arrive during the pause wait in the kernel; each read
is timed by the kernel's receive stamp (llm_locust/client/stamps.py), so the records in flight
across the pause keep the server's ~0.85 s, not the pause (before the stamps they read more
than 2 s), and still say the stall; the others carry nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.locustproc import BIN, LOCUSTFILE, run_paused
from tests.simproc import running_sim

PAUSE_S = 2.0


@pytest.mark.slow
@pytest.mark.serial  # "no stall outside the pause": the client's own loop, timed to 0.1 s, runs alone
def test_records_in_flight_across_a_sigstop_carry_the_pause(tmp_path: Path) -> None:
    results = tmp_path / "r"
    with running_sim("--ttft-ms", "50", "--tpot-ms", "20", "--output-tokens", "40") as url:
        cmd = [str(BIN / "locust"), "-f", str(LOCUSTFILE), "--host", url, "--headless", "-u", "4", "-r", "2",
               "-t", "9s", "--stop-timeout", "30", "--results-dir", str(results), "--max-tokens", "40",
               "--prompt-tokens", "16", "--only-summary"]  # fmt: skip
        # Rows appear as requests end: pausing right then would catch users between two
        # requests. Users started 0.5 s apart (-r 2) are out of phase, and 0.3 s after a
        # row (requests take ~0.85 s) every user is inside a request.
        proc, paused_at, resumed_at = run_paused(
            cmd, results, rows=6, settle_s=0.3, pause_s=PAUSE_S, timeout=90
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    rows = [r for r in proc.rows if r["outcome"] == "ok"]
    # in flight at the pause: sent before it, and the server's 0.85 s (50-ms TTFT, 40 x 20 ms)
    # not over 0.1 s before it
    across = [r for r in rows if paused_at - 0.75 < r["start_time"] < paused_at]
    clear = [
        r for r in rows if r["start_time"] + r["e2e"] < paused_at - 0.1 or r["start_time"] > resumed_at + 0.1
    ]
    near = [
        (r["start_time"] - paused_at, r["start_time"] + r["e2e"] - resumed_at) for r in rows if r not in clear
    ]
    assert len(across) >= 2 and len(clear) >= 6, (len(across), len(clear), near)
    for r in across:  # the server's time, stamped by the kernel as the bytes came; the stall said
        assert 0.8 < r["e2e"] < 1.5, r
        assert 0.0 < r["client_stall_s"] <= r["e2e"], r
    charged = [
        (
            round(r["start_time"] - paused_at, 3),
            round(r["start_time"] - resumed_at, 3),
            r["e2e"],
            r["client_stall_s"],
        )
        for r in clear
        if r["client_stall_s"] != 0.0
    ]  # (start - pause, start - resume, e2e, stall) of a clear record charged with a stall
    assert not charged, charged
    # the summary counts them, keeps their latencies out of the percentiles, and saw the stall
    summary = json.loads((results / "summary.json").read_text())
    stalled = [r for r in rows if r["client_stall_s"] > 0]
    assert summary["completed"] == len(rows) and summary["client_stalled"] == len(stalled) >= len(across)
    assert summary["p99_e2el_ms"] < 1000 * PAUSE_S  # without the pause's requests
    assert summary["client"]["stall_s"] >= PAUSE_S - 0.3
