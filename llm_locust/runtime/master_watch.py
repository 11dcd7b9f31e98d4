"""A worker that loses its master stops its load within :data:`MASTER_SILENCE_S` seconds.

Locust's worker quits only after 60 s without a heartbeat from its master
(``MASTER_HEARTBEAT_TIMEOUT``); until then a worker whose master was killed (SIGKILL, the OOM
killer, a node lost) keeps loading the server, and nobody records what it sends. The master
answers every worker heartbeat (one a second), so a silence of :data:`MASTER_SILENCE_S`
seconds while users run means the master is gone: the worker says so in its log and stops its
users at once, the requests in flight included (there is no one left to record them: no
drain). The worker process itself stays until Locust's own timeout quits it.

Only while users run: between tests a master may be busy writing a large summary.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import gevent

from llm_locust.config.role import Role

if TYPE_CHECKING:
    from llm_locust.runtime.extension import Extension

__all__ = ["CHECK_S", "MASTER_SILENCE_S", "install", "master_lost", "stop_now"]

log = logging.getLogger("llm_locust")
#: Seconds without a heartbeat from the master after which a running worker stops its load.
MASTER_SILENCE_S = 5.0
CHECK_S = 0.5
_RUNNING = ("spawning", "running")  # locust.runners.STATE_SPAWNING, STATE_RUNNING (not imported: a
# test of this module must not gevent-patch its process)


def master_lost(runner: Any, now: float, silence_s: float = MASTER_SILENCE_S) -> float | None:
    """Seconds since the master's last heartbeat, if users run and it is more than ``silence_s``."""
    last = getattr(runner, "last_heartbeat_timestamp", None)
    if last is None or runner.state not in _RUNNING:
        return None
    silent = now - last
    return silent if silent > silence_s else None


def install(ext: Extension) -> None:
    """On a worker, watch the master's heartbeats for as long as the process runs."""
    if ext.role == Role.WORKER:
        gevent.spawn(_watch, ext)


def _watch(ext: Extension) -> None:
    runner = ext.environment.runner
    while True:
        gevent.sleep(CHECK_S)
        silent = master_lost(runner, time.time())
        if silent is not None:
            log.error(
                "llm-locust: no heartbeat from the master for %.1f s: the master is gone; stopping this "
                "worker's load now (requests in flight are dropped: nothing can record them)",
                silent,
            )
            stop_now(ext)


def stop_now(ext: Extension) -> None:
    """Stop the users at once (no drain) and the test."""
    runner = ext.environment.runner
    ext.live.stopping = True
    runner.user_greenlets.kill(block=False)
    runner.stop()
