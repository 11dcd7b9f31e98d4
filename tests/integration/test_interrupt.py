"""Issue 8 §5: a stopped run keeps its results. Real locust processes (local, and a master with
two workers) get SIGTERM or SIGINT in the middle of a ramp; they stop the load, drain, write
``requests.jsonl``, ``summary.json`` (``interrupted``) and ``metrics_final.prom``, print the
table and exit 143 (SIGTERM) or 130 (SIGINT). The master's workers stop with it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.locustproc import BIN, LOCUSTFILE, REPO, env, free_port, locust_command
from tests.simproc import running_sim

FIXED = ("--ttft-ms", "20", "--tpot-ms", "20", "--output-tokens", "40")  # E2E 0.8 s
PLAN = ("--ramp", "2,4", "--step-time", "60s", "--prompt-tokens", "32", "--max-tokens", "40")
EXIT = {signal.SIGTERM: 143, signal.SIGINT: 130}


def _popen(cmd: list[str], log: Path) -> subprocess.Popen[bytes]:
    out = open(log, "wb")  # noqa: SIM115 (closed when the test ends)
    return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env(), cwd=str(REPO))


def _wait_for_rows(path: Path, n: int, timeout: float = 40.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().count("\n") >= n:
            return
        time.sleep(0.2)
    raise AssertionError(f"fewer than {n} records in {path} after {timeout} s")


def _generated(url: str) -> float:
    text = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
    name = "vllm:generation_tokens_total{"
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


def _kill_all(*procs: subprocess.Popen[bytes]) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def _check_results(results: Path, log: str, signame: str) -> dict:
    assert "Traceback" not in log, log[-3000:]
    summary = json.loads((results / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["interrupted_by"] == signame
    ended = summary["interruption"]  # the user's own stop: interrupted, not an early end
    assert ended["cause"] == "signal" and ended["early"] is False, ended
    assert ended["after_s"] == pytest.approx(ended["at"] - summary["config"]["start_time"], abs=0.002)
    assert (results / "metrics_final.prom").exists()
    rows = [json.loads(line) for line in (results / "requests.jsonl").read_text().splitlines()]
    # every record is counted once: measured (completed, failed) or excluded, with its reason
    assert len(rows) == summary["completed"] + summary["failed"] + sum(summary["excluded"].values())
    assert summary["excluded"]["incomplete"] == summary["incomplete"]
    assert summary["failed"] == 0 and summary["completed"] > 0
    assert f"interrupted by {signame}" in log
    assert "llm-locust summary" in log  # the table was printed
    return summary


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_local_run_interrupted_keeps_its_results(tmp_path: Path, sig: signal.Signals) -> None:
    results = tmp_path / "r"
    with running_sim(*FIXED) as url:
        cmd = locust_command(url, None, None, None, None, results, *PLAN, "--only-summary")
        proc = _popen(cmd, tmp_path / "locust.log")
        try:
            _wait_for_rows(results / "requests.jsonl", 8)
            proc.send_signal(sig)
            code = proc.wait(45)
        finally:
            _kill_all(proc)
    log = (tmp_path / "locust.log").read_text()
    assert code == EXIT[sig], log[-3000:]
    _check_results(results, log, sig.name)


@pytest.mark.slow
def test_master_interrupted_stops_its_workers_and_keeps_their_records(tmp_path: Path) -> None:
    results = tmp_path / "r"
    port = free_port()
    with running_sim(*FIXED) as url:
        master_cmd = locust_command(url, None, None, None, None, results, *PLAN, "--only-summary")
        master_cmd += ["--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port)]
        master_cmd += ["--expect-workers", "2"]
        worker_cmd = [str(BIN / "locust"), "-f", str(LOCUSTFILE), "--worker", "--master-host", "127.0.0.1"]
        worker_cmd += ["--master-port", str(port)]
        master = _popen(master_cmd, tmp_path / "master.log")
        workers = [_popen(worker_cmd, tmp_path / f"worker{i}.log") for i in range(2)]
        try:
            _wait_for_rows(results / "requests.jsonl", 10)
            master.send_signal(signal.SIGTERM)
            code = master.wait(60)
            stopped = time.monotonic()
            for w in workers:
                w.wait(max(1.0, stopped + 15 - time.monotonic()))  # not 60 s of unrecorded load
            before = _generated(url)
            time.sleep(1.5)
            assert _generated(url) == before, "the server is still being loaded"
        finally:
            _kill_all(master, *workers)
    log = (tmp_path / "master.log").read_text()
    assert code == 143, log[-3000:]
    summary = _check_results(results, log, "SIGTERM")
    rows = [json.loads(line) for line in (results / "requests.jsonl").read_text().splitlines()]
    assert len({r["worker"] for r in rows}) == 2
    for i in range(2):
        assert "Traceback" not in (tmp_path / f"worker{i}.log").read_text()
    assert summary["config"]["workers_without_final_batch"] == []
