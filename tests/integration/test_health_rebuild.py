"""``llm-locust summarize DIR`` rebuilds the client-health blocks from ``health.jsonl``.

The health intervals (CPU, event-loop lag, stalls per second per load process) used to live
only in memory, so a rebuilt summary had no ``client`` block and no saturation verdicts. Now
the process that owns the results writes them as they are measured. A real staged run, paused
(SIGSTOP, 25 ms of every 35) for 2.5 s in its second stage so that stage is measured by a late
client, and
a real master with a real worker: the summary each wrote and the one ``summarize`` rebuilds
from the folder agree in every client-health block.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.locustproc import BIN, LOCUSTFILE, REPO, env, expect_exit, llm_locust_cli, run_distributed
from tests.simproc import running_sim

pytestmark = pytest.mark.host_timing  # stage 0 unsaturated: the client's own CPU

SIM = ("--ttft-ms", "20", "--tpot-ms", "10", "--output-tokens", "20")
STAGED = (
    "--ramp",
    "2,4",
    "--step-time",
    "5s",
    "--warmup",
    "1s",
    "--max-tokens",
    "20",
    "--prompt-tokens",
    "16",
)


def health_blocks(summary: dict[str, Any]) -> dict[str, Any]:
    stages = summary.get("stages") or []
    return {
        "client": summary.get("client"),
        "client_saturated": summary.get("client_saturated"),
        "stages": [{k: s.get(k) for k in ("client", "valid", "verdict", "invalid_reason")} for s in stages],
    }


def rebuilt(results: Path) -> dict[str, Any]:
    original = json.loads((results / "summary.json").read_text())
    done = llm_locust_cli("summarize", str(results), "--no-report", timeout=120)
    expect_exit(done, 0)
    again = json.loads((results / "summary.json").read_text())
    assert "health.jsonl" in again["rebuilt"]["from"]
    return {"original": health_blocks(original), "rebuilt": health_blocks(again)}


@pytest.mark.slow
def test_a_paused_run_and_its_rebuilt_summary_give_the_same_saturation_verdicts(tmp_path: Path) -> None:
    results = tmp_path / "r"
    with running_sim(*SIM) as url:
        cmd = [str(BIN / "locust"), "-f", str(LOCUSTFILE), "--host", url, "--headless", "-u", "4", "-r", "4",
               "-t", "10s", "--stop-timeout", "20", "--results-dir", str(results), "--only-summary",
               *STAGED]  # fmt: skip
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(), cwd=REPO
        )
        try:
            deadline = time.time() + 60
            while (
                not (results / "run.json").exists()
                or time.time() < json.loads((results / "run.json").read_text())["t0"] + 7.0
            ):  # inside the second stage's window
                assert proc.poll() is None and time.time() < deadline, (
                    "the run did not reach its second stage"
                )
                time.sleep(0.05)
            until = time.time() + 2.5
            while time.time() < until:  # the client runs 10 ms of every 35: its loop runs late
                os.kill(proc.pid, signal.SIGSTOP)
                time.sleep(0.025)
                os.kill(proc.pid, signal.SIGCONT)
                time.sleep(0.01)
            out, err = proc.communicate(timeout=90)
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.kill()
    expect_exit(proc, 0, out, err)
    lines = (results / "health.jsonl").read_text().splitlines()
    assert len(lines) >= 8 and all(json.loads(line)["end"] > json.loads(line)["start"] for line in lines)
    blocks = rebuilt(results)
    assert blocks["original"] == blocks["rebuilt"]
    stages = blocks["original"]["stages"]
    assert stages[0]["client"]["saturated"] is False
    assert stages[1]["client"]["saturated"] is True and stages[1]["verdict"] == "invalid"  # held
    assert blocks["original"]["client_saturated"].startswith("client saturated from ")


@pytest.mark.slow
def test_a_master_writes_its_workers_health_and_summarize_rebuilds_it(tmp_path: Path) -> None:
    results = tmp_path / "m"
    with running_sim(*SIM) as url:
        run = run_distributed(
            url, "--only-summary", *STAGED, results_dir=results, workers=1, users=4, run_time="10s"
        )
    expect_exit(run, 0)
    intervals = [json.loads(line) for line in (results / "health.jsonl").read_text().splitlines()]
    assert len(intervals) >= 8 and len({i["worker"] for i in intervals}) == 1  # each marked with its worker
    blocks = rebuilt(results)
    assert blocks["original"] == blocks["rebuilt"] and blocks["original"]["client"]["intervals"] >= 8
