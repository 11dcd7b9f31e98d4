"""What a load level counts: :class:`StageKind`, users (a closed loop) or req/s (an open loop).

The one home of the kind of a stage, a search (``--search users|rate``, a plans file's
``search.kind``) and a level list (``--ramp``'s users, ``--rate-ramp``'s rates). A ``str``
enum: its values are the strings the files (``summary.json``, ``search.json``,
``capacity.json``) have always carried, so they read back as members and write as before.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["StageKind"]


class StageKind(str, Enum):  # noqa: UP042 (str() and format() of a member stay as they were)
    """What a stage's ``target`` is: a user count (closed loop) or a request rate (open loop)."""

    USERS = "users"
    RATE = "rate"

    def __str__(self) -> str:
        return self.value
