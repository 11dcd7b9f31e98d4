"""Locust's private internals (its parser, its worker's report, its web UI's Flask views), in one place.

llm-locust extends Locust through its events and hooks; four needs have no public hook, and each
reach for them is here, and nowhere else:

- :func:`set_option_default`: an option's default on Locust's parser after Locust declared it
  (argparse's ``_option_string_actions``): ``--stop-timeout``'s default is marked, so an
  explicit ``0`` can be told from Locust's default (:mod:`llm_locust.runtime.stopping`);
- :func:`after_parse`: Locust's ``main`` fires ``init_command_line_parser`` with its parser,
  then calls that very object's ``parse_args()``; the method is replaced on the instance so the
  run is prepared (a bad option: one line, exit 2) as soon as the command line is parsed;
- :func:`send_stats_now`: a worker's own statistics report (``WorkerRunner._send_stats``, the
  ``stats`` message), sent at the end of a test instead of up to 3 s later;
- :func:`wrap_view`: a web UI view replaced in Flask's ``app.view_functions`` (by the endpoint
  of its URL rule), wrapped again in Locust's login check. Wrappers compose: the one installed
  last runs first (so ``/swarm``: the form check, installed after the preflight, runs before it,
  and both after the login check);
- :func:`after_template_args`: the web UI rebuilds its page's arguments (``template_args``) in
  ``update_template_args`` at every ``GET /``; the method is replaced on the instance so a
  change to them (the secrets blanked) follows each rebuild;
- :func:`signal_forked_workers_at_exit`: a work-around of a Locust bug. A ``--processes`` master
  registers ``kill_workers`` (``main.py``) at exit, meant to give its forked workers 3 s and then
  SIGINT those still running; its ``os.waitpid(pid, os.WNOHANG)`` loop takes ``(0, 0)`` (the
  child still runs) for an exit and forgets the child, so no worker is ever signalled, and a
  worker that missed the master's ``quit`` message (the master stopped before its workers
  connected) was left behind. This handler, registered after Locust's, runs before it (atexit:
  last in, first out) and does what it meant, without reaping (Locust's handler still collects
  the exit codes);
- :func:`hold_starts`: Locust's ``main`` starts a headless test as soon as its workers are
  ready, from its main greenlet (``start_automatic_run``: ``start_shape``, or ``start`` in a
  greenlet), even after a signal asked the master to exit before the test began: the runner's
  ``start`` and ``start_shape`` are replaced on the instance by a wait for the exit;
- :func:`keep_test_while_workers_missing`: Locust's master stops the test from its heartbeat loop
  (``heartbeat_worker``: "The last worker went missing, stopping test.", then
  ``check_stopped()``) the moment its last worker misses three heartbeats, and
  ``check_stopped()`` (after every message) ends a test whose workers are all missing; the
  runner's ``stop`` (called from that loop) and ``check_stopped`` are replaced on the instance
  so the test stays on while the caller's rule says so (the workers may come back: Locust takes
  a missing worker back at its next heartbeat, until it forgets it). Two lines of Locust's that
  are then untrue are left out of its log (a filter on the ``locust.runners`` logger, by their
  text): the loop's "The last worker went missing, stopping test." when the stop is kept, and
  ``MasterRunner.start``'s warning "You can't start a distributed test before at least one worker
  processes has connected" while a test is under way (its re-dispatch when a worker leaves or
  quits, or at the heartbeat that ends a silence, which runs while the worker still counts as
  missing: the test had started, with its workers connected);
- :func:`build_default_args_once`: a work-around of a Locust bug. A worker handling a ``spawn``
  message (the test's start, every change of the user count: a stage, a search step, a worker
  leaving) keeps the master's options that are not Locust's own with ``k not in
  argument_parser.default_args_dict()`` inside a comprehension over every option, so it builds
  Locust's whole parser once per option: about 1.7 ms each on an idle core, 0.35 s of CPU for
  llm-locust's ~200 options, with the worker's event loop held (every stream's next read and
  every open-loop send waits: 0.26-2.2 s late at a worker's quit in
  tests/integration/test_openloop_worker_quit.py). ``default_args_dict`` is replaced in Locust's
  module by one that builds the parser once and hands out copies (Locust reads only its keys:
  the names of its own options).
- :func:`hold_worker_messages_until_init`: Locust's worker starts its receive loop before it
  connects (``WorkerRunner.__init__``: the ``worker`` greenlet, then ``connect_to_master``, which
  waits for the ``ack``), and Locust's ``main`` fires ``init`` only after the runner is made. A
  master whose last expected worker has just connected sends the test at once (llm-locust's
  plan, then ``spawn``), and the loop handled them before ``init`` had made the worker's node:
  the plan dropped ("Unknown message type received"), ``test_start`` without a node, the worker's
  exit 1 (seen once in tests/integration/test_k8s_pods.py). ``handle_message`` is replaced on
  Locust's class by one that, on a worker whose events asked for it (llm-locust's), lets ``ack``
  and ``heartbeat`` through and holds every other message, in order, until
  :func:`release_worker_messages` (at the end of llm-locust's ``init``).

tests/unit/runtime/test_locust_adapter.py pins each behaviour relied on, and fails naming the
installed versions and :data:`CHECKED_WITH` when one differs.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gevent.event

from llm_locust.config.jsontypes import JsonObject

if TYPE_CHECKING:
    from locust.env import Environment
    from locust.event import Events
    from locust.rpc import Message
    from locust.runners import MasterRunner, Runner
    from locust.web import WebUI

    from flask.typing import ResponseReturnValue

__all__ = [
    "CHECKED_WITH",
    "LAST_WORKER_MISSING",
    "NO_WORKER_TO_START",
    "after_parse",
    "after_template_args",
    "build_default_args_once",
    "hold_starts",
    "hold_worker_messages_until_init",
    "keep_test_while_workers_missing",
    "release_worker_messages",
    "send_stats_now",
    "set_option_default",
    "signal_forked_workers_at_exit",
    "stop_children",
    "wrap_view",
]

#: The versions whose internals were read and pinned: {package: versions}.
CHECKED_WITH = {"locust": ("2.47.0",), "flask": ("3.1.3",)}
#: Set on Locust's ``default_args_dict`` once :func:`build_default_args_once` replaced it.
_BUILT_ONCE = "_llm_locust_built_once"
#: Set on an ``Events`` whose worker holds its master's messages until its ``init`` (and on the
#: replaced ``handle_message``); the release is an event kept on the environment.
_HELD = "_llm_locust_held_until_init"
_RELEASED = "_llm_locust_messages_released"
#: What a held worker still handles before its ``init``: its connection's own messages.
PASSED_BEFORE_INIT = frozenset({"ack", "heartbeat"})
#: A Flask view function.
View = Callable[..., "ResponseReturnValue"]


def set_option_default(parser: argparse.ArgumentParser, flag: str, default: object) -> bool:
    """Give ``flag``'s option on ``parser`` the default ``default``; ``False``: no such option."""
    action = getattr(parser, "_option_string_actions", {}).get(flag)
    if action is None:
        return False
    action.default = default
    return True


