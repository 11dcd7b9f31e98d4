"""A closed-loop user sends its next request as soon as the last one ended (issue 29 §2).

Locust's task loop waits ``wait_time()`` between two tasks; with the 0 s of a closed loop
that is a ``gevent.sleep(0)``: the user is queued behind whatever else the event loop runs
in that iteration, out of flight. At 400 streams on a busy core that was a median 130-170 ms
between a response's end and the same user's next request (benchmarks/README.md). Here the
loop is made busy on purpose: the locustfile adds a watcher of an always-readable pipe, served
last in every loop iteration, that holds the CPU 30 ms each time (as the reads of hundreds of
other streams do). One user, so every
row is the same user's: the gap between a row's end and the next row's start is the time the
user spent out of flight.
"""

from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.locustproc import BIN
from tests.simproc import running_sim

BUSY_S = 0.030

LOCUSTFILE = f'''
import locust  # noqa: F401
import os
import time

import gevent
from locust import events

from llm_locust.runtime.shape import LLMShape
from llm_locust.runtime.user import LLMUser


class ChatUser(LLMUser):
    pass


class LoadModel(LLMShape):
    pass


def busy_turns() -> None:
    """An fd that is always readable, served last in every loop iteration (lowest priority),
    each time holding the CPU BUSY_S: a loop that serves hundreds of streams, in miniature."""
    read_end, write_end = os.pipe()
    os.write(write_end, b"x")  # never read: readable at every poll
    watcher = gevent.get_hub().loop.io(read_end, 1)
    watcher.priority = -2
    deadline = time.monotonic() + 30.0  # bounded: the run is far shorter

    def turn() -> None:
        if time.monotonic() > deadline:
            watcher.stop()
        end = time.perf_counter() + {BUSY_S}
        while time.perf_counter() < end:
            pass

    watcher.start(turn)


@events.test_start.add_listener
def _start(environment, **kwargs) -> None:
    busy_turns()
'''


@pytest.mark.slow
def test_the_next_request_leaves_as_soon_as_the_last_one_ended(tmp_path: Path) -> None:
    locustfile = tmp_path / "busy_locustfile.py"
    locustfile.write_text(LOCUSTFILE)
    results = tmp_path / "r"
    with running_sim("--ttft-ms", "20", "--tpot-ms", "5", "--output-tokens", "10") as url:
        cmd = [str(BIN / "locust"), "-f", str(locustfile), "--host", url, "--headless", "-u", "1", "-r", "1",
               "-t", "6s", "--stop-timeout", "10", "--results-dir", str(results), "--max-tokens", "10",
               "--prompt-tokens", "16", "--only-summary",
               # the gap measured from the client's read of the end: with the kernel's stamps a
               # row ends when its last byte arrived, up to one busy turn before the loop read it
               "--read-timestamps", "loop"]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(line) for line in (results / "requests.jsonl").open()]
    rows = sorted((r for r in rows if r["outcome"] == "ok"), key=lambda r: r["start_time"])
    assert len(rows) >= 20, [(r["start_time"], r["e2e"], r["ttft"]) for r in rows]
    gaps = np.array([b["start_time"] - (a["start_time"] + a["e2e"]) for a, b in itertools.pairwise(rows)])
    # before: every gap held at least one turn of the busy greenlet (>= 30 ms)
    assert np.percentile(gaps, 50) < 0.005, np.round(gaps * 1e3, 2)
    assert np.percentile(gaps, 90) < 0.010, np.round(gaps * 1e3, 2)
