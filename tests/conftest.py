"""Suite-wide rules: no silent skips under CI, a per-test time limit, and how tests run in parallel.

A test skips when a real part it needs is missing (the Prometheus or Chromium binary, the
shared traces, root for network namespaces). On a developer's machine that is a skip
with its reason shown (`make test` runs pytest with ``-rs``); under CI (``CI`` set, as
``.ci/run`` does) a skip is a failure, so a missing part can never pass as green.

``make test`` runs the suite with pytest-xdist (``-n 5 --dist loadscope``, ``JOBS``): most tests wait
on real processes, so five run at once on two cores. Every test binds port 0 and writes under its
own ``tmp_path``; the tests of one module run on one worker, one after the other, so a module-
scoped fixture (a simulator, a finished run, an installed image) is built once, as in a serial
run. Tests marked ``serial`` depend on the client's own timing (its loop's lateness, how fast it
spawns users, whether it keeps up: a saturated client makes a stage invalid): ``make test`` runs
them after the parallel part, alone, but for the two modules marked ``paired`` (capacity searches
whose own processes use a few % of a core), which run beside each other first. The longest
modules (``LONGEST``), then the long real runs (``slow``), are handed out first, so the workers
end together on short tests.

A test whose outcome depends on the host having CPU to spare is marked ``host_timing`` (every
``serial`` one is too): failing on a busy host it runs once more, then fails as "host too busy:
..." with the figures (tests/busyhost.py). The load of the parallel part's other workers is the
suite's own, not a busy host's: a failure beside them alone is a plain failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

pytest_plugins = ("tests.busyhost",)


def _strict() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if not (_strict() and report.skipped) or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = f"skipped under CI (a real part is missing): {reason}"


# --- running in parallel (pytest-xdist, `make test`: -n 4 --dist loadscope) ---------------------


def pytest_configure(config: pytest.Config) -> None:
    """An xdist worker waits for its next test (and, at the end, for its shutdown) with a
    timeout, so gevent's hub keeps running.

    The tests import Locust, which monkey-patches ``threading``: a worker's waits in its main
    thread (``threading.Event.wait``, set by execnet's I/O thread) then block on a gevent lock
    with nothing else for the hub to run, and gevent ends them with ``LoopExit: This operation
    would block forever`` (the worker died before its first test, or printed that traceback as
    it shut down). A wait with a timeout is a hub timer: the worker looks again every 50 ms.
    """
    workers = [p for p in config.pluginmanager.get_plugins() if hasattr(p, "torun")]
    if not workers:  # not an xdist worker (its WorkerInteractor holds the queue of tests)
        return
    gateway = workers[0].channel.gateway
    _wait_on_the_hub(workers[0].torun._has_items_event)
    _wait_on_the_hub(gateway._execpool._primary_thread_task_ready)
    make_event = gateway.execmodel.Event  # and every event execnet makes from now on
    gateway.execmodel.Event = lambda: _wait_on_the_hub(make_event())


def _wait_on_the_hub(event: Any) -> Any:
    if type(event).__module__.startswith("gevent"):  # gevent's own Event already waits on the hub
        return event  # (and its wait is read-only: an AttributeError at the worker's shutdown)
    wait = event.wait

    def wait_in_steps(timeout: float | None = None) -> bool:
        if timeout is not None:
            return bool(wait(timeout))
        while not wait(0.05):
            pass
        return True

    event.wait = wait_in_steps
    return event


#: The modules of the parallel part whose tests took longest together (a fresh-clone ``make test``
#: with a busy loop, 2026-12-02, load average 7-10: test_load_models about 215 s, test_readme_promises
#: 200, test_soak 155, test_search_validity 150, test_package 135, test_capacity_distributed 93,
#: test_report 85-100 (no test of it marked slow), test_master_ingest 74, test_worker_pause 65, about
#: 110 since its two only-worker tests, 42 s, left the serial part on 2026-12-03),
#: longest first. They are handed out before all others: one of them started late (test_soak was the
#: 33rd module, test_report among the short ones at the end) holds its worker while the other workers
#: have nothing left. The schedule only: what runs, and where, is the same.
LONGEST = (
    "tests/integration/test_load_models.py",
    "tests/integration/test_readme_promises.py",
    "tests/integration/test_soak.py",
    "tests/integration/test_search_validity.py",
    "tests/integration/test_package.py",
    "tests/integration/test_worker_pause.py",
    "tests/integration/test_capacity_distributed.py",
    "tests/integration/test_report.py",
    "tests/integration/test_master_ingest.py",
)


def _rank(item: pytest.Item) -> tuple[int, bool]:
    module = item.nodeid.split("::", 1)[0]
    first = LONGEST.index(module) if module in LONGEST else len(LONGEST)
    return (first, item.get_closest_marker("slow") is None)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # the longest modules first (LONGEST), then the long real runs, so that the workers end
    # together on short tests (stable sort: the order within each kind stays the files' order);
    # with --dist loadscope the modules are handed out in the order of their first test
    items.sort(key=_rank)


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The installed versions the adapters were not checked with, said before the tests run.

    ``CHECKED_WITH`` is read from each adapter's source (importing them would import Locust and
    its monkey-patching into the controller process)."""
    import ast
    from pathlib import Path

    from tests.pins import unchecked

    lines: list[str] = []
    root = Path(__file__).resolve().parent.parent
    for adapter, pins in (
        ("llm_locust/client/http_adapter.py", "tests/unit/client/test_http_adapter.py"),
        ("llm_locust/runtime/locust_adapter.py", "tests/unit/runtime/test_locust_adapter.py"),
    ):
        for node in ast.parse((root / adapter).read_text()).body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "CHECKED_WITH" for t in node.targets
            ):
                lines += unchecked(ast.literal_eval(node.value), adapter, pins)
    return lines