def after_parse(parser: argparse.ArgumentParser, then: Callable[[argparse.Namespace], None]) -> None:
    """Call ``then(options)`` each time ``parser.parse_args`` returns (before its caller sees them)."""
    parse = parser.parse_args

    def parse_then(*args: Any, **kwargs: Any) -> Any:
        options = parse(*args, **kwargs)
        then(options)
        return options

    parser.parse_args = parse_then  # type: ignore[method-assign]


def send_stats_now(runner: Runner | None) -> None:
    """A worker's statistics report to its master, now (nothing on another runner)."""
    send = getattr(runner, "_send_stats", None)
    if send is not None:
        send()


def wrap_view(web_ui: WebUI | None, rule: str, wrapper: Callable[[View], View]) -> bool:
    """Replace the view of URL ``rule`` (e.g. ``"/swarm"``) with ``wrapper(view)``, behind Locust's
    login check; ``False``: no web UI app or no such rule."""
    app = getattr(web_ui, "app", None)
    if web_ui is None or app is None:
        return False
    endpoint = next((r.endpoint for r in app.url_map.iter_rules() if r.rule == rule), None)
    if endpoint is None or endpoint not in app.view_functions:
        return False
    app.view_functions[endpoint] = web_ui.auth_required_if_enabled(wrapper(app.view_functions[endpoint]))
    return True


