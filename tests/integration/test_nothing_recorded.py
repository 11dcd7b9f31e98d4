"""A test that recorded not one request measured nothing: it says so and exits 7, never 0.

Seen once in the suite on a busy host (load average 13): a master with two workers exited 0 with
an empty ``requests.jsonl``. Without an SLO the exit code was Locust's own, and Locust counts no
failure among no requests: 0, "done". Now the summary's ``records.total == 0`` is exit code 7 and
a line on stdout, whatever the cause (no request sent, or none that reached the results). The
same rule holds for ``llm-locust summarize`` (the same end of run, rebuilt from the records),
which is how these tests reach it as a real process.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from tests.locustproc import BIN, LOCUSTFILE, REPO, env, expect_exit, free_port, llm_locust_cli

SAID = "llm-locust: no request was recorded: the run measured nothing"
RECORD = {
    "outcome": "ok",
    "start_time": 1000.0,
    "ttft": 0.1,
    "tpot": 0.01,
    "e2e": 0.14,
    "itl": [0.01] * 4,
    "prompt_tokens": 20,
    "completion_tokens": 5,
}


def _summarize(folder: Path, text: str) -> tuple[object, dict]:
    folder.mkdir()
    (folder / "requests.jsonl").write_text(text)
    proc = llm_locust_cli("summarize", str(folder), "--no-report", timeout=120)
    return proc, json.loads((folder / "summary.json").read_text())


def test_a_results_folder_without_one_record_exits_7_and_says_so(tmp_path: Path) -> None:
    for name, text in (("empty", ""), ("unreadable", '{"outcome": "ok", "st\n')):
        proc, summary = _summarize(tmp_path / name, text)
        expect_exit(proc, 7)
        assert SAID in proc.stdout.splitlines(), proc.stdout[-2000:]
        assert summary["records"]["total"] == 0 and summary["completed"] == 0
    # one record, even a failed one, is a measurement: not this exit code, not this line
    failed = {**RECORD, "outcome": "http_error", "status": 500, "ttft": None, "tpot": None, "itl": []}
    for name, row in (("one", RECORD), ("one-failed", failed)):
        proc, summary = _summarize(tmp_path / name, json.dumps(row) + "\n")
        assert proc.returncode != 7 and SAID not in proc.stdout, (name, proc.returncode, proc.stdout[-2000:])
        assert summary["records"]["total"] == 1, name


def test_a_master_whose_only_worker_went_missing_says_so_and_exits_7(tmp_path: Path) -> None:
    """The run seen on the busy host, played: the worker stops before any of its requests is
    answered (SIGSTOP; a target that accepts the connection and never answers), Locust counts it
    missing after 3 s without its heartbeat and stops the test. Before: exit 0, an empty
    ``requests.jsonl``, and the only trace Locust's "The last worker went missing" in the log."""
    silent = socket.socket()  # listens, never accepts: each request waits for an answer
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    host = f"http://127.0.0.1:{silent.getsockname()[1]}"
    port = free_port()
    common = [str(BIN / "locust"), "-f", str(LOCUSTFILE), "--host", host, "--skip-preflight"]
    common += ["--model", "m", "--prompt-tokens", "8", "--max-tokens", "4", "--request-timeout", "60"]
    results = tmp_path / "r"
    master = subprocess.Popen(
        [*common, "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port),
         "--headless", "--expect-workers", "1", "-u", "1", "-r", "1", "-t", "20s", "--stop-timeout", "2",
         "--results-dir", str(results)],
        stdout=subprocess.PIPE, stderr=(tmp_path / "master.log").open("w"), text=True, env=env(),
        cwd=str(REPO),
    )  # fmt: skip
    worker = subprocess.Popen(
        [*common, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port)],
        stdout=(tmp_path / "worker.log").open("w"), stderr=subprocess.STDOUT, env=env(), cwd=str(REPO),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while (
            "Sending spawn jobs" not in (tmp_path / "master.log").read_text() and time.monotonic() < deadline
        ):
            assert master.poll() is None, (tmp_path / "master.log").read_text()[-3000:]
            time.sleep(0.2)
        time.sleep(1.0)
        os.kill(worker.pid, signal.SIGSTOP)  # its user waits for an answer that never comes
        out, _ = master.communicate(timeout=90)
    finally:
        os.kill(worker.pid, signal.SIGCONT)
        worker.kill()
        worker.wait()
        if master.poll() is None:
            master.kill()
        silent.close()
    log = (tmp_path / "master.log").read_text()
    assert master.returncode == 7, out[-3000:] + log[-3000:]
    assert "Traceback" not in out + log and (results / "requests.jsonl").read_text() == ""
    summary = json.loads((results / "summary.json").read_text())
    assert summary["records"]["total"] == 0 and len(summary["config"]["workers_missing"]) == 1
    (missing,) = summary["config"]["workers_missing"]
    line = next(line for line in out.splitlines() if line.startswith(SAID))
    assert "the master counted 1 worker(s) missing (no heartbeat for 3 s" in line and line.endswith(missing)
