"""A load generator paused mid-run (SIGSTOP) says which of its records the pause is in.

Before ``client_stall_s`` a worker paused for 10 s reported its in-flight requests as
10-s server latency. Here a real headless run against the simulator is paused for 2 s
while requests stream; the records in flight across the pause carry the pause, the
others carry nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.locustproc import BIN, LOCUSTFILE, REPO, env
from tests.simproc import running_sim

PAUSE_S = 2.0


def rows_of(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


@pytest.mark.slow
@pytest.mark.serial  # "no stall outside the pause": the client's own loop, timed to 0.1 s, runs alone
def test_records_in_flight_across_a_sigstop_carry_the_pause(tmp_path: Path) -> None:
    results = tmp_path / "r"
    with running_sim("--ttft-ms", "50", "--tpot-ms", "20", "--output-tokens", "40") as url:
        cmd = [str(BIN / "locust"), "-f", str(LOCUSTFILE), "--host", url, "--headless", "-u", "4", "-r", "2",
               "-t", "9s", "--stop-timeout", "30", "--results-dir", str(results), "--max-tokens", "40",
               "--prompt-tokens", "16", "--only-summary"]  # fmt: skip
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(), cwd=REPO
        )
        try:
            deadline = time.time() + 60
            while len(rows_of(results / "requests.jsonl")) < 6:  # requests flow
                assert time.time() < deadline and proc.poll() is None, "no records"
                time.sleep(0.05)
            # Rows appear as requests end: pausing right then would catch users between two
            # requests. Users started 0.5 s apart (-r 2) are out of phase, and 0.3 s after a
            # row (requests take ~0.85 s) every user is inside a request.
            time.sleep(0.3)
            paused_at = time.time()
            os.kill(proc.pid, signal.SIGSTOP)
            time.sleep(PAUSE_S)  # the stimulus: the process does not run for 2 s
            resumed_at = time.time()
            os.kill(proc.pid, signal.SIGCONT)
            out, err = proc.communicate(timeout=90)
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.kill()
    assert proc.returncode == 0, err[-2000:]
    assert "Traceback" not in out + err
    rows = [r for r in rows_of(results / "requests.jsonl") if r["outcome"] == "ok"]
    across = [r for r in rows if r["start_time"] < paused_at and r["start_time"] + r["e2e"] > resumed_at]
    clear = [
        r for r in rows if r["start_time"] + r["e2e"] < paused_at - 0.1 or r["start_time"] > resumed_at + 0.1
    ]
    near = [
        (r["start_time"] - paused_at, r["start_time"] + r["e2e"] - resumed_at) for r in rows if r not in clear
    ]
    assert len(across) >= 2 and len(clear) >= 6, (len(across), len(clear), near)
    for r in across:  # each request took ~0.85 s of server time plus the pause
        assert r["e2e"] > PAUSE_S
        assert PAUSE_S - 0.3 <= r["client_stall_s"] <= r["e2e"], r
        assert r["e2e"] - r["client_stall_s"] < 1.5, r  # what is left is the server's time
    assert all(r["client_stall_s"] == 0.0 for r in clear)
    # the summary counts them, keeps their latencies out of the percentiles, and saw the stall
    summary = json.loads((results / "summary.json").read_text())
    stalled = [r for r in rows if r["client_stall_s"] > 0]
    assert summary["completed"] == len(rows) and summary["client_stalled"] == len(stalled) >= len(across)
    assert summary["p99_e2el_ms"] < 1000 * PAUSE_S  # without the pause's requests
    assert summary["client"]["stall_s"] >= PAUSE_S - 0.3
