"""Spreading load over replicas without a load balancer: which replica the next request goes to.

``--endpoints URL1,URL2,...`` names replicas of one model that each serve on their own (two
vLLM instances, no router in front). A :class:`Balancer` per process decides, by its
:class:`~llm_locust.config.balance.BalancePolicy`:

- ``round-robin``: replicas in turn; each process starts at its worker index, so two workers
  with one user each do not both begin on the first replica;
- ``least-in-flight``: the replica with the fewest of this process's requests (or users) in
  flight, ties broken in round-robin order. Each process sees only its own traffic: with W
  workers the spread is balanced per worker, and so overall.

``--balance-scope`` (:class:`~llm_locust.config.balance.BalanceScope`) ``request`` picks for
every request; ``user`` picks once when a user starts and keeps the replica for the user's life
(connection affinity, as a sticky session would), so "in flight" then counts users. Users that
stop (a search stepping down, a ramp's fall) may leave one replica two or more users above
another: a user of the fuller one then moves to the emptier at its next request
(:meth:`Balancer.rebalance`), so a level reached from above is spread as one reached from below
(a search that stepped from 16 users to 9 had measured 6 users on one replica and 3 on the
other). A request of a session (an agent's, a conversation's, a replayed trace session's) goes
to its session's replica whatever the policy (:meth:`Balancer.acquire_for`), so its prefix
stays in one replica's cache.

Pure module: no Locust, no network.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from llm_locust.config.balance import BalancePolicy, BalanceScope

__all__ = ["Balancer", "Routing"]


@dataclass(frozen=True)
class Routing:
    """How requests reach the replicas: ``policy`` (``--balance``) picking for every request or
    once for each user (``scope``, ``--balance-scope``)."""

    policy: BalancePolicy = BalancePolicy.ROUND_ROBIN
    scope: BalanceScope = BalanceScope.REQUEST

    def __post_init__(self) -> None:
        # a name that is no member is refused here (ValueError), not taken for the other one
        object.__setattr__(self, "policy", BalancePolicy(self.policy))
        object.__setattr__(self, "scope", BalanceScope(self.scope))

    def text(self) -> str:
        return f"{self.policy} per {self.scope}"


class Balancer:
    """Picks a replica index; :meth:`acquire` and :meth:`release` keep the in-flight counts."""

    def __init__(
        self, replicas: Sequence[str], policy: BalancePolicy = BalancePolicy.ROUND_ROBIN, start: int = 0
    ) -> None:
        if not replicas:
            raise ValueError("a balancer needs at least one replica")
        self.replicas = tuple(replicas)
        self.policy = BalancePolicy(policy)  # ValueError for a name that is no member
        self.in_flight = [0] * len(self.replicas)
        self.picked = [0] * len(self.replicas)
        self._next = start % len(self.replicas)

    def pick(self) -> int:
        """The replica for the next request (or user), counted as picked, not yet in flight."""
        n = len(self.replicas)
        order = [(self._next + k) % n for k in range(n)]
        if self.policy is BalancePolicy.ROUND_ROBIN:
            choice = order[0]
        else:
            choice = min(order, key=lambda i: self.in_flight[i])
        self._next = (choice + 1) % n
        self.picked[choice] += 1
        return choice

    def acquire(self) -> int:
        """:meth:`pick` a replica and count it in flight until :meth:`release`."""
        choice = self.pick()
        self.in_flight[choice] += 1
        return choice

    def acquire_for(self, session: str) -> int:
        """The replica of a session: the same for every request of ``session`` in every process
        (its CRC-32 modulo the replicas), counted picked and in flight until :meth:`release`."""
        choice = zlib.crc32(session.encode("utf-8")) % len(self.replicas)
        self.picked[choice] += 1
        self.in_flight[choice] += 1
        return choice

    def rebalance(self, index: int) -> int:
        """The replica for a user pinned to ``index`` (scope ``user``): ``index``, unless it holds two
        or more users above the least-loaded replica; then the pin moves there (counts moved)."""
        least = min(range(len(self.replicas)), key=lambda i: (self.in_flight[i], i != index))
        if self.in_flight[index] - self.in_flight[least] < 2:
            return index
        self.in_flight[index] -= 1
        self.in_flight[least] += 1
        return least

    def release(self, index: int) -> None:
        self.in_flight[index] = max(self.in_flight[index] - 1, 0)
