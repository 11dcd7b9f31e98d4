"""tests/busyhost.py in a real pytest run (a subprocess, with and without xdist): a watched test
failing while busy loops hold every core is run once more, in a fresh sitting, then fails as
"host too busy: ..."; the same test on an idle host (played by a limit no host reaches) is a
plain failure, run once; an unwatched failure is never run again; a pass is a pass. Under
xdist, the load of the suite's other workers is the suite's own, not a busy host's.

The four inner runs (plain, xdist, "idle", "beside") go at once, under one set of busy loops: each
is a few seconds of sleeps and a pytest start; one after the other they took 12, 16, 5 and 13 s of
the serial part. The "idle" one plays its idle host by its limit, so the loops change nothing for
it; in "beside" a sibling worker's loops hold the host as much as this test's do."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# its busy loops hold every core: run alone (after the parallel part), so they slow no other test
pytestmark = pytest.mark.serial

INNER = """
import pathlib, time
import pytest

RUNS = pathlib.Path(__file__).with_name("runs.txt")


def count(name):
    with RUNS.open("a") as runs:
        runs.write(name + "\\n")
    return RUNS.read_text().split().count(name)


@pytest.fixture(scope="module")
def built():
    return count("fixture")


@pytest.mark.host_timing
def test_timing():
    count("timing")
    time.sleep(1.0)
    assert False, "the timing assertion"


def test_plain():
    count("plain")
    assert False, "a plain assertion"


@pytest.mark.serial
def test_passes_once_its_fixture_is_built_again(built):
    count("rebuilt")
    time.sleep(1.0)
    assert built >= 2, "the first build"


@pytest.mark.host_timing
@pytest.mark.timeout(3)
def test_no_time_for_a_second_run():
    count("late")
    time.sleep(2.0)
    assert False, "the late assertion"


@pytest.mark.host_timing
def test_passes():
    count("passes")
"""


# Under xdist, beside a watched test, a sibling worker's test holds every core (the suite's own
# load, as `make test`'s -n 4 runs four tests at once), and writes the share of the host they had.
SIBLING = """
import os, pathlib, resource, subprocess, sys, time

HERE = pathlib.Path(__file__).parent
SPIN = "import os, time\\nend = time.time() + 60\\nwhile time.time() < end and not os.path.exists({!r}): pass"


def cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def test_holds_every_core_until_the_watched_test_is_done():
    spin = SPIN.format(str(HERE / "done"))
    began, cpu_before = time.time(), cpu()
    loops = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(os.cpu_count() or 1)]
    try:
        time.sleep(0.5)
        (HERE / "spinning").touch()
        for loop in loops:
            loop.wait(90)
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    # the loops' mean share of the host while they ran (on a busy host, less than all of it)
    share = (cpu() - cpu_before) / (time.time() - began) / (os.cpu_count() or 1)
    (HERE / "loops.txt").write_text(str(share))
"""

WATCHED = """
import pathlib, time
import pytest

HERE = pathlib.Path(__file__).parent


def test_waits_for_the_sibling_to_spin():
    deadline = time.time() + 60
    while not (HERE / "spinning").exists() and time.time() < deadline:
        time.sleep(0.05)
    assert (HERE / "spinning").exists(), "the sibling never spun: both modules on one worker?"


@pytest.mark.host_timing
def test_timing_beside_a_busy_sibling():
    with (HERE / "runs.txt").open("a") as runs:
        runs.write("beside\\n")
    time.sleep(3.0)
    assert False, "the timing assertion"


def test_lets_the_sibling_stop():
    (HERE / "done").touch()
