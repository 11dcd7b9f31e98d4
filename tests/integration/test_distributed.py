"""A real master with real worker processes: records shipped exactly once, losses bounded."""

from __future__ import annotations

import json
import signal
import subprocess
import time
import urllib.request
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tests.locustproc import (
    BIN,
    LOCUSTFILE,
    REPO,
    env,
    expect_exit,
    free_port,
    processes,
    run_distributed,
    run_locust,
)
from tests.simproc import running_sim

# Locust's master counts a worker missing after 3 s without its heartbeat (HEARTBEAT_LIVENESS x 1 s):
# on a host whose other processes hold the CPU (a busy loop on one of 2 cores at load 16), the
# forked workers of --processes missed it while starting, the master stopped the test ("The last
# worker went missing") and recorded nothing (exit 7): the host's spare CPU decides
pytestmark = [pytest.mark.slow, pytest.mark.host_timing]
LIGHT = ("--prompt-tokens", "32", "--max-tokens", "16")


def _sim_counter(url: str, name: str) -> float:
    text = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name + "{"))


@pytest.mark.slow
def test_master_summary_matches_numpy_and_the_servers_counters(tmp_path: Path) -> None:
    with running_sim("--ttft-ms", "30", "--tpot-ms", "5", "--output-tokens", "16") as url:
        # exact accounting against the server's counter: no preflight request besides the load
        res = run_distributed(
            url,
            *LIGHT,
            "--stop-timeout",
            "10",
            "--skip-preflight",
            results_dir=tmp_path / "r",
            users=6,
            run_time="8s",
        )
        server = {
            name: _sim_counter(url, name)
            for name in (
                "vllm:generation_tokens_total",
                "vllm:prompt_tokens_total",
                "vllm:e2e_request_latency_seconds_sum",
                "vllm:e2e_request_latency_seconds_count",
            )
        }
    expect_exit(res, 0)
    rows, s = res.rows, res.summary
    assert len({r["worker"] for r in rows}) == 2
    assert len({r["request_id"] for r in rows}) == len(rows)  # no batch applied twice
    assert s["completed"] == len(rows) > 0 and s["failed"] == 0
    # the master's statistics against numpy on the raw values of requests.jsonl (the latencies
    # of a request the client itself stalled inside are left out, as the summary documents)
    timed = [r for r in rows if not r["client_stall_s"]]
    assert s["client_stalled"] == len(rows) - len(timed)  # (0 on an idle machine)
    for name in ("ttft", "tpot", "e2e"):
        ms = np.array([r[name] for r in timed]) * 1000.0
        key = "e2el" if name == "e2e" else name
        assert s[f"mean_{key}_ms"] == pytest.approx(ms.mean(), rel=1e-9), name
        assert s[f"median_{key}_ms"] == pytest.approx(np.median(ms), rel=1e-9), name
        for q in (50, 90, 95, 99):
            assert s[f"p{q}_{key}_ms"] == pytest.approx(np.percentile(ms, q), rel=1e-9), (name, q)
    gaps = np.concatenate([r["itl"] for r in timed]) * 1000.0
    for q in (50, 90, 95, 99):
        assert s[f"p{q}_itl_ms"] == pytest.approx(np.percentile(gaps, q), rel=1e-6, abs=1e-3), q
    # ... and against the simulator's own counters (stop-timeout let every request finish)
    assert s["total_output_tokens"] == sum(r["completion_tokens"] for r in rows)
    assert s["total_output_tokens"] == server["vllm:generation_tokens_total"]
    assert s["total_input_tokens"] == server["vllm:prompt_tokens_total"]
    assert server["vllm:e2e_request_latency_seconds_count"] == len(rows)
    # the client's E2E holds the server's plus loopback and parsing: a little more, never less
    server_mean = server["vllm:e2e_request_latency_seconds_sum"] / len(rows) * 1000.0
    assert server_mean - 1.0 <= s["mean_e2el_ms"] <= server_mean + 50.0, (s["mean_e2el_ms"], server_mean)


def _shipped_by(results: Path) -> Counter[str]:
    """Records per worker in the master's requests.jsonl so far (the master writes as batches land)."""
    path = results / "requests.jsonl"
    if not path.exists():
        return Counter()
    lines = path.read_text().splitlines()
    return Counter(json.loads(line)["worker"] for line in lines[:-1] if line)  # the last may be half written


def _wait_both_shipped(results: Path, master: subprocess.Popen[bytes], timeout: float = 60.0) -> Counter[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and master.poll() is None:
        shipped = _shipped_by(results)
        if len(shipped) == 2:
            return shipped
        time.sleep(0.1)
    raise AssertionError(f"both workers never shipped: {_shipped_by(results)}, master exit {master.poll()}")


@pytest.mark.slow
def test_worker_killed_mid_run_keeps_its_records(tmp_path: Path) -> None:
    port = free_port()
    results = tmp_path / "r"
    common = [str(BIN / "locust"), "-f", str(LOCUSTFILE)]
    log = tmp_path / "master.log"
    with (
        running_sim("--ttft-ms", "30", "--tpot-ms", "5", "--output-tokens", "16") as url,
        open(log, "wb") as out,
    ):
        master = subprocess.Popen(
            [
                *common,
                "--host",
                url,
                "--master",
                "--master-bind-host",
                "127.0.0.1",
                "--master-bind-port",
                str(port),
                "--headless",
                "--expect-workers",
                "2",
                "-u",
                "6",
                "-r",
                "6",
                "-t",
                "14s",
                "--results-dir",
                str(results),
                *LIGHT,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env(),
            cwd=str(REPO),
        )
        workers = [
            subprocess.Popen(
                [*common, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port), *LIGHT],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env(),
                cwd=str(REPO),
            )
            for _ in range(2)
        ]
        try:
            # kill a worker once both have shipped records: not after a guessed time
            shipped = _wait_both_shipped(results, master)
            victim = workers[0]
            victim.send_signal(signal.SIGKILL)
            master.wait(timeout=150)
        finally:
            for p in [master, *workers]:
                if p.poll() is None:
                    p.kill()
                p.wait()
    expect_exit(master, 0, log.read_text())
    rows = [json.loads(line) for line in (results / "requests.jsonl").read_text().splitlines()]
    per_worker = Counter(r["worker"] for r in rows)
    assert len(per_worker) == 2, per_worker  # the dead worker's shipped records are kept
    assert all(per_worker[w] >= n for w, n in shipped.items())  # nothing shipped was dropped
    dead, alive = sorted(per_worker.values())
    assert dead > 0 and alive > dead
    summary = json.loads((results / "summary.json").read_text())
    assert summary["completed"] + summary["failed"] == len(rows)


def test_processes_flag_forks_workers_that_ship_to_the_master(tmp_path: Path) -> None:
    with running_sim("--ttft-ms", "30", "--tpot-ms", "5", "--output-tokens", "16") as url:
        res = run_locust(url, *processes(2), *LIGHT, results_dir=tmp_path / "r", users=4, run_time="6s")
    expect_exit(res, 0)
    rows = res.rows
    assert len({r["worker"] for r in rows}) == 2
    assert res.summary["completed"] == len(rows) > 0
