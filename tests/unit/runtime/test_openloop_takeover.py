"""One open-loop dispatcher a worker a test: a second one (a user Locust moved here from a worker
that quit) never replays the schedule.

Before (2026-12-02, a master, two workers, ``--request-rate 20``, one worker SIGINTed): Locust gave
the survivor a second dispatcher user, which walked the survivor's share from ``t0``: every arrival
already past went out at once (sent a second time), send lag p99 2,682 ms. Real gevent, a fake run
and client (no network): arrivals every 20 ms for 0.8 s.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import gevent
import pytest

from llm_locust.config.build import build_config
from llm_locust.config.role import Role
from llm_locust.load.plan import LoadPlan, build_load_plan
from llm_locust.load.traces import TraceEntry
from llm_locust.record import RequestRecord
from llm_locust.runtime import openloop
from llm_locust.runtime.context import RunContext
from llm_locust.workload.base import RequestSpec

STEP_S, COUNT = 0.02, 40  # the worker's share: an arrival every 20 ms, 0.8 s
LATE_S = 0.1  # a sent arrival's lag at most (the hand-over is an Event: no polling in it)
GRACE_S = 0.5  # openloop.RESUME_GRACE_S, as docs/load-models.md states it


@dataclass(frozen=True)
class _Every:
    def for_worker(self, index: int, count: int) -> Iterator[tuple[float, TraceEntry | None]]:
        for i in range(COUNT):
            yield i * STEP_S, None

    def describe(self) -> dict:
        return {}


@dataclass
class _Run:
    stopping: bool = False
    sent: list[tuple[str, float, float]] = field(default_factory=list)  # who, offset, lag

    def new_record(self, spec: RequestSpec) -> RequestRecord:
        raise AssertionError("not called: _send_one is the test's")

    def send(self, client: object, body: object, record: RequestRecord, keep_text: bool = False) -> str:
        raise AssertionError("not called: _send_one is the test's")

    def balancer(self) -> None:
        return None


class _Client:
    def close(self) -> None:
        pass


@dataclass
class _User:
    name: str
    run: _Run
    stopped: bool = False

    @property
    def stopping(self) -> bool:
        return self.run.stopping or self.stopped

    def ticket(self) -> bool:
        return True

    def next_spec(self, entry: TraceEntry | None = None) -> RequestSpec:
        return self.name  # type: ignore[return-value]


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch) -> _Run:
    run = _Run()

    def sent(
        _r: object, user: _User, _c: object, _s: object, intended: tuple[float, float], _e: object
    ) -> None:
        offset = intended[0]
        run.sent.append((user.name, offset, time.time() - (T0[0] + offset)))

    monkeypatch.setattr(openloop, "_send_one", sent)
    monkeypatch.setattr(openloop, "make_client", lambda *a, **k: _Client())
    return run


T0 = [0.0]


def _context() -> RunContext:
    config = build_config({"request_rate": "20"}, environ={})
    T0[0] = time.time() + 0.05
    plan = LoadPlan(stages=build_load_plan(config.load).stages, arrivals=_Every())
    return RunContext(config=config, role=Role.WORKER, plan=plan, client=object(), t0=T0[0])  # type: ignore[arg-type]


def _dispatcher(context: RunContext, run: _Run, user: _User, after_s: float = 0.0) -> gevent.Greenlet:
    return gevent.spawn_later(after_s, openloop.dispatch, context, run, user)  # type: ignore[arg-type]


def _check_once_each_on_time(run: _Run) -> Counter[str]:
    offsets = Counter(offset for _, offset, _ in run.sent)
    assert sorted(offsets) == [i * STEP_S for i in range(COUNT)], "every arrival sent"
    assert max(offsets.values()) == 1, [o for o, n in offsets.items() if n > 1]  # none twice
    late = [(who, offset, lag) for who, offset, lag in run.sent if lag > LATE_S]
    assert not late, late
    return Counter(who for who, _, _ in run.sent)


def test_a_second_dispatcher_waits_and_takes_over_where_the_stopped_one_was(run: _Run) -> None:
    context = _context()
    first, second = _User("first", run), _User("second", run)
    greenlets = [_dispatcher(context, run, first), _dispatcher(context, run, second, after_s=0.35)]
    gevent.sleep(0.5)
    first.stopped = True  # Locust stops the older one (the shape asked for one dispatcher)
    gevent.joinall(greenlets, timeout=5, raise_error=True)
    who = _check_once_each_on_time(run)
    assert who["first"] >= 15 and who["second"] >= 15, who


def test_a_second_dispatcher_stopped_while_it_waits_sends_nothing(run: _Run) -> None:
    context = _context()
    first, second = _User("first", run), _User("second", run)
    greenlets = [_dispatcher(context, run, first), _dispatcher(context, run, second, after_s=0.35)]
    gevent.sleep(0.5)
    second.stopped = True  # Locust stops the newer one
    gevent.joinall(greenlets, timeout=5, raise_error=True)
    assert _check_once_each_on_time(run) == Counter(first=COUNT)


def test_a_dispatcher_taking_over_late_resumes_at_the_current_time(run: _Run) -> None:
    """The running dispatcher killed (no stop timeout), the next one 0.8 s later: it sends none of
    the arrivals due more than RESUME_GRACE_S ago (they are not sent), the rest on time."""
    context = _context()
    first, second = _User("first", run), _User("second", run)
    killed = _dispatcher(context, run, first)
    gevent.sleep(0.25)
    killed.kill()
    late = _dispatcher(context, run, second, after_s=0.8 - 0.25)
    late.join(timeout=5)
    firsts = [offset for who, offset, _ in run.sent if who == "first"]
    seconds = [offset for who, offset, _ in run.sent if who == "second"]
    started = 0.8 - 0.05  # seconds after t0
    assert seconds and min(seconds) >= started - GRACE_S - STEP_S, (seconds, started)
    assert min(seconds) > max(firsts), (firsts, seconds)
    assert not [lag for who, _, lag in run.sent if who == "second" and lag > GRACE_S + LATE_S]
    assert openloop.RESUME_GRACE_S == GRACE_S
