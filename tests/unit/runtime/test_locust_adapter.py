"""Pins of Locust's internals that llm_locust/runtime/locust_adapter.py reaches: its parser's
option table and ``parse_args`` (as Locust's ``main`` calls it), a worker's own statistics
report, and the web UI's Flask views. A failure names the installed versions and those the
adapter was checked with: read the internal again, fix the adapter (not its callers), then add
the version to ``CHECKED_WITH``."""

from __future__ import annotations

import locust.main
import locust.runners
from locust import User, constant, task
from locust.argument_parser import get_empty_argument_parser, setup_parser_arguments
from locust.env import Environment

import argparse
import inspect
import signal
import subprocess
import sys
import time
from typing import Any

import gevent
import pytest

from llm_locust.runtime.locust_adapter import (
    CHECKED_WITH,
    after_parse,
    after_template_args,
    build_default_args_once,
    hold_starts,
    hold_worker_messages_until_init,
    release_worker_messages,
    send_stats_now,
    set_option_default,
    stop_children,
    wrap_view,
)
from tests.pins import differs
from tests.unit.runtime.fake_rpc import fleet_of, settle


def why(what: str) -> str:
    return differs(CHECKED_WITH, "llm_locust/runtime/locust_adapter.py", what)


class Idle(User):
    @task
    def nothing(self) -> None:
        pass


@pytest.fixture(autouse=True)
def _argv(monkeypatch: pytest.MonkeyPatch) -> None:
    """Locust's parser also reads ``sys.argv`` (pytest's own options here)."""
    monkeypatch.setattr(sys, "argv", ["locust"])


def locust_parser() -> Any:
    parser = get_empty_argument_parser()
    setup_parser_arguments(parser)
    return parser


def test_an_options_default_is_replaced_on_locusts_parser() -> None:
    parser = locust_parser()
    marker = object()
    assert set_option_default(parser, "--stop-timeout", marker), why("_option_string_actions")
    assert parser.parse_args(["-f", "x.py"]).stop_timeout is marker, why("an action's default")
    assert (
        parser.parse_args(["-f", "x.py", "--stop-timeout", "0"]).stop_timeout == 0
    )  # given: not the default
    assert not set_option_default(parser, "--no-such-option", 1)


def test_locusts_main_parses_with_the_parser_its_hook_was_given() -> None:
    """``main`` fires ``init_command_line_parser`` (inside ``get_parser``) and then calls that very
    object's ``parse_args()``: the instance's method is what runs."""
    source = inspect.getsource(locust.main.main)
    made, parsed = source.find("parser = get_parser()"), source.find("options = parser.parse_args()")
    assert 0 <= made < parsed, why("locust.main.main: get_parser() then parser.parse_args()")
    assert "init_command_line_parser.fire(parser=parser)" in inspect.getsource(
        locust.argument_parser.get_parser
    ), why("get_parser fires init_command_line_parser with its parser")
    parser = locust_parser()
    seen: list[Any] = []
    after_parse(parser, seen.append)
    options = parser.parse_args(["-f", "x.py", "--stop-timeout", "3"])
    assert seen == [options] and options.stop_timeout == 3


def test_a_workers_statistics_report_reaches_the_master_now() -> None:
    with fleet_of(workers=1) as pair:
        reports: list[dict[str, Any]] = []
        pair.master.environment.events.worker_report.add_listener(
            lambda client_id, data, **_: reports.append(data)
        )
        pair.wire.log.clear()
        send_stats_now(pair.workers[0])
        settle()
        assert (pair.workers[0].client_id, "stats") in pair.wire.log, why("WorkerRunner._send_stats")
        assert reports and "user_count" in reports[-1], why("the stats message's report")
        send_stats_now(pair.master)  # a master has no report of its own to send
        send_stats_now(None)


def web_ui(login: bool = False) -> Any:
    env = Environment(user_classes=[Idle])
    env.create_local_runner()
    return env.create_web_ui("127.0.0.1", 0, delayed_start=True, web_login=login)