def after_template_args(web_ui: WebUI, then: Callable[[JsonObject], None]) -> None:
    """Call ``then(web_ui.template_args)`` now and each time Locust rebuilds them."""
    update = web_ui.update_template_args

    def update_then() -> None:
        update()
        then(web_ui.template_args)

    web_ui.update_template_args = update_then  # type: ignore[method-assign]
    then(web_ui.template_args)


def build_default_args_once() -> None:
    """Locust's ``default_args_dict`` built once per process (see the module docstring); a copy of
    it at each call, so no caller can change another's."""
    from locust import argument_parser  # Locust's parser module: imported when a role needs it

    build = argument_parser.default_args_dict
    if getattr(build, _BUILT_ONCE, False):
        return
    built: dict[str, Any] = {}

    def default_args_dict() -> dict[str, Any]:
        if not built:
            built.update(build())
        return dict(built)

    setattr(default_args_dict, _BUILT_ONCE, True)
    default_args_dict.__wrapped__ = build  # type: ignore[attr-defined]  # Locust's own, as functools keeps it
    argument_parser.default_args_dict = default_args_dict


def hold_worker_messages_until_init(events: Events) -> None:
    """A worker whose environment has ``events`` handles no message of its master's but ``ack``
    and ``heartbeat`` until :func:`release_worker_messages` (see the module docstring); they wait,
    in order, in its receive loop."""
    from locust.runners import WorkerRunner

    setattr(events, _HELD, True)
    handle = WorkerRunner.handle_message
    if getattr(handle, _HELD, False):
        return

    def handle_message(self: WorkerRunner, msg: Message) -> None:
        if msg.type not in PASSED_BEFORE_INIT and getattr(self.environment.events, _HELD, False):
            _released(self.environment).wait()
        handle(self, msg)

    setattr(handle_message, _HELD, True)
    handle_message.__wrapped__ = handle  # type: ignore[attr-defined]  # Locust's own
    WorkerRunner.handle_message = handle_message  # type: ignore[method-assign]


def release_worker_messages(environment: Environment) -> None:
    """The worker's held messages (and every later one) are handled from now on."""
    _released(environment).set()


def _released(environment: Environment) -> gevent.event.Event:
    event = getattr(environment, _RELEASED, None)
    if event is None:
        event = gevent.event.Event()
        setattr(environment, _RELEASED, event)
    return event


def hold_starts(runner: Runner) -> None:
    """From now on a test start on ``runner`` (``start``, ``start_shape``) starts nothing: its caller
    waits, for good (the process is exiting: its main greenlet is interrupted there)."""

    def held(*args: Any, **kwargs: Any) -> None:
        gevent.event.Event().wait()

    runner.start = held  # type: ignore[method-assign]
    runner.start_shape = held  # type: ignore[method-assign]


#: Locust's master's lines that :func:`keep_test_while_workers_missing` leaves out when untrue.
LAST_WORKER_MISSING = "The last worker went missing, stopping test."
NO_WORKER_TO_START = "You can't start a distributed test before at least one worker processes has connected"


