"""The load process's own pauses: the collector policy, and Locust's stop lookup done before the load."""

from __future__ import annotations

from locust.env import Environment
from locust.event import Events

import gc
import inspect
import os
import sys
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest

from llm_locust.runtime import pauses


@pytest.fixture
def collector() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_thresholds_are_set_and_each_spawn_freezes_what_the_process_holds(collector: None) -> None:
    events = Events()
    pauses.install(events)
    assert gc.get_threshold() == pauses.THRESHOLDS
    before = gc.get_freeze_count()
    held = [[i] for i in range(1000)]  # containers alive when the users are spawned
    events.spawning_complete.fire(user_count=4)
    assert gc.get_freeze_count() >= before + len(held)


@pytest.fixture
def cold_module_map() -> Iterator[None]:
    """inspect's map of module files emptied (pytest has filled it), as in a fresh load process."""
    saved = dict(inspect.modulesbyfile), dict(inspect._filesbymodname)  # type: ignore[attr-defined]
    inspect.modulesbyfile.clear()
    inspect._filesbymodname.clear()  # type: ignore[attr-defined]
    yield
    inspect.modulesbyfile.update(saved[0])
    inspect._filesbymodname.update(saved[1])  # type: ignore[attr-defined]


def _paths_resolved_by_stop(events: Events) -> int:
    """How many paths Locust's real ``Runner.stop()`` resolves (``os.path.realpath``): work done in
    the hub while the drain's requests stream, one per loaded module when nothing was warmed."""
    runner = Environment(user_classes=[], events=events).create_local_runner()
    calls = 0
    real = os.path.realpath

    def counting(path: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return real(path, *args, **kwargs)

    with mock.patch.object(os.path, "realpath", counting):
        runner.stop()
    return calls


def test_locust_stop_maps_every_module_file_in_the_hub_when_nothing_warmed_it(
    cold_module_map: None,
) -> None:
    """The cost :func:`pauses.warm_stop` moves: without it, the stop resolves a path per module
    (the regression test below would pass vacuously if Locust's stop did no lookup)."""
    assert _paths_resolved_by_stop(Events()) > len(sys.modules) // 2


def test_the_stop_lookup_is_done_at_init_before_the_loop_monitor_runs(
    collector: None, cold_module_map: None
) -> None:
    """At ``init`` (``install``), not at ``test_start``: the preflight's client has started the loop
    monitor by then, and a 50-100 ms lookup there was a stall charged to the first requests."""
    events = Events()
    pauses.install(events)  # no event fired: the warm-up is done by the time install returns
    # the fresh module map is full again after the warm-up, so the stop maps (almost) nothing
    assert _paths_resolved_by_stop(events) < 20
    assert not any(events.test_start._handlers)  # and nothing of it is left for the test's start