def test_views_wrapped_later_run_first_behind_the_login_check() -> None:
    ui = web_ui()
    calls: list[str] = []
    originals: list[Any] = []

    def inner(view: Any) -> Any:  # installed first (the preflight)
        originals.append(view)
        return lambda *a, **k: calls.append("inner") or "refused by inner"

    def outer(view: Any) -> Any:  # installed second (the form check): runs first
        return lambda *a, **k: calls.append("outer") or view(*a, **k)

    assert wrap_view(ui, "/swarm", inner) and wrap_view(ui, "/swarm", outer), why("the /swarm rule")
    assert originals[0].__name__ == "swarm", why("Locust's /swarm view")
    reply = ui.app.test_client().post("/swarm", data={"user_count": "1", "spawn_rate": "1"})
    assert reply.get_data(as_text=True) == "refused by inner"
    assert calls == ["outer", "inner"], why("app.view_functions: the view Flask dispatches")
    assert not wrap_view(ui, "/no-such-page", inner)
    assert not wrap_view(object(), "/swarm", inner)


def test_a_wrapped_view_still_asks_for_the_login_first() -> None:
    ui = web_ui(login=True)
    ui.app.secret_key = "a test's"  # what a locustfile with --web-login sets up
    ui.login_manager.user_loader(lambda user_id: None)  # nobody is logged in
    calls: list[str] = []
    wrap_view(ui, "/swarm", lambda view: lambda *a, **k: calls.append("ours") or "ours")
    reply = ui.app.test_client().post("/swarm", data={"user_count": "1"})
    assert calls == [] and reply.status_code in (302, 401), why("auth_required_if_enabled")


def test_the_page_arguments_are_changed_after_each_rebuild() -> None:
    ui = web_ui()
    seen: list[str] = []

    def blank(args: dict[str, Any]) -> None:
        seen.append(str(args.get("host")))
        args["host"] = "(blanked)"

    ui.environment.host = "http://user:secret@127.0.0.1:9"
    after_template_args(ui, blank)
    assert ui.template_args["host"] == "(blanked)" and len(seen) == 1
    page = ui.app.test_client().get("/")  # Locust's index view rebuilds them, then renders
    assert page.status_code == 200, why("GET /")
    assert seen[-1] == "http://user:secret@127.0.0.1:9" and len(seen) == 2, why("update_template_args")
    assert ui.template_args["host"] == "(blanked)"
    assert "user:secret" not in page.get_data(as_text=True), why("the page rendered after the rebuild")


def test_locusts_kill_workers_still_forgets_children_that_run() -> None:
    """The Locust bug :func:`signal_forked_workers_at_exit` works around (Locust 2.47.0, main.py
    ``kill_workers``): ``waitpid(pid, WNOHANG)`` returns ``(0, 0)`` for a child still running, and
    the child is removed from the list to signal without checking. Fixed upstream, the pin fails:
    the work-around is then harmless (every child ended before Locust's handler looks) but may go."""
    source = inspect.getsource(locust.main.main)
    bug = "_, child_status = os.waitpid(child_pid, os.WNOHANG)\n"
    assert bug in source, why("kill_workers' waitpid")
    after = source.split(bug, 1)[1].lstrip()
    assert after.startswith("children.remove(child_pid)"), why("kill_workers forgets a running child")


