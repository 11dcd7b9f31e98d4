"""A real master with real worker processes: records shipped exactly once, losses bounded."""

from __future__ import annotations

import json
import signal
import subprocess
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from llm_locust.results.summary import summarize
from tests.locustproc import BIN, LOCUSTFILE, REPO, env, free_port, run_distributed, run_locust
from tests.simproc import running_sim

pytestmark = pytest.mark.slow
LIGHT = ("--prompt-tokens", "32", "--max-tokens", "16")


def _sim_counter(url: str, name: str) -> float:
    text = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name + "{"))


@pytest.mark.slow
def test_master_summary_is_the_pooled_computation(tmp_path: Path) -> None:
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
        server_tokens = _sim_counter(url, "vllm:generation_tokens_total")
    assert res.returncode == 0, res.stderr[-2000:]
    rows, s = res.rows, res.summary
    assert Counter(r["worker"] for r in rows).keys().__len__() == 2
    assert len({r["request_id"] for r in rows}) == len(rows)  # no batch applied twice
    pooled = summarize(rows, s["duration"])
    for key, value in pooled.items():
        assert s[key] == value, key
    # every token the server generated is in the master's results (stop-timeout let them finish)
    assert s["total_output_tokens"] == server_tokens
    assert s["completed"] == len(rows) and s["failed"] == 0


@pytest.mark.slow
def test_worker_killed_mid_run_keeps_its_records(tmp_path: Path) -> None:
    port = free_port()
    common = [str(BIN / "locust"), "-f", str(LOCUSTFILE)]
    with running_sim("--ttft-ms", "30", "--tpot-ms", "5", "--output-tokens", "16") as url:
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
                str(tmp_path / "r"),
                *LIGHT,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
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
            time.sleep(7)
            victim = workers[0]
            victim.send_signal(signal.SIGKILL)
            _out, err = master.communicate(timeout=150)
        finally:
            for p in [master, *workers]:
                if p.poll() is None:
                    p.kill()
                p.wait()
    assert master.returncode in (0, 1), err[-2000:]
    rows = [json.loads(line) for line in (tmp_path / "r" / "requests.jsonl").read_text().splitlines()]
    per_worker = Counter(r["worker"] for r in rows)
    assert len(per_worker) == 2, per_worker  # the dead worker's shipped records are kept
    dead, alive = sorted(per_worker.values())
    assert dead > 0 and alive > dead
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["completed"] + summary["failed"] == len(rows)


def test_processes_flag_forks_workers_that_ship_to_the_master(tmp_path: Path) -> None:
    with running_sim("--ttft-ms", "30", "--tpot-ms", "5", "--output-tokens", "16") as url:
        res = run_locust(url, "--processes", "2", *LIGHT, results_dir=tmp_path / "r", users=4, run_time="6s")
    assert res.returncode == 0, res.stderr[-2000:]
    rows = res.rows
    assert len({r["worker"] for r in rows}) == 2
    assert res.summary["completed"] == len(rows) > 0
