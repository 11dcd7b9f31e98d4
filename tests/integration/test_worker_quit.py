"""A worker that quits mid-run (Ctrl-C on it, a pod deleted): the run says so.

Before: when the *only* worker of a headless master was stopped with SIGINT 2.4 s into an 18-s run,
Locust's master stopped the test ("The last worker quit, stopping test."), and llm-locust wrote a
summary of the 2.4 s that was not marked interrupted, said nothing, and the master exited 0: the
run read as the 18 s asked for. Now the run is interrupted ("the last worker quit"), the summary's
``interruption`` says why, when and the planned against the measured span, and the exit code is 8.
When one of two workers quits, the run goes on and the summary (``workers_quit``) and the
end-of-run text say from when one worker carried the load.

Real processes over loopback: the bundled simulator, a headless master and one or two workers.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.integration.test_worker_pause import _cluster, _end
from tests.locustproc import expect_exit
from tests.simproc import running_sim

pytestmark = pytest.mark.slow


def _rows(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def _run(tmp_path: Path, workers: int, run_time: str, quit_after_rows: int) -> tuple[subprocess.Popen, float]:
    """A master with ``workers`` workers; worker 0 gets SIGINT once ``quit_after_rows`` records are in.
    Returns the ended master and when the signal was sent."""
    with running_sim("--ttft-ms", "30", "--tpot-ms", "5", "--output-tokens", "16") as url:
        master, procs, results = _cluster(url, tmp_path, run_time, workers=workers)
        try:
            deadline = time.monotonic() + 90
            while _rows(results / "requests.jsonl") < quit_after_rows:
                assert time.monotonic() < deadline and master.poll() is None, "no records"
                time.sleep(0.05)
            os.kill(procs[0].pid, signal.SIGINT)  # the stimulus: the worker is stopped as Ctrl-C would
            sent = time.time()
            master.wait(120)
        finally:
            _end([master, *procs])
    return master, sent


def _text(tmp_path: Path) -> str:
    return (tmp_path / "master.out").read_text() + (tmp_path / "master.log").read_text()


def test_the_only_worker_quitting_ends_the_run_early_and_says_so_exit_8(tmp_path: Path) -> None:
    master, sent = _run(tmp_path, workers=1, run_time="18s", quit_after_rows=20)
    text = _text(tmp_path)
    expect_exit(master, 8, text)
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    start = summary["config"]["start_time"]
    assert summary["interrupted"] is True, summary["interrupted_by"]
    ended = summary["interruption"]
    assert ended["cause"] == "workers_quit" and ended["early"] is True, ended
    # the worker drains its requests in flight (~0.1 s each here) before it quits
    assert sent - 0.5 < ended["at"] < sent + 3.0, (ended, sent)
    assert ended["after_s"] == pytest.approx(ended["at"] - start, abs=0.002)
    assert ended["planned_s"] == 18.0
    assert ended["measured_s"] == pytest.approx(summary["measured_span"]["seconds"], abs=0.002)
    assert ended["measured_s"] < 8.0, ended  # the test stopped at the quit, not 18 s later
    (quit,) = summary["workers_quit"]
    assert quit["index"] == 0 and quit["workers_left"] == 0 and quit["at"] == ended["at"], quit
    said = re.fullmatch(
        rf"the last worker quit \(worker 0 \({quit['worker']}\), ([\d.]+) s into the test\): "
        r"the load ran ([\d.]+) s of 18\.0 s",
        summary["interrupted_by"],
    )
    assert said is not None, summary["interrupted_by"]
    assert said[1] == said[2] == f"{ended['after_s']:.1f}", (said.groups(), ended)
    assert f"llm-locust: interrupted by {summary['interrupted_by']} after " in text, text[-3000:]
    assert (
        f"master: worker 0 ({quit['worker']}) quit " in text and "the last one: no load from then on" in text
    )
    assert "llm-locust: the load ended early: the last worker quit" in text, text[-3000:]


def test_one_of_two_workers_quitting_is_said_and_the_run_goes_on(tmp_path: Path) -> None:
    master, sent = _run(tmp_path, workers=2, run_time="12s", quit_after_rows=40)
    text = _text(tmp_path)
    expect_exit(master, 0, text)
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    start = summary["config"]["start_time"]
    assert not summary["interrupted"] and "interruption" not in summary, summary.get("interrupted_by")
    assert summary["config"]["stop_time"] - start > 10.0, text[-3000:]  # the run's 12 s
    (quit,) = summary["workers_quit"]
    assert quit["workers_left"] == 1 and sent - 0.5 < quit["at"] < sent + 3.0, (quit, sent)
    since = quit["at"] - start
    who = f"worker {quit['index']} ({quit['worker']})"
    line = f"master: {who} quit {since:.1f} s into the run: 1 worker carried the load from then on"
    assert line in text, text[-3000:]
