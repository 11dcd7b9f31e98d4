"""The master -> worker channel carries no secret: workers read the key from their own environment.

Locust's master sends every parsed option in each ``spawn`` message to whatever connected to
its port as a worker (``--api-key``, the ``--header`` values with it). The master's
:func:`protect_master` replaces the values of :data:`~llm_locust.config.redact.SECRET_OPTIONS`
in those messages with :data:`HELD`, which says only that the master has one. A worker
(:class:`WorkerSecrets`) puts its own values back before the test starts: its ``--api-key``,
``LLM_LOCUST_API_KEY`` or ``OPENAI_API_KEY`` and its ``--header`` / ``LLM_LOCUST_HEADER`` (in
Kubernetes every pod gets the Secret). A worker that has none while the master has one says so
in one line; its requests then go without it. A key typed into the web UI's form therefore
reaches the master's own checks only, not the workers.
"""

from __future__ import annotations

from locust.env import Environment

import argparse
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

from llm_locust.config.redact import SECRET_OPTIONS
from llm_locust.config.role import Role
from llm_locust.runtime.runners import ConfiguredRun

__all__ = ["HELD", "WorkerSecrets", "before_test", "install", "protect_master", "without_secrets"]

log = logging.getLogger("llm_locust")
#: What a worker receives instead of a secret option's value.
HELD = "<held by the master; not sent>"


def without_secrets(data: object, held: Mapping[str, bool]) -> object:
    """A copy of a message's ``data`` whose ``parsed_options`` hold no secret value."""
    if not isinstance(data, dict) or not isinstance(data.get("parsed_options"), dict):
        return data
    options = dict(data["parsed_options"])
    for dest in SECRET_OPTIONS:
        if dest in options:
            options[dest] = HELD if (held.get(dest) or options[dest]) else None
    return {**data, "parsed_options": options}


def protect_master(runner: Any, held: Callable[[], Mapping[str, bool]]) -> None:  # a MasterRunner
    """Wrap the master's sending so that no message to a worker carries a secret option.

    ``held()`` tells which secrets the master's configuration has (an ``OPENAI_API_KEY`` of the
    master's environment counts, although it is not among the parsed options)."""
    from locust.rpc import Message

    send = runner.server.send_to_client

    def send_without_secrets(msg: Message) -> None:
        data = without_secrets(msg.data, held())
        if data is not msg.data:
            msg = Message(msg.type, data, msg.node_id)
        send(msg)

    runner.server.send_to_client = send_without_secrets


class WorkerSecrets:
    """A worker's own secret options, put back over the master's :data:`HELD` markers."""

    def __init__(self, options: argparse.Namespace | None) -> None:
        values = vars(options) if options is not None else {}
        self.own = {dest: values.get(dest) for dest in SECRET_OPTIONS}

    def restore(
        self, options: argparse.Namespace | None, has_key: Callable[[argparse.Namespace], bool]
    ) -> None:
        """Before a test: the worker's own values where the master sent :data:`HELD`.

        ``has_key(options)`` tells whether the worker's configuration then has a key (its own
        environment may supply one)."""
        if options is None:
            return
        master_had = {dest for dest in SECRET_OPTIONS if getattr(options, dest, None) == HELD}
        for dest in master_had:
            setattr(options, dest, self.own[dest])
        if "api_key" in master_had and not has_key(options):
            log.error(
                "llm-locust: the master has an API key and this worker has none (the key is never sent to "
                "workers): set LLM_LOCUST_API_KEY or OPENAI_API_KEY in the worker's environment"
            )
        if "header" in master_had and not self.own["header"]:
            log.error(
                "llm-locust: the master has --header values and this worker has none (they are never sent "
                "to workers): set LLM_LOCUST_HEADER in the worker's environment"
            )


_ATTRIBUTE = "_llm_locust_worker_secrets"  # a worker's WorkerSecrets, on its environment


def install(run: ConfiguredRun) -> None:
    """At ``init``: the master's messages lose their secrets; a worker remembers its own."""
    environment = run.environment
    if run.role == Role.MASTER:
        request = lambda: run.run_config.request  # noqa: E731 - the configuration of the current test
        protect_master(
            environment.runner,
            lambda: {"api_key": request().api_key is not None, "header": bool(request().headers)},
        )
    elif run.role == Role.WORKER:
        setattr(environment, _ATTRIBUTE, WorkerSecrets(environment.parsed_options))


def before_test(environment: Environment) -> None:
    """At ``test_start`` on a worker, before the configuration is rebuilt from the master's options."""
    secrets = getattr(environment, _ATTRIBUTE, None)
    if secrets is not None:
        secrets.restore(environment.parsed_options, _has_key)


def _has_key(options: argparse.Namespace) -> bool:
    return bool(getattr(options, "api_key", None) or os.environ.get("OPENAI_API_KEY"))