class _UntrueLines(logging.Filter):
    """Leaves out of ``locust.runners``' log the two lines of its master that are untrue here."""

    def __init__(self, runner: MasterRunner, keep: Callable[[], bool]) -> None:
        super().__init__()
        self.runner, self.keep = runner, keep

    def filter(self, record: logging.LogRecord) -> bool:
        from locust.runners import STATE_RUNNING, STATE_SPAWNING

        if record.msg == LAST_WORKER_MISSING:  # the heartbeat loop's stop, kept or not
            return not self.keep()
        if record.msg == NO_WORKER_TO_START:  # the test started, with its workers connected
            return self.runner.state not in (STATE_RUNNING, STATE_SPAWNING)
        return True


def keep_test_while_workers_missing(runner: MasterRunner, keep: Callable[[], bool]) -> None:
    """While ``keep()`` is true, the stop of the test by Locust's heartbeat loop (its last worker
    went missing) does not happen, nor does ``check_stopped``'s; every other stop does. The loop's
    line saying it stops the test is left out of the log then, and so is the start's warning that
    no worker has connected while a test is under way (one master a process: a filter installed
    for an earlier runner goes)."""
    from locust.runners import MasterRunner

    stop, check_stopped = runner.stop, runner.check_stopped
    loop = MasterRunner.heartbeat_worker.__code__

    def stop_unless_kept(*args: Any, **kwargs: Any) -> None:
        if sys._getframe(1).f_code is loop and keep():
            return
        stop(*args, **kwargs)

    def check_stopped_unless_kept() -> None:
        if not keep():
            check_stopped()

    runner.stop = stop_unless_kept  # type: ignore[method-assign]
    runner.check_stopped = check_stopped_unless_kept  # type: ignore[method-assign]
    logger = logging.getLogger("locust.runners")
    for old in [f for f in logger.filters if isinstance(f, _UntrueLines)]:
        logger.removeFilter(old)
    logger.addFilter(_UntrueLines(runner, keep))


def signal_forked_workers_at_exit(grace_s: float = 3.0, stop_s: float = 10.0) -> None:
    """At this process's exit, its forked workers (its children running its own command line):
    ``grace_s`` seconds to end, then SIGINT, ``stop_s`` more, then SIGKILL (:func:`stop_children`)."""
    if sys.platform.startswith("linux"):  # /proc; Locust forks only on POSIX
        atexit.register(_at_exit, os.getpid(), grace_s, stop_s)


def _at_exit(parent: int, grace_s: float, stop_s: float) -> None:
    if os.getpid() == parent:  # not in a child forked later (it inherits the handler)
        stop_children(_forked_children(parent), grace_s, stop_s)


def _forked_children(parent: int) -> list[int]:
    """The children of ``parent`` running its command line (Locust's forks keep it)."""
    own = Path(f"/proc/{parent}/cmdline").read_bytes()
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if (
                proc.name.isdigit()
                and _stat(proc)[1] == str(parent)
                and (proc / "cmdline").read_bytes() == own
            ):
                pids.append(int(proc.name))
        except OSError:  # it ended meanwhile
            continue
    return pids


def _stat(proc: Path) -> list[str]:
    """(state, parent pid) of a /proc entry."""
    return proc.joinpath("stat").read_text().rsplit(")", 1)[1].split()[:2]


def _running(pids: Iterable[int]) -> list[int]:
    """Those of ``pids`` still running (neither gone nor a zombie waiting to be reaped)."""
    alive = []
    for pid in pids:
        try:
            if _stat(Path(f"/proc/{pid}"))[0] != "Z":
                alive.append(pid)
        except OSError:
            continue
    return alive


def stop_children(pids: Iterable[int], grace_s: float, stop_s: float) -> None:
    """Wait up to ``grace_s`` for ``pids`` to end, SIGINT those still running, wait up to
    ``stop_s``, SIGKILL the rest; reaps none (their parent's ``waitpid`` gets their codes)."""
    pending = _running(pids)
    for sig, wait_s in ((0, grace_s), (signal.SIGINT, stop_s), (signal.SIGKILL, 5.0)):
        for pid in pending if sig else ():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait_s
        while (pending := _running(pending)) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not pending:
            return
