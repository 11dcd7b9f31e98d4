"""``--num-requests N``: a test of exactly N requests, as ``vllm bench serve --num-prompts``.

Each load process sends its share of N and no more: worker ``slot`` of ``W`` sends
``N // W``, one more when ``slot < N % W`` (the open loop's split of its schedule), so the
processes never ask one another for permission and the total is N exactly. The master (or the
local runner) counts the records that reach its bus; the shape stops the test once all N are
there, so none is in flight at the stop and ``requests.jsonl`` holds N. The users and the
open-loop dispatcher take a ticket before each request; without one they send nothing more.
Only for runs whose every request is measured (``-u`` users or a ``--request-rate``, no
``--warmup``: the configuration refuses the others).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

import gevent

from llm_locust.config.jsontypes import JsonObject
from llm_locust.config.role import Role
from llm_locust.results.finalize import REFUSED_EXIT
from llm_locust.runtime.bus import RecordBus
from llm_locust.runtime.context import RunContext
from llm_locust.runtime.runners import ProcessRun, runner_of

if TYPE_CHECKING:
    from locust.env import Environment

__all__ = ["QuotaRun", "RequestQuota", "install", "quota_of", "share"]

log = logging.getLogger("llm_locust")
_ATTRIBUTE = "_llm_locust_quota"


def share(n: int, slot: int, workers: int) -> int:
    """Load process ``slot`` of ``workers``' part of ``n`` requests (the parts add up to ``n``)."""
    workers = max(workers, 1)
    return n // workers + (1 if slot % workers < n % workers else 0)


class QuotaRun(ProcessRun, Protocol):
    """What the quota reads of a node: its process and the current test's context."""

    @property
    def context(self) -> RunContext | None: ...


class RequestQuota:
    """This process's tickets for the current test, and (master, local) the records counted."""

    def __init__(self, ext: QuotaRun) -> None:
        self.ext = ext
        self.n: int | None = None
        self.left: int | None = None  # None: no --num-requests, no limit
        self.finished = 0

    def on_test_start(self) -> None:
        context = self.ext.context  # None: the test did not start (the run said why)
        self.n, self.left, self.finished = None, None, 0
        if context is not None and context.config.load.num_requests is not None:
            self.n = context.config.load.num_requests
            self.left = share(self.n, context.slot, context.workers)
            users = context.config.load.num_users or 1
            if context.role == Role.MASTER and not context.plan.open_loop and users < context.workers:
                self._refuse(
                    f"--num-requests: -u {users} users on {context.workers} workers leaves a worker "
                    "without users, whose share would never be sent: at least one user per worker"
                )

    def _refuse(self, line: str) -> None:
        """A test that could not end by its count: one line, exit code 2, no load."""
        log.error("llm-locust: %s", line)
        environment = self.ext.environment
        environment.process_exit_code = REFUSED_EXIT
        gevent.spawn(runner_of(environment).quit)

    def take(self) -> bool:
        """A ticket for one more request, if this process has one left."""
        if self.left is None:
            return True
        if self.left <= 0:
            return False
        self.left -= 1
        return True

    def count(self, row: JsonObject) -> None:
        self.finished += 1

    def reached(self) -> bool:
        """Every one of the N requests has finished and reached this process (master, local)."""
        return self.n is not None and self.finished >= self.n


def install(ext: QuotaRun, bus: RecordBus | None) -> RequestQuota:
    """The environment's quota: reset at each test's start (after the node's own start), fed by
    ``bus``, the node's where it keeps results (the master, the local runner)."""
    quota = RequestQuota(ext)
    setattr(ext.environment, _ATTRIBUTE, quota)
    ext.environment.events.test_start.add_listener(lambda **_: quota.on_test_start())
    if bus is not None:
        bus.subscribe(quota.count)
    return quota


def quota_of(environment: Environment) -> RequestQuota | None:
    return getattr(environment, _ATTRIBUTE, None)
