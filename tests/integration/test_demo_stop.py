"""A terminated ``llm-locust demo`` leaves nothing behind: its simulators and its run stop too."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.locustproc import REPO, env


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sigterm_stops_the_demo_its_simulators_and_its_run(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "llm_locust.cli", "demo", "--results-dir", str(tmp_path / "demo")]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
        cwd=str(REPO),
        start_new_session=True,
    )
    pgid = proc.pid
    try:
        assert proc.stdout is not None
        seen = []
        for line in proc.stdout:  # the demo's progress: wait for the first plan's first step
            seen.append(line)
            if "search step 1" in line:
                break
        assert any("search step 1" in line for line in seen), "".join(seen)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=90)
        assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
        assert "Traceback" not in out + err
        deadline = time.monotonic() + 30
        while _group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _group_alive(pgid), "a simulator or run outlived the demo"
    finally:
        if _group_alive(pgid):
            os.killpg(pgid, signal.SIGKILL)
