"""A test that needs the host's spare CPU fails on a busy host by saying so, not on luck.

Tests marked ``host_timing`` (and every ``serial`` one: they depend on the client's own timing)
judge timings that hold only when the client has the CPU it asks for: a stage is ``invalid``
when the client saturates, a capacity answer is withheld (exit 6), a soak drift is inconclusive.
On a shared machine (a developer's, CI's) other processes can take that CPU. For such a test
this plugin reads the host's CPU (``/proc/stat``, :func:`llm_locust.client.health.host_cpu_times`) and
the CPU of the test's own process tree (this pytest process and its descendants: the simulators,
masters and workers it started, ``/proc/PID/stat``) before and after it runs, and takes
*others* = the host's busy share of all its cores less the tree's. Under pytest-xdist the suite's
other workers (``make test``'s ``-n 4``: the tests running beside this one, and everything they
started) are the suite's own load, not another's: a worker reads the whole tree of its controller
(its parent process) too, and *others* is the host's busy share less that; the workers' share is
named apart (before, a real failure under ``-n 4`` was labelled "host too busy" by its siblings'
load). The window is the test's own run and, as module-scoped fixtures may have been built by an
earlier test, the module's since its first test on this process; the busier of the two counts.

- A pass is a pass.
- A failure while others held at least :data:`TOO_BUSY` of the host's CPU: the test runs once
  more, in a fresh sitting (every fixture torn down and built again), if a second run fits in
  what is left of its time limit (pytest-timeout's limit covers both runs).
- A second failure with the host still that busy (or no time for one): the test fails with a
  message starting ``host too busy:`` naming the figures (others' share, the tree's, under
  xdist the suite's other workers', the load average), the original failure after it.
- Any other failure (an idle host, a host kept busy by the suite's own workers only, or
  ``/proc/stat`` unreadable) is a plain failure.

Every watched test's report carries the figures of its last run as properties (``busy host:
others``, ``own``, ``siblings``: shares of the host's CPU; ``--junitxml`` writes them).

Never a skip (under CI a skip is a failure: tests/conftest.py). ``BUSYHOST_LIMIT`` in the
environment replaces :data:`TOO_BUSY` (the plugin's own tests set it above 1 to play an idle host).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import pytest
from _pytest.runner import runtestprotocol

from llm_locust.client.health import host_cpu_times

#: Share of the host's CPU capacity (all cores) that other processes must hold for the host to
#: count as too busy: half a core on a 2-core machine, two cores of 8. The test's own processes
#: (a client and a simulator, often a master and workers, each wanting up to a core at its peaks)
#: can then no longer count on a core each. An idle host reads 0-5 %, one busy loop on 2 cores
#: 50 %, a shared 2-core machine at load average 9-14 80-100 %.
TOO_BUSY = 0.25
MARKER = "host_timing"
SECTION = "busy host"
_MODULE_START = pytest.StashKey[tuple[str, "Sample"]]()
#: What the printing process (xdist's controller, or the only one) lists at the end: the reruns.
_RERUNS: list[str] = []


class Verdict(StrEnum):
    PASS = "pass"
    RERUN = "rerun"  # failed on a busy host: once more
    FAIL_BUSY = "fail-busy"  # failed twice on a busy host (or no time for a second run)
    FAIL = "fail"  # failed on an idle host, or the host's CPU is unknown


def limit() -> float:
    try:
        return float(os.environ.get("BUSYHOST_LIMIT") or TOO_BUSY)
    except ValueError:
        return TOO_BUSY


def decide(failed: bool, others: float | None, attempt: int, rerun_fits: bool, too_busy: float) -> Verdict:
    """What to do with a watched test's run number ``attempt`` (1 or 2) whose window saw other
    processes hold ``others`` (0-1, ``None``: unknown) of the host's CPU."""
    if not failed:
        return Verdict.PASS
    if others is None or others < too_busy:
        return Verdict.FAIL
    return Verdict.RERUN if attempt == 1 and rerun_fits else Verdict.FAIL_BUSY


