"""When a worker decides its master is gone: only while users run, after the stated silence."""

from __future__ import annotations

from types import SimpleNamespace

from llm_locust.runtime.master_watch import MASTER_SILENCE_S, master_lost


def runner(state: str, last: float | None) -> SimpleNamespace:
    return SimpleNamespace(state=state, last_heartbeat_timestamp=last)


def test_a_running_worker_decides_after_the_stated_silence() -> None:
    assert master_lost(runner("running", 100.0), 100.0 + MASTER_SILENCE_S) is None
    assert master_lost(runner("running", 100.0), 100.0 + MASTER_SILENCE_S + 0.5) == MASTER_SILENCE_S + 0.5
    assert master_lost(runner("spawning", 100.0), 200.0) == 100.0


def test_a_worker_between_tests_waits_for_locust_own_timeout() -> None:
    """Between tests the master may be busy writing a large summary: no decision then."""
    for state in ("ready", "stopped", "stopping", "cleanup"):
        assert master_lost(runner(state, 100.0), 1000.0) is None
    assert master_lost(runner("running", None), 1000.0) is None  # no heartbeat yet
