"""A distributed open-loop run ends with its schedule: no worker sends past ``-t``.

Before (2026-12-02, real processes, ``--request-rate 20 -t 8s``, a master and two workers, none
quitting): one run lasted 29 s with 394 of its 540 requests sent after the schedule's end, another
9 s with 14. Locust passes workers none of its own options, so a worker's plan had no ``-t`` (its rate
stage ran "forever"); after the schedule the master kept the test going while requests were in flight
(the drain), and the workers kept dispatching meanwhile. Now the master's plan-start message carries
where the schedule ends and a worker's dispatcher sends nothing due at or after it; the drain then
waits only for the requests already in flight (~110 ms each here).

Real processes over loopback: the bundled simulator, a headless master and two workers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_worker_pause import _cluster, _end, _rows
from tests.locustproc import expect_exit
from tests.simproc import running_sim

pytestmark = pytest.mark.slow

RATE, RUN_S = 20.0, 8.0
#: An arrival's actual send after its intended time, at most (send lag on a busy 2-core host;
#: the run's p99 is a few ms). A send past the end by more is a new send, not a late one.
LATE_S = 1.0
#: The drain after the schedule: the requests in flight (~110 ms each) finish and the shape, which
#: ticks once a second, sees none left: about 1-2 s. The old code drained 1 to 21 s.
DRAIN_S = 3.0


def _run_to_its_end(tmp_path: Path) -> tuple[dict, list[dict]]:
    """The run, a master and two workers left alone until the master exits: its summary and rows."""
    sim = ("--ttft-ms", "30", "--tpot-ms", "5", "--output-tokens", "16")  # ~110-ms answers
    with running_sim(*sim) as url:
        master, procs, results = _cluster(url, tmp_path, f"{RUN_S:g}s", load=("--request-rate", str(RATE)))
        try:
            master.wait(120)
        finally:
            _end([master, *procs])
    expect_exit(master, 0, (tmp_path / "master.out").read_text() + (tmp_path / "master.log").read_text())
    return json.loads((results / "summary.json").read_text()), _rows(results / "requests.jsonl")


def test_no_worker_sends_past_the_schedule_end_and_the_run_ends_with_it(tmp_path: Path) -> None:
    summary, rows = _run_to_its_end(tmp_path)
    t0, stop = summary["config"]["plan_t0"], summary["config"]["stop_time"]
    assert len({r["worker"] for r in rows}) == 2, "both workers sent"
    # every request was an arrival of the schedule: intended before the end, sent at most LATE_S after it
    intended_after = sorted(
        r["start_time"] - r["send_lag"] - t0 for r in rows if r["start_time"] - r["send_lag"] - t0 >= RUN_S
    )
    assert not intended_after, (
        f"{len(intended_after)} of {len(rows)} sent after the schedule's end: {intended_after[:5]}"
    )
    sent_late = [r["start_time"] - t0 for r in rows if r["start_time"] - t0 > RUN_S + LATE_S]
    assert not sent_late, sent_late[:5]
    # the schedule's arrivals, all of them: ~160 (Poisson at 20/s for 8 s; 3.5 sigma is +-44)
    assert 116 < len(rows) < 204, len(rows)
    # the test ended with the schedule plus the drain of what was in flight
    assert stop - t0 < RUN_S + DRAIN_S, (stop - t0, len(rows))