def test_children_are_given_their_grace_then_sigint_then_sigkill() -> None:
    """Real processes: one ends on its own, one on SIGINT (exit 3), one ignores SIGINT (SIGKILL);
    none is reaped by stop_children (their parent's wait gets the codes)."""
    ends = "import time; time.sleep(0.3)"
    on_sigint = (
        "import signal, sys, time\nsignal.signal(signal.SIGINT, lambda *_: sys.exit(3))\ntime.sleep(60)"
    )
    deaf = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(60)"
    procs = [subprocess.Popen([sys.executable, "-c", code]) for code in (ends, on_sigint, deaf)]
    try:
        time.sleep(0.5)  # the interpreters are up (and their handlers set)
        t0 = time.monotonic()
        stop_children([p.pid for p in procs], grace_s=1.0, stop_s=1.0)
        took = time.monotonic() - t0
        assert [p.wait(5) for p in procs] == [0, 3, -signal.SIGKILL]
        assert 1.0 + 1.0 - 0.1 < took < 1.0 + 1.0 + 3.0, took  # the grace, then the SIGINT's wait
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def test_locusts_main_starts_a_headless_test_once_workers_are_ready() -> None:
    """What :func:`hold_starts` holds: ``start_automatic_run`` waits for ready workers, then
    starts the test from the main greenlet through the runner's ``start_shape`` or ``start``."""
    source = inspect.getsource(locust.main.main)
    waits = source.find("while len(runner.clients.ready) < options.expect_workers:")
    shape = source.find("environment.runner.start_shape()", waits)
    start = source.find("gevent.spawn(runner.start, options.num_users, options.spawn_rate)", waits)
    assert 0 <= waits < shape and waits < start, why("start_automatic_run: the wait, then the start")


def test_a_held_runner_starts_nothing() -> None:
    with fleet_of(workers=1) as pair:
        hold_starts(pair.master)
        for start in (lambda: pair.master.start(1, 1), pair.master.start_shape):
            waiter = gevent.spawn(start)
            settle()
            assert not waiter.dead  # it waits (for the process's exit)
            waiter.kill()
        assert pair.master.state == "ready" and "spawn" not in [t for _, t in pair.wire.log]


def test_locusts_heartbeat_loop_stops_the_test_when_its_last_worker_goes_missing() -> None:
    """What :func:`keep_test_while_workers_missing` keeps: the loop's own ``self.stop()`` then
    ``self.check_stopped()`` once no worker is left (``tests/unit/runtime/test_silences.py`` runs
    the loop itself)."""
    source = inspect.getsource(locust.runners.MasterRunner.heartbeat_worker)
    said = source.find('logger.info("The last worker went missing, stopping test.")')
    stop, check = source.find("self.stop()", said), source.find("self.check_stopped()", said)
    assert 0 <= said < stop < check, why("heartbeat_worker: the last worker missing, stop, check_stopped")
    assert "if self.worker_count <= 0:" in source[:said], why("heartbeat_worker: no worker left")


def test_the_master_lines_the_adapter_leaves_out_are_locusts_own() -> None:
    """The texts :func:`keep_test_while_workers_missing`'s filter matches: the heartbeat loop's line,
    and ``start``'s warning with no worker ready, which the heartbeat that ends a silence reaches
    (its re-dispatch comes before the worker's state is set again: it still counts as missing)."""
    from llm_locust.runtime.locust_adapter import LAST_WORKER_MISSING, NO_WORKER_TO_START

    loop = inspect.getsource(locust.runners.MasterRunner.heartbeat_worker)
    assert f'logger.info("{LAST_WORKER_MISSING}")' in loop, why("heartbeat_worker's line")
    start = inspect.getsource(locust.runners.MasterRunner.start)
    assert f'logger.warning("{NO_WORKER_TO_START}")' in start, why("MasterRunner.start: no worker")
    handle = inspect.getsource(locust.runners.MasterRunner.handle_message)
    healed = handle.find("self-healed with heartbeat")
    restart = handle.find("self.start(self.target_user_count, self.spawn_rate)", healed)
    state = handle.find("c.state = client_state", healed)
    assert 0 <= healed < restart < state, why("the heartbeat's re-dispatch, then the worker's state")