"""


@contextmanager
def busy_loops() -> Iterator[None]:
    """One loop per core (each bounded to 5 minutes): other processes hold the whole host."""
    spin = "import time\nend = time.time() + 300\nwhile time.time() < end: pass"
    loops = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(os.cpu_count() or 1)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


Inner = tuple[dict[str, ET.Element], Counter[str], str]


def start_inner(
    tmp_path: Path, *args: str, limit: str | None = None, modules: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    modules = modules or {"test_inner.py": INNER}
    for name, text in modules.items():
        (tmp_path / name).write_text(text)
    drop = ("CI", "BUSYHOST_LIMIT", "PYTEST_ADDOPTS", "PYTEST_XDIST_", "PYTEST_CURRENT_TEST")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["PYTHONPATH"] = str(REPO)
    if limit is not None:
        env["BUSYHOST_LIMIT"] = limit
    cmd = [sys.executable, "-m", "pytest", "-p", "tests.busyhost", "-p", "no:cacheprovider", "-rA"]
    with (tmp_path / "stdout").open("w") as out, (tmp_path / "stderr").open("w") as err:
        return subprocess.Popen(
            [*cmd, f"--junitxml={tmp_path / 'junit.xml'}", *args, *modules],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=err,
            text=True,
        )


def finish_inner(tmp_path: Path, proc: subprocess.Popen[str]) -> Inner:
    try:
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stdout = (tmp_path / "stdout").read_text()
    assert proc.returncode == 1, stdout + (tmp_path / "stderr").read_text()  # some tests failed
    cases = {c.get("name", ""): c for c in ET.parse(tmp_path / "junit.xml").iter("testcase")}
    return cases, Counter((tmp_path / "runs.txt").read_text().split()), stdout


@pytest.fixture(scope="module")
def inner_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("inner")


#: the limit of the inner run beside a busy sibling: this test's loops hold about half the host
#: then (one loop per core, as many as the sibling's), so the host is too busy only if yet other
#: processes held a quarter more (the sibling's loops would take it over any limit)
BESIDE = 0.75


@pytest.fixture(scope="module")
def inner(inner_root: Path) -> dict[str, Inner]:
    """The four inner runs, at once, while busy loops hold every core."""
    runs = {
        "plain": (),
        "xdist": ("-n", "2", "--dist", "loadscope"),
        "idle": (),  # no host is that busy (limit 2): an idle host
    }
    with busy_loops():
        procs = {
            name: start_inner(inner_root / name, *args, limit="2" if name == "idle" else None)
            for name, args in runs.items()
        }
        modules = {"test_a_sibling.py": SIBLING, "test_b_watched.py": WATCHED}
        procs["beside"] = start_inner(
            inner_root / "beside", "-n", "2", "--dist", "loadscope", limit=str(BESIDE), modules=modules
        )
        return {name: finish_inner(inner_root / name, proc) for name, proc in procs.items()}


REBUILT_NOTE = (
    "test_passes_once_its_fixture_is_built_again (passed): the first run failed (call: AssertionError: "
    "the first build) while other processes used "
)


def _failure(case: ET.Element) -> str | None:
    failure = case.find("failure")
    return None if failure is None else failure.get("message", "")


def test_a_failure_on_a_busy_host_runs_again_then_names_the_busy_host(inner: dict[str, Inner]) -> None:
    cases, runs, out = inner["plain"]
    message = _failure(cases["test_timing"])
    assert message is not None and message.startswith("host too busy: other processes used "), out
    assert "of the host's" in message and "load average" in message and "failed twice" in message
    assert message.rstrip().endswith("the timing assertion\nassert False")  # the failure itself follows
    late = _failure(cases["test_no_time_for_a_second_run"])
    assert (
        late is not None
        and late.startswith("host too busy: ")
        and "failed with no time left for a second run in its 3-s limit" in late
    )
    assert _failure(cases["test_plain"]) == "AssertionError: a plain assertion\nassert False"  # not watched
    assert _failure(cases["test_passes_once_its_fixture_is_built_again"]) is None  # the rerun built it again
    assert _failure(cases["test_passes"]) is None
    assert runs == Counter(timing=2, plain=1, rebuilt=2, fixture=2, late=1, passes=1)
    assert "run again after failing on a busy host" in out
    assert REBUILT_NOTE in out


def test_under_xdist_the_busy_host_is_named_too(inner: dict[str, Inner]) -> None:
    cases, runs, out = inner["xdist"]
    message = _failure(cases["test_timing"])
    assert message is not None and message.startswith("host too busy: other processes used "), out
    assert _failure(cases["test_passes_once_its_fixture_is_built_again"]) is None
    assert runs == Counter(timing=2, plain=1, rebuilt=2, fixture=2, late=1, passes=1)
    assert REBUILT_NOTE in out


def test_the_same_failure_on_an_idle_host_is_a_plain_failure_run_once(inner: dict[str, Inner]) -> None:
    cases, runs, out = inner["idle"]  # busy loops, but a limit no host reaches: an idle host
    assert _failure(cases["test_timing"]) == "AssertionError: the timing assertion\nassert False"
    assert (
        _failure(cases["test_no_time_for_a_second_run"]) == "AssertionError: the late assertion\nassert False"
    )
    assert _failure(cases["test_passes_once_its_fixture_is_built_again"]) == (
        "AssertionError: the first build\nassert 1 >= 2"
    )
    assert _failure(cases["test_passes"]) is None
    assert runs == Counter(timing=1, plain=1, rebuilt=1, fixture=1, late=1, passes=1)
    assert "host too busy" not in out and "run again after" not in out


def _shares(case: ET.Element) -> dict[str, float]:
    prefix = "busy host: "
    return {
        p.get("name", "")[len(prefix) :]: float(p.get("value", "nan"))
        for p in case.iter("property")
        if p.get("name", "").startswith(prefix)
    }


def test_under_xdist_the_suites_own_workers_are_not_a_busy_host(
    inner: dict[str, Inner], inner_root: Path
) -> None:
    """The defect: the busy-host figures counted the suite's other xdist workers as other processes,
    so under `make test`'s -n 4 a real failure was labelled "host too busy" (and run twice).

    On a host held by others the sibling's loops get little of it (12 % of the two cores at load
    average 8.6, nice 19): what they had is seen as the suite's, whatever it was."""
    cases, runs, out = inner["beside"]
    loops = float((inner_root / "beside" / "loops.txt").read_text())
    assert _failure(cases["test_holds_every_core_until_the_watched_test_is_done"]) is None, out
    assert _failure(cases["test_waits_for_the_sibling_to_spin"]) is None, out
    case = cases["test_timing_beside_a_busy_sibling"]
    seen = _shares(case)
    # the sibling's loops were seen, as the suite's own: named apart, not in others'
    assert seen.keys() == {"others", "own", "siblings"}, (seen, out)
    assert seen["siblings"] >= 0.5 * loops > 0.0, (seen, loops)
    # at most the host's whole capacity, but for the rounding of the three (each to 3 decimals, as
    # the report writes them: 0.539 + 0.006 + 0.456 failed a bound of 1.001, 2026-12-03)
    assert seen["others"] + seen["own"] + seen["siblings"] <= 1 + 3 * 0.0005 + 1e-9, seen
    if seen["others"] < BESIDE:  # no more than this test's loops held the rest: a plain failure, run once
        assert _failure(case) == "AssertionError: the timing assertion\nassert False", out
        assert runs == Counter(beside=1)
        assert "host too busy" not in out and "run again after" not in out
    else:  # yet other processes held the host too: said, with the workers'
        message = _failure(case)
        assert message is not None and message.startswith("host too busy: "), out
        assert "the suite's other xdist workers" in message
