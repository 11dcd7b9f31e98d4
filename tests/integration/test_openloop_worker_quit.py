"""An open-loop run whose worker quits mid-run: the survivor neither replays nor bursts.

Before (2026-12-02, real processes): at ``--request-rate 20`` on two workers, SIGINT on worker 0
made Locust move its dispatcher user to worker 1, whose new dispatcher walked worker 1's share of
the schedule from ``t0``: every arrival already past went out at once (sent twice: once on time,
once in the burst), send lag p99 2,682 ms. Now a worker runs one dispatcher a test: a user Locust
adds to it later waits, and takes over only if the running one is stopped, from the current time
(no arrival already past is sent). The survivor keeps its own share (docs/load-models.md): the
departed worker's arrivals from its quit on are not sent, and the summary says how many.

Real processes over loopback: the bundled simulator, a headless master and two workers.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.integration.test_worker_pause import _cluster, _end, _rows
from tests.locustproc import expect_exit
from tests.simproc import running_sim

pytestmark = pytest.mark.slow

RATE = 20.0  # requests per second, the whole plan's
RUN_S = 14


def test_a_worker_quitting_mid_schedule_is_not_replayed_by_the_survivor(tmp_path: Path) -> None:
    with running_sim("--ttft-ms", "30", "--tpot-ms", "5", "--output-tokens", "16") as url:
        master, procs, results = _cluster(url, tmp_path, f"{RUN_S}s", load=("--request-rate", str(RATE)))
        try:
            deadline = time.monotonic() + 90
            # ~5 s into the schedule: a replay would send ~50 past arrivals at once
            while len(_rows(results / "requests.jsonl")) < 100:
                assert time.monotonic() < deadline and master.poll() is None, "no records"
                time.sleep(0.05)
            os.kill(procs[0].pid, signal.SIGINT)  # the stimulus: worker 0 stopped as Ctrl-C would
            quit_at = time.time()
            master.wait(120)
        finally:
            _end([master, *procs])
    text = (tmp_path / "master.out").read_text() + (tmp_path / "master.log").read_text()
    expect_exit(master, 0, text)
    summary = json.loads((results / "summary.json").read_text())
    (quit,) = summary["workers_quit"]
    rows = _rows(results / "requests.jsonl")
    # no arrival of the plan sent twice: a replayed arrival has its original's intended time, to
    # microseconds (both from the same offset and t0); the seeded schedule is the same every run, and
    # two of a worker's arrivals are 1.1 ms apart at the closest
    intended: dict[str, list[float]] = {}
    for r in rows:
        intended.setdefault(r["worker"], []).append(r["start_time"] - r["send_lag"])
    twice = [
        (w, b) for w, times in intended.items() for a, b in itertools.pairwise(sorted(times)) if b - a < 2e-5
    ]
    assert not twice, f"{len(twice)} planned arrivals sent twice, e.g. {twice[:3]}"
    # no burst: after the quit, no second sends more than the plan's rate plus 50 % (a Poisson second
    # at 20/s reaches 31 with probability ~1 %; the survivor's share is 10/s, so it has ~10^-6)
    after = sorted(r["start_time"] for r in rows if r["start_time"] > quit_at)
    per_second = Counter(int(t - quit_at) for t in after)
    assert max(per_second.values()) <= RATE * 1.5, sorted(per_second.items())
    # on schedule: ~110-ms answers, ~1-2 in flight per worker; a replay lags by the seconds it replays
    assert summary["p99_send_lag_ms"] < 500.0, summary["p99_send_lag_ms"]
    # the departed worker's share from its quit on was not sent, and the summary says how many: its
    # arrivals (half the plan's rate) from the quit to the schedule's end (Poisson counts: wide margins)
    missed = summary["arrivals_not_sent"]
    expected = RATE / 2 * (summary["config"]["plan_t0"] + RUN_S - quit["at"])
    assert 0.5 * expected < missed < 1.5 * expected + 5, (missed, expected)
    assert f"master: {missed:,} planned arrivals not sent: the workers left kept their own shares" in text
