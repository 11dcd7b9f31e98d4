"""The watch that stops a run whose every request fails (issue 9 §3), on a fake clock."""

from __future__ import annotations

from llm_locust.runtime.failstop import FailureWatch

ALL_FAILED_S = 10.0  # the documented window (docs/running.md), written here: a changed constant fails a test


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _watch() -> tuple[FailureWatch, Clock, list[str]]:
    clock, lines = Clock(), []
    return FailureWatch(lines.append, clock=clock), clock, lines


FAIL = {"outcome": "connect", "message": "connection refused"}


def test_it_fires_once_when_every_request_failed_for_the_window() -> None:
    watch, clock, lines = _watch()
    for _ in range(5):
        watch.observe(FAIL)
        clock.now += ALL_FAILED_S / 4
    assert len(lines) == 1
    expected = "every request has failed for 10 s (5 requests; most often connect: connection refused x5)"
    assert expected in lines[0]
    assert "exit code 4" in lines[0]  # docs/running.md: "and exit code 4"
    clock.now += 60
    watch.observe(FAIL)
    assert len(lines) == 1


def test_a_success_restarts_the_window_and_incomplete_records_do_not_count() -> None:
    watch, clock, lines = _watch()
    watch.observe(FAIL)
    clock.now += ALL_FAILED_S - 1
    watch.observe({"outcome": "ok"})
    watch.observe(FAIL)
    clock.now += ALL_FAILED_S - 1
    watch.observe({"outcome": "incomplete", "message": "stopped"})
    watch.observe(FAIL)
    assert lines == []
    clock.now += 1
    watch.observe(FAIL)
    assert len(lines) == 1
    watch.reset()
    watch.observe(FAIL)
    assert len(lines) == 1  # a new test starts a new window


def test_cancelled_requests_are_not_failures() -> None:
    """A run with --cancel-rate 1 abandons every request on purpose: not an all-failed run."""
    watch, clock, lines = _watch()
    for _ in range(8):
        watch.observe({"outcome": "cancelled", "message": "cancelled by the client after the first token"})
        clock.now += ALL_FAILED_S / 2
    assert lines == []
