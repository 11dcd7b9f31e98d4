"""Python's cyclic garbage collector, tuned so it does not pause the event loop mid-stream.

Every timestamp is taken by the event loop (:mod:`llm_locust.reader`), so a collection is a
pause in every stream's timing. Measured at 500 streams per core (benchmarks/README.md,
``gc.callbacks``, 20 s): with CPython's defaults (thresholds 700, 10, 10) 7 young
collections a second (0.3-2 ms each), a middle one every 1.6 s (6-7 ms, up to 19 ms) and
a full one (117-140 ms: every user, greenlet, socket and parser the process holds) every
run: a stall inside a hundred requests. Records, chunks and rows die by reference counting;
the collector only sees the net growth of containers, which the requests in flight push
past 700 over and over.

- :data:`THRESHOLDS`: a young collection after 20,000 net new containers instead of 700
  (measured: 2 collections in 20 s, 12 ms each, none older; cyclic garbage waits longer, a
  few MB at most);
- once the users are spawned (Locust's ``spawning_complete``, each time, so a ramp's new
  users too), :func:`gc.freeze` moves what the process holds into the permanent generation:
  the long-lived objects are no longer traversed by every full collection (measured: the
  full collection 117 -> 8.6 ms). Frozen objects are never collected as cycles; they are the
  process's users and connections, which live as long as it does.
"""

from __future__ import annotations

import gc
from typing import Any

__all__ = ["THRESHOLDS", "install"]

#: gc.set_threshold's arguments for a load process.
THRESHOLDS = (20_000, 10, 10)


def install(events: Any) -> None:
    """Set the thresholds now; freeze at every ``spawning_complete`` of ``events``."""
    gc.set_threshold(*THRESHOLDS)
    events.spawning_complete.add_listener(_freeze)


def _freeze(**_: object) -> None:
    gc.freeze()
