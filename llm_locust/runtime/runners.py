"""Locust's runner of an environment, typed for the role that uses it.

``Environment.runner`` is ``Runner | None`` (``None`` before Locust made it); llm-locust reads
it only from ``init`` on, and its master-only (``clients``) and worker-only parts only on that
role. These accessors say so once, for the type checker, instead of at every use.
"""

from __future__ import annotations

import locust.runners
from locust.env import Environment

from typing import Protocol, cast

import gevent

from llm_locust.config.model import RunConfig
from llm_locust.config.role import Role

__all__ = ["ConfiguredRun", "ProcessRun", "master_runner", "raise_in_main", "runner_of", "worker_runner"]


class ProcessRun(Protocol):
    """A run as its helpers see it at the least: Locust's environment and the process's role
    (every node is one; each helper's own Protocol adds what it needs)."""

    @property
    def environment(self) -> Environment: ...
    @property
    def role(self) -> Role: ...


class ConfiguredRun(ProcessRun, Protocol):
    """A run and its current configuration."""

    @property
    def run_config(self) -> RunConfig: ...


def runner_of(environment: Environment) -> locust.runners.Runner:
    """The environment's runner (made before ``init``)."""
    runner = environment.runner
    if runner is None:
        raise RuntimeError("llm-locust: Locust made no runner (init has not run)")
    return runner


def master_runner(environment: Environment) -> locust.runners.MasterRunner:
    """The master's runner: call on the master only (a cast, not a check: tests pass fakes)."""
    return cast(locust.runners.MasterRunner, runner_of(environment))


def raise_in_main(exc: BaseException) -> None:
    """Raise ``exc`` in the main greenlet from the hub, as gevent does for Ctrl-C."""
    hub = gevent.get_hub()
    main = hub.parent
    if main is None:  # the hub of the main thread always has the main greenlet as its parent
        raise RuntimeError("llm-locust: the hub has no parent greenlet")
    hub.loop.run_callback(main.throw, exc)


def worker_runner(environment: Environment) -> locust.runners.WorkerRunner:
    """A worker's runner: call on a worker only (a cast, not a check: tests pass fakes)."""
    return cast(locust.runners.WorkerRunner, runner_of(environment))
