"""The closed-loop user sends nothing new once the load is stopping.

Between Locust's ``test_stopping`` and the moment it stops each user, a user whose requests
are refused at once used to spin: its backoff pause ends early when the test stops, and the
task started the next request at once (29 and 59 HTTP 401s instead of <= 12 in
tests/integration/test_failure_storms.py on a busy machine).
"""

from __future__ import annotations

from locust.user.users import LOCUST_STATE_RUNNING

from types import SimpleNamespace
from typing import Any

from llm_locust.runtime import user as user_module
from llm_locust.runtime.user import LLMUser


class _Run:
    def __init__(self, stopping: bool) -> None:
        self.stopping = stopping
        self.context = SimpleNamespace(plan=SimpleNamespace(open_loop=False))
        self.sent = 0

    def stage_now(self) -> None:
        return None

    def new_source(self, stage: Any) -> Any:
        return SimpleNamespace(next_request=lambda: SimpleNamespace(think_time=None), observe=lambda *a: None)

    def new_record(self, spec: Any) -> Any:
        return SimpleNamespace(ok=False, extra={"pause_s": 0.4})

    def send(self, client: Any, body: Any, record: Any, keep_text: bool = False) -> str:
        self.sent += 1
        return ""


def _user(run: _Run) -> LLMUser:
    user = object.__new__(LLMUser)  # no environment: only what generate() reads
    user.llm_run = run  # type: ignore[assignment]
    user.llm_client = SimpleNamespace(config=None)  # type: ignore[assignment]
    user.paced = SimpleNamespace(config=None)  # type: ignore[assignment]
    user._sources = {}
    user._state = LOCUST_STATE_RUNNING
    return user


def test_no_request_once_the_load_is_stopping(monkeypatch: Any) -> None:
    monkeypatch.setattr(user_module, "build_body", lambda config, spec: {})
    monkeypatch.setattr(user_module, "PAUSE_SLICE_S", 0.001)
    run = _Run(stopping=True)
    user = _user(run)
    for _ in range(20):
        user.generate()
    assert run.sent == 0


def test_a_running_user_sends_and_pauses(monkeypatch: Any) -> None:
    monkeypatch.setattr(user_module, "build_body", lambda config, spec: {})
    run = _Run(stopping=False)
    user = _user(run)
    pauses: list[float] = []
    monkeypatch.setattr(user, "pause", pauses.append)
    user.generate()
    assert run.sent == 1 and pauses == [0.4]