# --- the figures ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """One reading: wall clock, the host's (busy, total) CPU ticks, the test's tree's ticks and,
    under xdist, the whole suite's (the controller's tree: every worker; ``None`` otherwise)."""

    at: float
    host: tuple[float, float] | None
    tree: float | None
    suite: float | None = None


@dataclass(frozen=True)
class Figures:
    seconds: float
    others: float | None  # share of the host's capacity used by other processes
    own: float | None  # share used by the test's process tree
    siblings: float | None = None  # share used by the suite's other xdist workers (None: no xdist)


def _share(before: float | None, after: float | None, total: float, low: float, high: float) -> float | None:
    if before is None or after is None:
        return None
    return min(max((after - before) / total, low), high)


def figures(before: Sample, after: Sample) -> Figures:
    seconds = after.at - before.at
    if before.host is None or after.host is None or after.host[1] <= before.host[1]:
        return Figures(seconds, None, None)
    total = after.host[1] - before.host[1]
    busy = min(max((after.host[0] - before.host[0]) / total, 0.0), 1.0)
    # the trees' counts can lag the host's (ticks of a process reaped later): never above the host's
    own = _share(before.tree, after.tree, total, 0.0, busy)
    suite = _share(before.suite, after.suite, total, own or 0.0, busy)
    if suite is not None:  # under xdist: the suite's tree holds this test's
        return Figures(seconds, busy - suite, own, suite - (own or 0.0))
    if own is None:
        return Figures(seconds, busy, None)  # the tree unknown: all the busy share counts as others'
    return Figures(seconds, busy - own, own)


def _process_table(proc: str) -> tuple[dict[int, float], dict[int, list[int]]] | None:
    """Every process's CPU ticks (user + system, with reaped children's) and each one's children."""
    children: dict[int, list[int]] = {}
    ticks: dict[int, float] = {}
    try:
        entries = [e for e in os.listdir(proc) if e.isdigit()]
    except OSError:
        return None
    for entry in entries:
        try:
            with open(f"{proc}/{entry}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            pid, parent = int(entry), int(fields[1])
            ticks[pid] = sum(float(v) for v in fields[11:15])  # utime stime cutime cstime
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        children.setdefault(parent, []).append(pid)
    return ticks, children


def _tree_sum(table: tuple[dict[int, float], dict[int, list[int]]] | None, root: int | None) -> float | None:
    if table is None or root is None or root not in table[0]:
        return None
    ticks, children = table
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += ticks.get(pid, 0.0)
        todo.extend(children.get(pid, ()))
    return total


def tree_ticks(root: int, proc: str = "/proc") -> float | None:
    """CPU ticks (user + system, with reaped children's) of ``root`` and all its descendants."""
    return _tree_sum(_process_table(proc), root)


def suite_root() -> int | None:
    """The process whose tree is the whole suite, when this is an xdist worker: its controller,
    which started it (xdist's local workers are the controller's children); ``None`` otherwise."""
    return os.getppid() if os.environ.get("PYTEST_XDIST_WORKER") else None


def sample() -> Sample:
    """Now's reading; what cannot be read is ``None`` (never an error: every watched test runs this)."""
    try:
        host = host_cpu_times()
    except ValueError:
        host = None
    table = _process_table("/proc")
    return Sample(time.time(), host, _tree_sum(table, os.getpid()), _tree_sum(table, suite_root()))


def describe(seen: Figures, cores: int, load: float | None, too_busy: float) -> str:
    others = "unknown" if seen.others is None else f"{100 * seen.others:.0f} %"
    own = "" if seen.own is None else f", this test's processes {100 * seen.own:.0f} %"
    if seen.siblings is not None:  # not counted as others': the suite's own load
        own += f", the suite's other xdist workers {100 * seen.siblings:.0f} % (not counted as others')"
    avg = "" if load is None else f", load average {load:.1f}"
    return (
        f"other processes used {others} of the host's {cores} cores{own} over {seen.seconds:.0f} s"
        f"{avg} (too busy from {100 * too_busy:.0f} %)"
    )


def _load() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


# --- the plugin -------------------------------------------------------------------------------


def watched(item: pytest.Item) -> bool:
    return item.get_closest_marker(MARKER) is not None or item.get_closest_marker("serial") is not None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}: passes only when the host has CPU to spare: a failure on a busy host is run once "
        "more, then fails as 'host too busy: ...' (tests/busyhost.py; every `serial` test is watched too)",
    )
    _RERUNS.clear()


def _time_limit(item: pytest.Item) -> float | None:
    """pytest-timeout's limit for ``item`` (it covers the whole protocol: both runs)."""
    try:
        from pytest_timeout import _get_item_settings

        timeout = _get_item_settings(item).timeout
    except Exception:
        return None
    return float(timeout) if timeout else None


