"""The capacity search's driver (runtime/search.py) on a fake clock, in process.

A users search from 2 users, 10 s steps, no warm-up: the test plays the runner (its user count,
into the real :class:`LevelTracker`), the requests (rows built from known marks) and the clock
(``tick(now)``); the driver closes each step's window 10 s after its level is reached, waits for
the window's requests in flight, judges the step on its rows and decides the next level.
"""

from __future__ import annotations

from typing import Any

from llm_locust.config.build import build_config
from llm_locust.load.levels import LevelTracker
from llm_locust.load.plan import build_load_plan
from llm_locust.record import RequestRecord
from llm_locust.results.search_model import SearchLog
from llm_locust.runtime.search import SearchDriver

T0 = 1_000_000.0
STEP_S = 10.0


class FakeRun:
    """What the driver asks of its run, with the extension's row path (deliver: place or hold,
    then the sinks: here the driver's own ``observe``)."""

    def __init__(self, slo: str = "e2e_p95<=5s") -> None:
        values = {
            "search": "users",
            "search_min": "2",
            "slo": slo,
            "step_time": f"{STEP_S:g}s",
            "warmup": "0s",
        }
        self.run_config = build_config(values, environ={})
        self.plan = build_load_plan(self.run_config.load)
        self.cli_spawn_rate: float | None = None
        self.levels = LevelTracker(self.plan.stages, T0)  # type: ignore[arg-type]
        self.unsettled = 0  # the fake fleet: requests of the window still in flight
        self.searches: list[SearchLog] = []
        self.written: list[dict[str, Any]] = []
        self.driver: SearchDriver | None = None
        self.fleet = self  # the fake fleet's questions are this object's methods

    def in_flight_before(self, when: float) -> int | None:
        return self.unsettled

    def write_search(self, log: SearchLog) -> None:
        self.searches.append(log)

    def worker_count(self) -> int:
        return 1

    def health_intervals(self, start: float | None = None) -> list[dict[str, Any]]:
        return []  # the client's health is not measured here (the step is judged on its rows)

    def announce_rate_steps(self, steps: Any, stopped_at: Any) -> None:
        raise AssertionError("a users search announces no rate steps")

    def deliver(self, row: dict[str, Any]) -> None:
        assert self.driver is not None
        if not self.driver.place(row):
            self.driver.hold(row)
            return
        self.written.append(row)
        self.driver.observe(row)


def row(n: int, sent: float, e2e: float) -> dict[str, Any]:
    """A finished request sent at ``sent`` (wall clock) lasting ``e2e`` s, 100 tokens streamed."""
    chunks = [0.2 + i * (e2e - 0.2) / 99 for i in range(100)]
    record = RequestRecord(
        request_id=f"r{n}",
        wall_start=sent,
        t_sent=0.0,
        t_first_token=chunks[0],
        t_end=e2e,
        chunk_times=chunks,
        completion_tokens=100,
        prompt_tokens=50,
        finish_reason="stop",
    )
    return record.to_json()


def users(run: FakeRun, start: float, end: float, count: int) -> None:
    """The runner holds ``count`` users over ``[start, end]``, sampled every 0.1 s as the fleet does."""
    for i in range(round((end - start) * 10) + 1):
        run.levels.observe(start + i / 10, count)


def requests(run: FakeRun, start: float, end: float, e2e: float, per_s: int = 40) -> None:
    """``per_s`` requests a second sent over ``[start, end)``, each delivered when it ends."""
    n = len(run.written)
    for i in range(int((end - start) * per_s)):
        run.deliver(row(n + i, start + i / per_s, e2e))


def test_a_step_is_judged_after_its_window_settles_and_the_next_level_is_decided() -> None:
    run = FakeRun()
    driver = run.driver = SearchDriver(run, run.plan.search, T0)  # type: ignore[arg-type]
    assert driver.tick(T0) == (2, 2.0)  # 2 users, spawned at 2/s (no -r given: |2 - 0|)
    users(run, T0, T0 + 0.9, 1)
    users(run, T0 + 1.0, T0 + 1.5, 2)  # the runner reaches 2 users 1 s in
    assert driver.tick(T0 + 1.5) == (2, 2.0)
    step = driver.steps[0]
    assert step.window_end == T0 + 1.0 + STEP_S  # held 10 s from the moment the level was reached
    users(run, T0 + 1.5, T0 + 12.0, 2)
    requests(run, T0 + 1.0, T0 + 11.0, e2e=1.0)  # well inside the SLO
    run.unsettled = 3
    assert driver.tick(T0 + 11.0) == (2, 2.0)  # the window closed; 3 of its requests still run
    assert driver.probes == [] and step.settle_deadline == T0 + 11.0 + 30.0
    late = row(99_999, T0 + 11.5, 1.0)  # sent while the step settles: held until the decision
    run.deliver(late)
    assert late not in run.written
    run.unsettled = 0
    assert driver.tick(T0 + 12.0) == (4, 2.0)  # judged: a pass, so the level doubles
    assert [(p.level, str(p.verdict)) for p in driver.probes] == [(2, "pass")]
    assert [s.level for s in driver.steps] == [2, 4]
    assert driver.steps[1].applied == T0 + 12.0
    assert driver.stages[0].duration_s == 12.0  # step 1's stage runs through its settle
    assert late in run.written and late["stage"] is None  # after step 1's window: no stage's
    assert run.searches[-1].steps[0].window_end == T0 + 11.0


def test_a_failing_step_brackets_the_answer_and_the_search_stops_at_its_precision() -> None:
    run = FakeRun()
    driver = run.driver = SearchDriver(run, run.plan.search, T0)  # type: ignore[arg-type]
    now, level = T0, 0
    e2e_at = {2: 1.0, 3: 1.0, 4: 20.0}  # the server holds up to 3 users
    for _ in range(12):
        load = driver.tick(now)
        if load is None:
            break
        step = driver.steps[-1]
        level = load[0]
        users(run, now + 0.5, now + 0.5, level)  # reached half a second after it was applied
        driver.tick(now + 0.5)
        assert step.window_end == now + 0.5 + STEP_S
        users(run, now + 0.6, now + 0.5 + STEP_S, level)
        requests(run, now + 0.5, now + 0.5 + STEP_S, e2e=e2e_at[level])
        now = now + 0.5 + STEP_S
    assert driver.done
    assert [(p.level, str(p.verdict)) for p in driver.probes] == [(2, "pass"), (4, "fail"), (3, "pass")]
    # 3 passed, 4 failed: no whole number of users lies between them
    assert driver.stop_reason == "precision" and driver.tick(now + 1.0) is None
    result = driver.result()
    assert result.passed and result.highest_pass is not None and result.highest_pass.level == 3
    assert result.lowest_fail is not None and result.lowest_fail.level == 4
