"""A headless master given SIGTERM while it waits for its workers exits 143 with one line and
starts no test, even when a worker becomes ready while it shuts down (issue 26, item 11's
neighbour: Locust's main, waiting in ``start_automatic_run``, checks every second for ready
workers and started the test - the plan and spawn messages went out - from inside the master's
shutdown).

Real processes over loopback: a headless master and a worker that connects on cue
(``tests/late_worker.py``: Locust's own RPC classes). The cue is timed on the master's own
"Waiting for workers to be ready" lines (one a second, from the same loop that starts the test):
the signal comes half a second after one, the worker is ready before the next.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.locustproc import BIN, LOCUSTFILE, REPO, env, expect_exit, free_port

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # timed against the master's wait loop
SAID = "llm-locust: SIGTERM before the test started: no load sent, nothing to save; exiting (exit code 143)"
WAITING = "Waiting for workers to be ready"


def _wait_for(predicate, timeout: float, what: str, step: float = 0.01) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def test_a_master_told_to_stop_before_its_workers_are_ready_starts_no_test(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "master.log"
    master = subprocess.Popen(
        [str(BIN / "locust"), "-f", str(LOCUSTFILE), "--host", "http://127.0.0.1:9", "--skip-preflight",
         "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port),
         "--headless", "--expect-workers", "1", "-u", "2", "-r", "2", "-t", "20s",
         "--results-dir", str(tmp_path / "r")],
        stdout=log.open("w"), stderr=subprocess.STDOUT, env=env(), cwd=str(REPO),
    )  # fmt: skip
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.late_worker", str(port), "20"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env(), cwd=str(REPO),
    )  # fmt: skip
    try:
        assert worker.stdout is not None and worker.stdin is not None
        assert worker.stdout.readline().strip() == "loaded"
        _wait_for(lambda: WAITING in log.read_text(), 90, "the master's wait for its workers")
        seen = log.read_text().count(WAITING)
        _wait_for(lambda: log.read_text().count(WAITING) > seen, 5, "the next turn of the wait loop")
        time.sleep(0.5)  # the loop looks again in 1 s: the signal, then the worker, come before
        master.terminate()
        _wait_for(lambda: "before the test started" in log.read_text(), 10, "the master's line")
        worker.stdin.write("go\n")
        worker.stdin.flush()
        master.wait(60)
        heard = worker.communicate(timeout=30)[0].split()
    finally:
        for proc in (master, worker):
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    text = log.read_text()
    expect_exit(master, 143, text)
    assert SAID in text, text[-3000:]
    assert "Sending spawn jobs" not in text and "Shape test starting" not in text, text[-3000:]
    assert "spawn" not in heard and "llm_locust_plan" not in heard, (heard, text[-3000:])
    if "reported as ready" in text:  # it became ready while the master shut down: told to quit
        assert heard[-1] == "quit", (heard, text[-3000:])
    assert not (tmp_path / "r" / "requests.jsonl").exists(), text[-3000:]