def _busiest(windows: Sequence[Figures]) -> Figures:
    known = [w for w in windows if w.others is not None]
    return max(known, key=lambda w: w.others or 0.0) if known else windows[0]


def _module_start(item: pytest.Item) -> Sample:
    """The reading taken before the first test of ``item``'s module on this process (when its
    module-scoped fixtures may have been built)."""
    module = item.nodeid.split("::", 1)[0]
    first = item.config.stash.get(_MODULE_START, None)
    if first is None or first[0] != module:
        first = (module, sample())
        item.config.stash[_MODULE_START] = first
    return first[1]


def _attempt(item: pytest.Item, nextitem: pytest.Item | None) -> tuple[list[pytest.TestReport], Figures]:
    first, start = _module_start(item), sample()
    reports = runtestprotocol(item, log=False, nextitem=nextitem)
    end = sample()
    return reports, _busiest([figures(start, end), figures(first, end)])


def _fresh_sitting(item: pytest.Item) -> str:
    """Tear every fixture down (module-scoped ones too) so that the rerun builds them again."""
    if _MODULE_START in item.config.stash:
        del item.config.stash[_MODULE_START]
    try:
        item.session._setupstate.teardown_exact(None)  # type: ignore[attr-defined]
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # a fixture's teardown error, a timeout (pytest's outcomes): said
        return f"; tearing the fixtures down said {type(exc).__name__}: {exc}"
    return ""


def _failed(reports: Sequence[pytest.TestReport]) -> bool:
    return any(r.failed for r in reports)


def _why(reports: Sequence[pytest.TestReport]) -> str:
    """The first failure's message, its first line (the note of a rerun)."""
    failed = next(r for r in reports if r.failed)
    crash = getattr(failed.longrepr, "reprcrash", None)
    text = str(crash.message if crash is not None else failed.longrepr).strip()
    return f"{failed.when}: {text.splitlines()[0] if text else '?'}"


def _name_the_busy_host(reports: Sequence[pytest.TestReport], text: str) -> None:
    for report in reports:
        if not report.failed:
            continue
        crash = getattr(report.longrepr, "reprcrash", None)
        if crash is not None and hasattr(report.longrepr, "addsection"):
            crash.message = f"{text}\n{crash.message}"
            report.longrepr.addsection(SECTION, text)  # type: ignore[union-attr]
        else:
            report.longrepr = f"{text}\n\n{report.longrepr}"


def _properties(seen: Figures) -> list[tuple[str, object]]:
    """The last run's figures, as the report's properties (``--junitxml`` writes them): each share
    of the host's CPU, rounded to 0.001; a share not known is left out."""
    shares = {"others": seen.others, "own": seen.own, "siblings": seen.siblings}
    return [(f"{SECTION}: {name}", round(v, 3)) for name, v in shares.items() if v is not None]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    if not watched(item):
        _module_start(item)
        return None
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    began, cores, too_busy = time.time(), os.cpu_count() or 1, limit()
    reports, seen = _attempt(item, nextitem)
    time_limit = _time_limit(item)
    fits = time_limit is None or 2 * (time.time() - began) <= time_limit
    verdict = decide(_failed(reports), seen.others, 1, fits, too_busy)
    note = ""
    if verdict is Verdict.RERUN:
        first = describe(seen, cores, _load(), too_busy)
        note = f"the first run failed ({_why(reports)}) while {first}: run once more{_fresh_sitting(item)}"
        reports, seen = _attempt(item, nextitem)
        verdict = decide(_failed(reports), seen.others, 2, False, too_busy)
        noted = next((r for r in reports if r.when == "call"), reports[0])
        noted.sections.append((SECTION, note))
    if verdict is Verdict.FAIL_BUSY:
        limit_s = f"{time_limit:.0f}" if time_limit else "?"
        again = "twice" if note else f"with no time left for a second run in its {limit_s}-s limit"
        text = f"host too busy: {describe(seen, cores, _load(), too_busy)}; failed {again}"
        _name_the_busy_host(reports, text)
    for report in reports:
        report.user_properties.extend(_properties(seen))
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # on the process that prints (xdist's controller, or the only one): the reruns, listed at the end
    _RERUNS.extend(
        f"{report.nodeid} ({report.outcome}): {text}" for name, text in report.sections if name == SECTION
    )


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _RERUNS:
        terminalreporter.section("run again after failing on a busy host (tests/busyhost.py)")
        for line in _RERUNS:
            terminalreporter.line(line)
