"""The web UI's ``/swarm``, wrapped once (runtime/form.py), in process: Locust's own web UI (not
served: Flask's test client) on a local runner's node as ``init`` wires it. The order matters:
the form's values are checked and adopted first, then the target is checked with them
(llm_locust/client/preflight.py, called by the node), then Locust's view starts the test."""

from __future__ import annotations

from locust import User, task
from locust.argument_parser import get_empty_argument_parser, setup_parser_arguments
from locust.env import Environment

import sys
from typing import Any

import pytest

from llm_locust.client import preflight
from llm_locust.client.preflight import Preflight
from llm_locust.config.register import register
from llm_locust.runtime.form import install_form_check
from llm_locust.runtime.nodes import LocalNode
from llm_locust.runtime.prepare import prepare_or_exit

TARGET = "http://127.0.0.1:9"


class Idle(User):
    @task
    def nothing(self) -> None:
        pass


@pytest.fixture
def gated(monkeypatch: pytest.MonkeyPatch) -> tuple[LocalNode, list[Any]]:
    """A local run with the web UI, its /swarm gated as at ``init``; the preflight checks recorded
    (and failed, so Locust's own view never starts a test here)."""
    monkeypatch.setattr(sys, "argv", ["locust"])
    parser = get_empty_argument_parser()
    setup_parser_arguments(parser)
    register(parser)
    options = parser.parse_args(["-f", "x.py", "--host", TARGET, "--model", "m"])
    environment = Environment(user_classes=[Idle], parsed_options=options, host=TARGET)
    environment.create_local_runner()
    environment.create_web_ui("127.0.0.1", 0, delayed_start=True)
    ext = LocalNode(environment)
    ext.adopt(prepare_or_exit(options, ext.role))
    checked: list[Any] = []

    def fake_preflight(config: Any, endpoints: Any = None) -> Preflight:
        checked.append((config.host, ext.run_config.workload.max_tokens))
        return Preflight(target=config.host, ok=False, cause="the target is down (test)")

    monkeypatch.setattr(preflight, "run_preflight", fake_preflight)
    ext.check_target()  # as init_node does: nothing at init with a web UI (no --autostart)
    assert checked == []
    install_form_check(ext)
    return ext, checked


def swarm(ext: LocalNode, **fields: str) -> Any:
    assert ext.environment.web_ui is not None
    client = ext.environment.web_ui.app.test_client()
    return client.post(
        "/swarm", data={"user_count": "1", "spawn_rate": "1", "host": TARGET, **fields}
    ).get_json()


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"max_tokens": "-3"}, "--max-tokens"),  # a bad value
        ({"host": "http://127.0.0.2:9"}, "not an allowed target"),  # a target not allowed
    ],
)
def test_the_form_gate_refuses_before_the_target_is_checked(
    gated: tuple[LocalNode, list[Any]], fields: dict[str, str], said: str
) -> None:
    ext, checked = gated
    answer = swarm(ext, **fields)
    assert answer["success"] is False and said in answer["message"]
    assert checked == []  # the form check runs first and stopped it
    assert ext.environment.runner is not None and ext.environment.runner.state == "ready"


def test_the_target_is_checked_with_the_forms_values_then_refused_in_one_line(
    gated: tuple[LocalNode, list[Any]],
) -> None:
    ext, checked = gated
    answer = swarm(ext, max_tokens="77")
    assert checked == [(TARGET, 77)]  # the form's value, adopted before the preflight ran
    assert answer == {"success": False, "message": "preflight: the target is down (test)", "host": TARGET}
    assert ext.environment.runner is not None and ext.environment.runner.state == "ready"
