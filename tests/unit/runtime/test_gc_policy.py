"""The collector policy of a load process: high young threshold, freeze once users are spawned."""

from __future__ import annotations

from locust.event import Events

import gc
from collections.abc import Iterator

import pytest

from llm_locust.runtime import gc_policy


@pytest.fixture
def collector() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_thresholds_are_set_and_each_spawn_freezes_what_the_process_holds(collector: None) -> None:
    events = Events()
    gc_policy.install(events)
    assert gc.get_threshold() == gc_policy.THRESHOLDS
    before = gc.get_freeze_count()
    held = [[i] for i in range(1000)]  # containers alive when the users are spawned
    events.spawning_complete.fire(user_count=4)
    assert gc.get_freeze_count() >= before + len(held)