def _builds_per_spawn(monkeypatch: pytest.MonkeyPatch, options: int) -> tuple[int, dict[str, Any]]:
    """How many times Locust built its whole parser while its worker took one ``spawn`` message
    carrying ``options`` options besides Locust's own; and the worker's options after it."""
    from locust import argument_parser

    builds: list[int] = []
    empty = argument_parser.get_empty_argument_parser

    def counted(*args: Any, **kwargs: Any) -> Any:
        builds.append(1)
        return empty(*args, **kwargs)

    monkeypatch.setattr(argument_parser, "get_empty_argument_parser", counted)
    with fleet_of(1, [Slow]) as pair:
        pair.master.environment.parsed_options = argparse.Namespace(**{f"llm_{i}": i for i in range(options)})
        worker = pair.workers[0]
        worker.environment.parsed_options = argparse.Namespace()  # as a worker's own parse left them
        builds.clear()
        pair.master.start(1, 100)
        settle(0.2)
        return len(builds), dict(vars(worker.environment.parsed_options))


class Slow(User):
    wait_time = constant(1)

    @task
    def nothing(self) -> None:
        pass


def test_a_spawn_message_builds_locusts_parser_once_not_once_per_option(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Locust's worker keeps the master's options that are not its own with ``default_args_dict()``
    called for each one: a whole parser built per option, the worker's loop held 0.35 s for
    llm-locust's ~200 (:func:`build_default_args_once`)."""
    from locust import argument_parser

    original = getattr(argument_parser.default_args_dict, "__wrapped__", argument_parser.default_args_dict)
    monkeypatch.setattr(argument_parser, "default_args_dict", original)
    builds, kept = _builds_per_spawn(monkeypatch, 120)
    assert builds >= 120, why("WorkerRunner.handle_message: default_args_dict() per option")  # Locust's own
    assert kept["llm_119"] == 119

    build_default_args_once()
    assert argument_parser.default_args_dict.__wrapped__ is original  # type: ignore[attr-defined]
    builds, kept = _builds_per_spawn(monkeypatch, 120)
    assert builds <= 1 and kept["llm_119"] == 119 and "llm_0" in kept
    # the same names as Locust's own: its options are still told from the master's others
    assert argument_parser.default_args_dict() == original()
    assert (
        "host" in argument_parser.default_args_dict() and "llm_0" not in argument_parser.default_args_dict()
    )
    build_default_args_once()  # once per process: a second call wraps nothing again
    assert argument_parser.default_args_dict.__wrapped__ is original  # type: ignore[attr-defined]


def test_a_worker_takes_its_masters_test_before_init_unless_held(monkeypatch: pytest.MonkeyPatch) -> None:
    """Locust's worker handles a ``spawn`` as soon as it arrives, from the moment it connected,
    before Locust's ``main`` fires ``init`` (asserted so a Locust change shows); a worker whose
    events are held starts nothing until :func:`release_worker_messages`, then the test, in order."""
    from locust.event import Events

    original = getattr(locust.runners.WorkerRunner.handle_message, "__wrapped__", None)
    if original is not None:  # the hooks were installed in this process already
        monkeypatch.setattr(locust.runners.WorkerRunner, "handle_message", original)
    with fleet_of(1, [Idle]) as pair:
        pair.master.start(1, 1)
        settle(0.2)
        assert pair.workers[0].user_count == 1, why("WorkerRunner: messages handled before init")

    events = Events()
    started: list[int] = []
    events.test_start.add_listener(lambda **_: started.append(len(started)))
    hold_worker_messages_until_init(events)
    with fleet_of(1, [Idle], worker_events=events) as pair:  # connected: the ack passed
        worker = pair.workers[0]
        pair.master.start(1, 1)
        settle(0.2)
        assert started == [] and worker.user_count == 0
        assert worker.worker_state == locust.runners.STATE_INIT
        release_worker_messages(worker.environment)
        settle(0.2)
        assert started == [0] and worker.user_count == 1
        pair.master.start(2, 10)  # a later message: not held
        settle(0.2)
        assert worker.user_count == 2 and started == [0]
    wrapped = locust.runners.WorkerRunner.handle_message
    hold_worker_messages_until_init(Events())  # once per process: a second call wraps nothing again
    assert locust.runners.WorkerRunner.handle_message is wrapped
