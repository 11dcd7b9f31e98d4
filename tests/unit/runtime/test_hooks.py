"""``init`` and a test's lifecycle on the node of each role (runtime/hooks.py, runtime/nodes.py,
runtime/sink.py), in process: Locust's real runners, the master and its worker joined by the
in-memory channel (fake_rpc.py), options parsed by Locust's own parser with llm-locust's table."""

from __future__ import annotations

from locust.argument_parser import get_empty_argument_parser, setup_parser_arguments
from locust.env import Environment

import argparse
import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from llm_locust.config.register import register
from llm_locust.record import RequestRecord
from llm_locust.runtime import hooks, master_watch, stopping
from llm_locust.runtime.node import ATTRIBUTE, front_of, node_of
from llm_locust.runtime.nodes import LocalNode, MasterNode, WorkerNode
from llm_locust.runtime.quota import quota_of
from llm_locust.runtime.sink import sink_of
from tests.unit.runtime.fake_rpc import fleet_of, settle

TARGET = "http://127.0.0.1:9"  # nothing listens: no request leaves the process here


def _options(*args: str) -> argparse.Namespace:
    parser = get_empty_argument_parser()
    setup_parser_arguments(parser)
    register(parser)
    stopping.mark_default_stop_timeout(parser)  # as the options listener does
    return parser.parse_args(["-f", "x.py", "--host", TARGET, "--model", "m", *args])


