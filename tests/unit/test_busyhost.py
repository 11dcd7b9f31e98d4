"""tests/busyhost.py's decision and figures, by hand: a failure on a busy host is run again, then
named; any other failure is plain; a pass is a pass."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.busyhost import Figures, Sample, Verdict, decide, describe, figures, tree_ticks


@pytest.mark.parametrize(
    ("failed", "others", "attempt", "fits", "verdict"),
    [
        (False, 0.9, 1, True, Verdict.PASS),  # a pass on a busy host is a pass
        (False, 0.0, 2, True, Verdict.PASS),
        (True, 0.05, 1, True, Verdict.FAIL),  # an idle host: a plain failure, no rerun
        (True, 0.249, 1, True, Verdict.FAIL),
        (True, None, 1, True, Verdict.FAIL),  # the host's CPU unknown: plain
        (True, 0.25, 1, True, Verdict.RERUN),  # at the limit: busy
        (True, 0.8, 1, True, Verdict.RERUN),
        (True, 0.8, 1, False, Verdict.FAIL_BUSY),  # no time left for a second run
        (True, 0.8, 2, True, Verdict.FAIL_BUSY),  # failed twice, busy twice
        (True, 0.1, 2, True, Verdict.FAIL),  # the second run failed on an idle host
    ],
)
def test_decide(failed: bool, others: float | None, attempt: int, fits: bool, verdict: Verdict) -> None:
    assert decide(failed, others, attempt, fits, 0.25) is verdict


def test_figures_split_the_hosts_busy_share_between_the_test_and_the_others() -> None:
    # 1000 ticks of capacity went by, 600 of them busy, 200 of those in the test's tree
    seen = figures(Sample(10.0, (100.0, 1000.0), 50.0), Sample(14.5, (700.0, 2000.0), 250.0))
    assert seen == Figures(4.5, pytest.approx(0.4), pytest.approx(0.2))
    # the tree's count can lag the host's (ticks of a process reaped later): never above the host's
    seen = figures(Sample(0.0, (0.0, 1000.0), 0.0), Sample(1.0, (300.0, 2000.0), 500.0))
    assert (seen.others, seen.own) == (0.0, pytest.approx(0.3))
    # the tree unknown: every busy tick is another's; the host unknown: nothing is known
    assert figures(Sample(0.0, (0.0, 0.0), None), Sample(1.0, (50.0, 100.0), None)).others == 0.5
    assert figures(Sample(0.0, None, 1.0), Sample(1.0, None, 2.0)) == Figures(1.0, None, None)
    assert figures(Sample(0.0, (5.0, 10.0), 1.0), Sample(1.0, (5.0, 10.0), 1.0)).others is None


def _stat(
    proc: Path, pid: int, comm: str, ppid: int, utime: int, stime: int, cutime: int, cstime: int
) -> None:
    (proc / str(pid)).mkdir()
    rest = ["S", str(ppid), *["0"] * 9, str(utime), str(stime), str(cutime), str(cstime), "20", "0"]
    (proc / str(pid) / "stat").write_text(f"{pid} ({comm}) {' '.join(rest)}\n")


def test_tree_ticks_adds_the_root_and_every_descendant_only(tmp_path: Path) -> None:
    _stat(tmp_path, 1, "init", 0, 1000, 1000, 0, 0)
    _stat(tmp_path, 10, "pytest (gw0) x", 1, 5, 6, 7, 8)  # a name with spaces and a parenthesis
    _stat(tmp_path, 11, "locust", 10, 100, 20, 0, 0)
    _stat(tmp_path, 12, "sim", 11, 30, 3, 1, 1)
    _stat(tmp_path, 13, "busy loop", 1, 900, 0, 0, 0)  # another process: not the tree's
    (tmp_path / "self").mkdir()  # not a pid
    (tmp_path / "14").mkdir()  # gone meanwhile: no stat
    assert tree_ticks(10, str(tmp_path)) == (5 + 6 + 7 + 8) + (100 + 20) + (30 + 3 + 1 + 1)
    assert tree_ticks(12, str(tmp_path)) == 35
    assert tree_ticks(99, str(tmp_path)) is None


def test_tree_ticks_counts_a_child_burning_cpu() -> None:
    hz = os.sysconf("SC_CLK_TCK")
    before = tree_ticks(os.getpid())
    assert before is not None
    burn = "import time\nend = time.time() + 60\nwhile time.process_time() < 0.5 and time.time() < end: pass"
    child, during = subprocess.Popen([sys.executable, "-c", burn]), None
    try:
        deadline = time.time() + 60
        while child.poll() is None and time.time() < deadline:
            during = tree_ticks(os.getpid())
            time.sleep(0.05)
        assert during is not None and during > before  # counted while it runs
    finally:
        child.kill()
        child.wait()
    after = tree_ticks(os.getpid())  # and once reaped (in this process's cutime)
    assert after is not None and after - before >= 0.5 * hz


def test_describe_names_the_figures() -> None:
    text = describe(Figures(83.4, 0.634, 0.2), 2, 11.25, 0.25)
    assert text == (
        "other processes used 63 % of the host's 2 cores, this test's processes 20 % over 83 s, "
        "load average 11.2 (too busy from 25 %)"
    )
    assert describe(Figures(1.0, None, None), 4, None, 0.25).startswith("other processes used unknown of")


def test_under_xdist_the_suites_other_workers_are_not_other_processes() -> None:
    # an xdist worker reads its controller's tree too (every worker): 1000 ticks of capacity went
    # by, 900 of them busy, 100 in this test's tree and 700 more in the suite's other workers
    seen = figures(Sample(0.0, (0.0, 1000.0), 0.0, 0.0), Sample(3.0, (900.0, 2000.0), 100.0, 800.0))
    assert seen == Figures(3.0, pytest.approx(0.1), pytest.approx(0.1), pytest.approx(0.7))
    assert decide(True, seen.others, 1, True, 0.25) is Verdict.FAIL  # the suite's own load: plain
    assert describe(seen, 2, 1.5, 0.25) == (
        "other processes used 10 % of the host's 2 cores, this test's processes 10 %, the suite's "
        "other xdist workers 70 % (not counted as others') over 3 s, load average 1.5 (too busy from 25 %)"
    )
    # the suite's count lags the host's, or the test's leads it: never above the host's, never below
    # the test's own
    seen = figures(Sample(0.0, (0.0, 1000.0), 0.0, 0.0), Sample(1.0, (500.0, 2000.0), 200.0, 900.0))
    assert seen == Figures(1.0, 0.0, pytest.approx(0.2), pytest.approx(0.3))
    seen = figures(Sample(0.0, (0.0, 1000.0), 0.0, 0.0), Sample(1.0, (500.0, 2000.0), 200.0, 100.0))
    assert seen == Figures(1.0, pytest.approx(0.3), pytest.approx(0.2), 0.0)
