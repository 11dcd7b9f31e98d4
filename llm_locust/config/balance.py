"""How ``--endpoints`` share the load: :class:`BalancePolicy` (``--balance``) and
:class:`BalanceScope` (``--balance-scope``), the one home of both sets of names.

``str`` enums: a member is its value (``"round-robin"`` == ``BalancePolicy.ROUND_ROBIN``), so the
command line, a plan file's ``search.balance``, ``summary.json``'s options and a prediction's
JSON carry the same strings as before. Here in ``config`` (the lowest layer that names them):
the run configuration and the plan file type their fields with them, the balancer
(:mod:`llm_locust.load.replicas`), the simulator and ``llm-locust predict`` act on them.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["BALANCE_POLICIES", "BALANCE_SCOPES", "BalancePolicy", "BalanceScope"]


class BalancePolicy(StrEnum):
    """Which replica the next request (or user) goes to."""

    ROUND_ROBIN = "round-robin"  # replicas in turn
    LEAST_IN_FLIGHT = "least-in-flight"  # the fewest of this process's requests (or users) in flight


class BalanceScope(StrEnum):
    """What the policy picks a replica for."""

    REQUEST = "request"  # every request
    USER = "user"  # each user, once, for its life


#: the spellings argparse offers (plain strings: its error line shows them as ``'round-robin'``)
BALANCE_POLICIES: tuple[str, ...] = tuple(p.value for p in BalancePolicy)
BALANCE_SCOPES: tuple[str, ...] = tuple(s.value for s in BalanceScope)