@pytest.fixture
def quiet(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The options come from the test, not pytest's argv; the helpers that would outlive the test
    (the master watch's endless greenlet, the process-wide collector thresholds) are recorded."""
    monkeypatch.setattr(sys, "argv", ["locust"])
    watched: list[Any] = []
    monkeypatch.setattr(master_watch, "install", watched.append)
    monkeypatch.setattr(hooks.pauses, "install", lambda events: None)
    return watched


def test_init_gives_each_role_its_node_and_only_its_helpers(quiet: list[Any]) -> None:
    with fleet_of(workers=1) as pair:
        master_env, worker_env = pair.master.environment, pair.workers[0].environment
        master_env.parsed_options, worker_env.parsed_options = _options(), _options()
        master, worker = hooks.init_node(master_env), hooks.init_node(worker_env)
        assert isinstance(master, MasterNode) and isinstance(worker, WorkerNode)
        assert node_of(master_env) is getattr(master_env, ATTRIBUTE) is master
        assert sink_of(master_env) is master and front_of(worker_env) is worker.front
        with pytest.raises(RuntimeError, match="a master sends no requests"):
            front_of(master_env)
        with pytest.raises(RuntimeError, match="a worker keeps no results"):
            sink_of(worker_env)
        assert quiet == [worker]  # the master watch runs on the worker only
        assert quota_of(master_env) is not None and quota_of(worker_env) is not None  # tickets on both
        assert master.run_config.request.model == worker.run_config.request.model == "m"
        assert (
            master.drain
            == worker.drain
            == {"seconds": 30.0, "source": "default: min(--request-timeout, 30 s)"}
        )


class _Client:
    """A request that ends at once, ``tokens`` content chunks 10 ms apart after a 20 ms TTFT."""

    def __init__(self, tokens: int) -> None:
        self.tokens = tokens

    def send(self, body: Any, record: RequestRecord, keep_text: bool = False) -> str:
        record.wall_start, record.t_sent = time.time(), time.perf_counter()
        record.chunk_times = [record.t_sent + 0.02 + 0.01 * i for i in range(self.tokens)]
        record.t_first_token, record.t_end = record.chunk_times[0], record.chunk_times[-1]
        record.completion_tokens = self.tokens
        return ""


def test_a_local_test_from_its_start_to_one_summary(
    quiet: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The local node: its front's rows reach its own sinks (the results, the --num-requests
    count), the summary is written once at the stop, and ``finalized`` fires once with it; the
    health interval is cut once the start's work is done, before the first request."""
    from llm_locust.client.health import LoopMonitor

    cuts: list[bool] = []
    monkeypatch.setattr(LoopMonitor, "cut", lambda self: cuts.append(self.__class__ is LoopMonitor))
    environment = Environment(user_classes=[], parsed_options=_options("--results-dir", str(tmp_path / "r")))
    environment.host = TARGET
    environment.create_local_runner()
    node = hooks.init_node(environment)
    assert isinstance(node, LocalNode) and quiet == []
    finals: list[tuple[dict[str, Any], Any]] = []
    node.finalized.subscribe(lambda summary, directory: finals.append((summary, directory)))
    node.on_test_start()
    assert node.context is not None and node.context.client is not None and node.results is not None
    assert node.context.client.model == "m"  # the model given: no listing needed
    assert cuts == [True]
    spec = SimpleNamespace(
        target_input_tokens=None, target_output_tokens=None, session_id=None, turn=None, info=None
    )
    for tokens in (3, 5, 9):
        record = node.front.new_record(spec)  # type: ignore[arg-type]
        node.front.send(_Client(tokens), {}, record)
    quota = quota_of(environment)
    assert quota is not None
    node.live.stopping = True  # test_stopping
    node.on_test_stop()
    assert quota.finished == 3  # every row reached the bus (the idle fold drained at the stop)
    assert len(finals) == 1
    summary, directory = finals[0]
    assert Path(directory) == tmp_path / "r"
    written = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert written["completed"] == 3 == summary.completed
    assert written["total_output_tokens"] == 3 + 5 + 9
    assert written["p50_ttft_ms"] == pytest.approx(20.0, abs=0.01)  # first chunk 20 ms after sent
    assert written["p50_tpot_ms"] == pytest.approx(10.0, abs=0.01)  # (E2E - TTFT) / (n - 1): 10 ms
    rows = [json.loads(line) for line in (tmp_path / "r" / "requests.jsonl").read_text().splitlines()]
    assert sorted(r["completion_tokens"] for r in rows) == [3, 5, 9]
    assert sorted(r["request_id"] for r in rows) == ["local-0", "local-1", "local-2"]
    node.finalize()  # a second call (quitting): nothing more
    assert len(finals) == 1


def test_a_test_stopped_while_its_workload_is_built_still_writes_its_results(
    quiet: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A stop during the start (``-t`` shorter than a ``--tokenizer server`` build: Locust kills the
    greenlet running ``test_start``) left an empty results folder and exit code 0; now the results
    are written, with no record, exit code 7, and a line that says why."""
    import gevent

    from llm_locust.results.finalize import NOTHING_RECORDED_EXIT

    environment = Environment(user_classes=[], parsed_options=_options("--results-dir", str(tmp_path / "r")))
    environment.host = TARGET
    environment.create_local_runner()
    node = hooks.init_node(environment)
    assert isinstance(node, LocalNode)
    monkeypatch.setattr(node, "_workload", lambda *args: gevent.sleep(30))  # a build that takes its time
    starting = gevent.spawn(node.on_test_start)
    gevent.sleep(0.2)
    starting.kill()  # what Locust's stop does to the greenlet running test_start
    assert node.context is None and node.results is not None  # no user starts; the results are open
    node.live.stopping = True
    node.on_test_stop()
    node.on_quitting()
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["completed"] == 0 and (tmp_path / "r" / "requests.jsonl").read_text() == ""
    assert environment.process_exit_code == NOTHING_RECORDED_EXIT
    assert "stopped 0.2 s into its start, while its workload was being built" in caplog.text


def test_a_headless_local_run_builds_its_workload_before_the_test_starts(
    quiet: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """At ``init`` the local node checks the target, then builds the workload once against it, so
    the test's own build (inside Locust's ``-t``) finds a ``--tokenizer server``'s counts kept: the
    start of a 1-s run against the simulator took 0.77 s of its second (2026-12-03), now 0.04."""
    from llm_locust.client import preflight
    from llm_locust.client.preflight import Preflight

    checked = Preflight(ok=True, target=TARGET, model="m", max_model_len=4096, usage=True)
    monkeypatch.setattr(preflight, "run_preflight", lambda config, endpoints: checked)
    environment = Environment(user_classes=[], parsed_options=_options("--headless"))
    environment.host = TARGET
    environment.create_local_runner()
    node = hooks.init_node(environment)
    assert isinstance(node, LocalNode)
    built: list[Any] = []
    monkeypatch.setattr(node.front, "workload", lambda config, client, server: built.append(server))
    node.check_target()
    assert node.preflight_result is checked and len(built) == 1
    assert built[0]["max_model_len"] == 4096  # built with the checked server's facts


def test_a_worker_given_the_test_before_its_init_takes_it_with_its_node(
    quiet: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    """Locust's worker receives from the moment it connects; its ``init`` fires later. A master
    whose last worker just connected sends llm-locust's plan and Locust's ``spawn`` at once: a
    worker pod took both before its ``init`` (the plan "Unknown message type received", then
    ``test_start``: "no node on this environment", exit 1; a fresh-clone run of
    tests/integration/test_k8s_pods.py, 2026-12-03). They wait for the node now, in order."""
    from locust import User, task
    from locust.event import Events

    from llm_locust.runtime.messages import PLAN, PlanStart

    class Idle(User):
        @task
        def nothing(self) -> None:
            pass

    events = Events()
    hooks.install(events)
    with fleet_of(1, [Idle], worker_events=events) as pair:
        worker_env = pair.workers[0].environment
        worker_env.parsed_options = _options()
        pair.master.environment.host = TARGET
        t0 = time.time() + 1.0
        pair.master.send_message(PLAN, PlanStart(t0, 1, None).to_data())
        pair.master.start(1, 1)
        settle(0.2)
        assert not hasattr(worker_env, ATTRIBUTE) and pair.workers[0].user_count == 0
        events.init.fire(environment=worker_env, runner=pair.workers[0], web_ui=None)
        settle(0.3)
        node = node_of(worker_env)
        assert isinstance(node, WorkerNode)
        assert node.live.pending_t0 == pytest.approx(t0)  # the plan reached its handler
        assert node.tests == 1 and node.context is not None and pair.workers[0].user_count == 1
        pair.master.stop()
        settle(0.3)
    # the worker's line (the plain master here knows no llm-locust message: its own line differs)
    assert f"Unknown message type received: {PLAN}" not in caplog.text
    assert "no node on this environment" not in caplog.text
