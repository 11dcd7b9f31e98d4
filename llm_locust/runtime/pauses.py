"""The load process's own pauses of the event loop, kept out of the streams it times.

Every timestamp is taken by the event loop (:mod:`llm_locust.client.reader`), so CPU work done in
the hub while requests stream is a pause in every stream's timing, and the loop monitor
(:mod:`llm_locust.client.health`) charges it to the requests in flight as ``client_stall_s``. Two
such pauses are the process's own, and are moved to where nothing is in flight.

**The collector.** Measured at 500 streams per core (benchmarks/README.md, ``gc.callbacks``,
20 s): with CPython's defaults (thresholds 700, 10, 10) 7 young collections a second
(0.3-2 ms each), a middle one every 1.6 s (6-7 ms, up to 19 ms) and a full one (117-140 ms:
every user, greenlet, socket and parser the process holds) every run: a stall inside a
hundred requests. Records, chunks and rows die by reference counting; the collector only
sees the net growth of containers, which the requests in flight push past 700 over and over.

- :data:`THRESHOLDS`: a young collection after 20,000 net new containers instead of 700
  (measured: 2 collections in 20 s, 12 ms each, none older; cyclic garbage waits longer, a
  few MB at most);
- once the users are spawned (Locust's ``spawning_complete``, each time, so a ramp's new
  users too), :func:`gc.freeze` moves what the process holds into the permanent generation:
  the long-lived objects are no longer traversed by every full collection (measured: the
  full collection 117 -> 8.6 ms). Frozen objects are never collected as cycles; they are the
  process's users and connections, which live as long as it does.

**Locust's stop.** ``Runner.stop()`` (locust/runners.py, 2.4x) logs its caller with
``inspect.getframeinfo(inspect.stack()[1][0])``. The first such lookup in a process maps
the file of every loaded module (``inspect.getmodule``: ``os.path.realpath`` of ~900
modules with numpy, pydantic and Locust loaded), 44-89 ms of CPU measured on this 2-core
machine, and it happens when the load stops, in the hub, while the drain's requests are
still streaming: each was charged a 0.12 s client stall on a busy host. :func:`warm_stop`
does that lookup at ``init``, before the preflight and before the loop monitor
(:mod:`llm_locust.client.health`) runs: done at ``test_start``, with the monitor already started by the
preflight's client, it was itself a stall, whose tail was charged to the first requests sent
in the same loop iteration. The lookup at the stop then costs about a millisecond (only the
modules imported since are mapped).
"""

from __future__ import annotations

import gc
import inspect
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from locust.event import Events

__all__ = ["THRESHOLDS", "install", "warm_stop"]

#: gc.set_threshold's arguments for a load process.
THRESHOLDS = (20_000, 10, 10)


def install(events: Events) -> None:
    """Set the thresholds and warm the stop's caller lookup now (at ``init``); freeze at every
    ``spawning_complete`` of ``events``."""
    gc.set_threshold(*THRESHOLDS)
    warm_stop()
    events.spawning_complete.add_listener(_freeze)


def warm_stop() -> None:
    """Do the caller lookup Locust's ``Runner.stop()`` does, now, while nothing is in flight."""
    inspect.getframeinfo(inspect.stack()[0][0])


def _freeze(**_: object) -> None:
    gc.freeze()
