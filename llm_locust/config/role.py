"""The part a process plays in a run: :class:`Role` (local, master, worker).

Given by the command line (``--worker``; ``--master`` or ``--processes``; neither: a local
runner) and, once Locust made its runner, by the runner's class. A ``str`` enum: its values
are the strings the summary (``"role"``) and the web UI's state have always carried, so the
files a run writes do not change.

Pure module: no Locust, no network.
"""

from __future__ import annotations

import argparse
from enum import Enum

__all__ = ["Role", "role_of_options"]


class Role(str, Enum):  # noqa: UP042 (str() and format() of a member stay as they were)
    LOCAL = "local"  # one process: the users and the results
    MASTER = "master"  # the results; its workers run the users
    WORKER = "worker"  # the users; its rows go to the master

    def __str__(self) -> str:
        return self.value


def role_of_options(options: argparse.Namespace | None) -> Role:
    """The role the parsed command line asks for (``None``: a local runner)."""
    values = vars(options) if options is not None else {}
    if values.get("worker"):
        return Role.WORKER
    return Role.MASTER if values.get("master") or values.get("processes") else Role.LOCAL
