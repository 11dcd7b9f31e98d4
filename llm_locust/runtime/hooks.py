"""The llm-locust listeners on Locust's events: options, init, test start/stopping/stop, quitting.

:func:`install` registers them on an :class:`~locust.event.Events` once (the locustfile's import
of :class:`~llm_locust.runtime.user.LLMUser` does it for ``locust.events``, before Locust builds
its parser), so every option of the table (:mod:`llm_locust.config.options`) is on the command
line, in the web UI's form and in ``LLM_LOCUST_*`` variables, and the run is prepared the
moment the command line is parsed (:mod:`llm_locust.runtime.prepare`). At ``init`` the
environment gets the node of its role (:mod:`llm_locust.runtime.nodes`); every other listener
hands the event to it. A worker handles none of its master's messages before that
(:func:`~llm_locust.runtime.locust_adapter.hold_worker_messages_until_init`).
"""

from __future__ import annotations

from locust import events as locust_events
from locust.env import Environment
from locust.event import Events

import argparse
import logging

import gevent

from llm_locust.config.register import register
from llm_locust.results.finalize import REFUSED_EXIT
from llm_locust.runtime import binds, channel, failstop, master_watch, pauses, quota, silences, stopping
from llm_locust.runtime.form import install_form_check
from llm_locust.runtime.locust_adapter import (
    build_default_args_once,
    hold_worker_messages_until_init,
    release_worker_messages,
    signal_forked_workers_at_exit,
)
from llm_locust.runtime.node import ATTRIBUTE, Node, node_of
from llm_locust.runtime.nodes import MasterNode, WorkerNode, make_node
from llm_locust.runtime.outputs import install_outputs
from llm_locust.runtime.prepare import CONFIG_ERRORS, check_when_parsed, prepare_or_exit
from llm_locust.runtime.runners import runner_of
from llm_locust.runtime.sink import SinkNode

__all__ = ["init_node", "install"]

log = logging.getLogger("llm_locust")
_MARK = "_llm_locust_listeners"  # set on an Events object once our listeners are on it


def install(events: Events | None = None) -> None:
    """Register the listeners on ``events`` (default: Locust's global ones), once per object."""
    events = locust_events if events is None else events
    if getattr(events, _MARK, False):
        return
    setattr(events, _MARK, True)
    build_default_args_once()  # a worker's spawn messages otherwise build Locust's parser per option
    hold_worker_messages_until_init(events)  # a worker takes the test only once its node exists
    events.init_command_line_parser.add_listener(_options)
    events.init.add_listener(_init)
    events.test_start.add_listener(_test_start)
    events.test_stopping.add_listener(_test_stopping)
    events.test_stop.add_listener(_test_stop)
    events.quitting.add_listener(_quitting)


def _options(parser: argparse.ArgumentParser, **_: object) -> None:
    register(parser)
    stopping.mark_default_stop_timeout(parser)
    check_when_parsed(parser)


def init_node(environment: Environment) -> Node:
    """The environment's node, made for its role and wired (the ``init`` listener's work)."""
    node = make_node(environment)
    setattr(environment, ATTRIBUTE, node)
    options = environment.parsed_options
    node.adopt(prepare_or_exit(options, node.role))
    if options is not None:
        node.drain = stopping.apply_drain(environment, node.run_config.request.request_timeout)
    sink = node if isinstance(node, SinkNode) else None  # the master, the local runner
    if sink is not None:
        stopping.install_signal_handlers(sink)
    else:  # a worker: Ctrl-C in its main greenlet, never inside a user (stopping.install_interrupt_handler)
        stopping.install_interrupt_handler()
    binds.log_notes(node)
    channel.install(node)
    # added after the runner's own listeners, so it runs before them (quitting fires reversed)
    environment.events.quitting.add_listener(lambda **_: stopping.stop_before_quitting(environment))
    if isinstance(node, WorkerNode):
        master_watch.install(node)
    if isinstance(node, MasterNode):
        silences.install(node, lambda: node.fleet.silences)
    if isinstance(node, MasterNode) and getattr(options, "processes", None):
        signal_forked_workers_at_exit()  # Locust's own kill_workers signals none (a Locust bug)
    if sink is not None:
        failstop.install(sink)
    quota.install(node, sink.bus if sink is not None else None)  # --num-requests
    pauses.install(environment.events)  # no collector pause, no stop lookup, mid-stream
    if sink is not None:
        install_outputs(sink)
        sink.check_target()  # headless: exit 2 before any load (the web UI's: at each start)
        install_form_check(sink)
    return node


def _init(environment: Environment, **_: object) -> None:
    try:
        init_node(environment)
    finally:  # a worker's messages held since it connected (an init that failed: the process exits)
        release_worker_messages(environment)


def _test_start(environment: Environment, **_: object) -> None:
    channel.before_test(environment)
    try:
        node_of(environment).on_test_start()
    except CONFIG_ERRORS as exc:
        log.error("llm-locust: %s", exc)
        environment.process_exit_code = REFUSED_EXIT
        gevent.spawn(runner_of(environment).quit)


def _test_stopping(environment: Environment, **_: object) -> None:
    node_of(environment).on_test_stopping()


def _test_stop(environment: Environment, **_: object) -> None:
    node_of(environment).on_test_stop()


def _quitting(environment: Environment, **_: object) -> None:
    node_of(environment).on_quitting()
