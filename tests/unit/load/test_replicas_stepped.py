"""The replica balancer and the stepped arrivals of a rate search (pure, no network)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llm_locust.config.balance import BALANCE_POLICIES, BALANCE_SCOPES, BalancePolicy, BalanceScope
from llm_locust.load.arrivals import poisson
from llm_locust.load.replicas import Balancer, Routing
from llm_locust.load.stepped import WAIT, SteppedArrivals


def test_round_robin_cycles_from_the_worker_index() -> None:
    b = Balancer(["a", "b", "c"], "round-robin", start=1)
    assert [b.pick() for _ in range(7)] == [1, 2, 0, 1, 2, 0, 1]
    assert b.picked == [2, 3, 2]


def test_least_in_flight_avoids_the_busy_replica() -> None:
    b = Balancer(["a", "b"], "least-in-flight")
    first = b.acquire()
    second = b.acquire()
    assert {first, second} == {0, 1}
    b.release(first)
    assert b.acquire() == first  # the other one is still busy
    # a replica that never finishes gets nothing more
    b = Balancer(["slow", "fast"], "least-in-flight")
    slow = b.acquire()
    for _ in range(10):
        b.release(b.acquire())
    assert slow == 0 and b.picked == [1, 10] and b.in_flight == [1, 0]


def test_bad_balancers_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one replica"):
        Balancer([])
    with pytest.raises(ValueError, match="'random' is not a valid BalancePolicy"):
        Balancer(["a"], "random")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'session' is not a valid BalanceScope"):
        Routing(BalancePolicy.ROUND_ROBIN, "session")  # type: ignore[arg-type]


def test_a_policy_given_as_its_string_is_the_member() -> None:
    """A name from JSON or argparse becomes the enum (one spelling on disk, one type in code)."""
    assert Balancer(["a"], "least-in-flight").policy is BalancePolicy.LEAST_IN_FLIGHT  # type: ignore[arg-type]
    routing = Routing("least-in-flight", "user")  # type: ignore[arg-type]
    assert (routing.policy, routing.scope) == (BalancePolicy.LEAST_IN_FLIGHT, BalanceScope.USER)
    assert routing.text() == "least-in-flight per user"
    assert (BALANCE_POLICIES, BALANCE_SCOPES) == (("round-robin", "least-in-flight"), ("request", "user"))


def _drain(stepped: SteppedArrivals, limit: int = 100_000) -> list[float]:
    out = []
    for _ in range(limit):
        due = stepped.peek()
        if due is None:
            return out
        assert due != WAIT
        out.append(float(due))
        stepped.pop()
    raise AssertionError("the arrivals did not end")


def test_steps_follow_their_rates_and_end_at_the_next_step() -> None:
    stepped = SteppedArrivals(poisson(1.0), seed=3)
    assert stepped.peek() == WAIT
    stepped.update([(100.0, 4.0), (200.0, 16.0)], stopped_at=300.0)
    times = np.array(_drain(stepped))
    first, second = times[times < 200.0], times[times >= 200.0]
    assert first.min() >= 100.0 and second.max() < 300.0
    assert abs(first.size - 400) <= 4 * math.sqrt(400) and abs(second.size - 1600) <= 4 * math.sqrt(1600)


def test_an_arrival_drawn_before_the_next_step_was_known_is_checked_again() -> None:
    stepped = SteppedArrivals(poisson(1.0), seed=1)
    stepped.update([(0.0, 0.1)], None)  # one arrival every ~10 s
    due = stepped.peek()
    assert isinstance(due, float)
    stepped.pop()
    late = stepped.peek()
    assert isinstance(late, float) and late > 0.5
    stepped.update([(0.0, 0.1), (0.5, 50.0)], None)  # the next step began before it was due
    now = stepped.peek()
    assert isinstance(now, float) and 0.5 <= now < late


def test_workers_share_one_step_sequence_without_overlap() -> None:
    steps = [(0.0, 10.0), (30.0, 20.0)]
    parts = []
    for w in range(3):
        s = SteppedArrivals(poisson(1.0), seed=5, worker_index=w, workers=3)
        s.update(steps, 60.0)
        parts.append(_drain(s))
    one = SteppedArrivals(poisson(1.0), seed=5)
    one.update(steps, 60.0)
    assert sorted(t for p in parts for t in p) == pytest.approx(sorted(_drain(one)))
    assert max(len(p) for p in parts) - min(len(p) for p in parts) <= 2


def test_a_search_stopped_before_any_step_sends_nothing() -> None:
    s = SteppedArrivals(poisson(1.0), seed=0)
    s.update([], 5.0)
    assert s.peek() is None


def test_users_left_behind_on_one_replica_move_to_the_emptier_one() -> None:
    """Scope ``user``: users that stop may leave one replica two or more users above another (a
    search stepping down from 16 users to 9 measured 6 on one replica and 3 on the other); the next
    user of the fuller one to send moves, until they differ by at most one."""
    for policy in ("round-robin", "least-in-flight"):
        b = Balancer(["a", "b"], policy)
        pins = [b.acquire() for _ in range(8)]
        assert b.in_flight == [4, 4]
        for _ in range(3):  # three users of replica 0 stop
            pins.remove(0)
            b.release(0)
        assert b.in_flight == [1, 4]
        pins = [b.rebalance(p) for p in pins]
        assert sorted(pins) == [0, 0, 1, 1, 1] and b.in_flight == [2, 3]
        assert [b.rebalance(p) for p in pins] == pins  # one apart: nobody moves
        assert b.rebalance(1) == 1 and b.in_flight == [2, 3]
