"""The one owner of in-flight accounting and of each finished request's row, without Locust."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from llm_locust.config.build import config_from_options
from llm_locust.config.stage_kind import StageKind
from llm_locust.load.plan import LoadPlan
from llm_locust.load.stages import Stage, StagePlan
from llm_locust.record import INCOMPLETE, RequestRecord
from llm_locust.runtime.context import RunContext
from llm_locust.runtime.requests import Requests
from llm_locust.workload.base import RequestSpec

T0 = 1_700_000_000.0


class FakeEnvironment:
    """Locust's ``events.request`` and ``stats.get(...).log`` as plain recorders."""

    def __init__(self) -> None:
        self.fired: list[dict[str, Any]] = []
        self.logged: list[tuple[str, float]] = []
        self.events = SimpleNamespace(request=SimpleNamespace(fire=lambda **kw: self.fired.append(kw)))
        self.stats = SimpleNamespace(
            get=lambda name, kind: SimpleNamespace(log=lambda ms, _n: self.logged.append((name, ms)))
        )


def _context(staged: bool = True) -> RunContext:
    stages = StagePlan.build(
        [Stage(0, StageKind.USERS, 4, 10.0, warmup_s=2.0, label="u=4"), Stage(0, StageKind.USERS, 8, 10.0)]
    )
    plan = LoadPlan(stages=stages) if staged else LoadPlan()
    client = SimpleNamespace(endpoint="chat")
    return RunContext(config_from_options(None), "local", plan, client, t0=T0 if staged else None)  # type: ignore[arg-type]


class Client:
    """Sends by filling the record's marks; sees the in-flight count while it sends."""

    def __init__(self, owner: Requests, at: float, outcome: str = "ok", raises: bool = False) -> None:
        self.owner, self.at, self.outcome, self.raises = owner, at, outcome, raises
        self.seen_in_flight = -1

    def send(self, body: dict[str, Any], record: RequestRecord, keep_text: bool = False) -> str:
        self.seen_in_flight = self.owner.in_flight
        record.wall_start, record.t_sent = self.at, 0.0
        record.t_first_token, record.t_end, record.chunk_times = 0.1, 0.5, [0.1, 0.3, 0.5]
        record.completion_tokens, record.outcome = 3, self.outcome
        if self.raises:
            raise KeyboardInterrupt  # the user was killed mid-request
        return "text"


def _spec() -> RequestSpec:
    return RequestSpec(messages=[], max_tokens=3, target_input_tokens=10, target_output_tokens=3)


def test_a_send_counts_in_flight_and_delivers_its_row_with_stage_and_warmup() -> None:
    rows: list[dict[str, Any]] = []
    env = FakeEnvironment()
    owner = Requests(env, rows.append, "w1")
    context = _context()
    for at in (T0 + 1.0, T0 + 12.5):
        client = Client(owner, at)
        record = owner.new_record(context, _spec())
        assert owner.send(context, client, {}, record) == "text"
        assert client.seen_in_flight == 1 and owner.in_flight == 0
    got = [(r["request_id"], r["stage"], r["warmup"]) for r in rows]
    assert got == [("w1-0", 0, True), ("w1-1", 1, False)]
    assert [f["name"] for f in env.fired] == ["E2E", "E2E"] and env.fired[0]["exception"] is None
    assert [name for name, _ in env.logged] == ["TTFT", "TPOT", "TTFT", "TPOT"]


def test_a_killed_user_delivers_its_incomplete_request_and_keeps_the_count_right() -> None:
    rows: list[dict[str, Any]] = []
    env = FakeEnvironment()
    owner = Requests(env, rows.append, "local")
    context = _context(staged=False)
    record = owner.new_record(context, _spec())
    with pytest.raises(KeyboardInterrupt):
        owner.send(context, Client(owner, T0, outcome=INCOMPLETE, raises=True), {}, record)
    assert owner.in_flight == 0
    assert [r["outcome"] for r in rows] == [INCOMPLETE] and rows[0]["stage"] is None
    assert env.fired == []  # neither a success nor a failure for Locust

    other = owner.new_record(context, _spec())
    with pytest.raises(KeyboardInterrupt):  # killed with a finished record: nothing half-delivered
        owner.send(context, Client(owner, T0, outcome="ok", raises=True), {}, other)
    assert len(rows) == 1 and owner.in_flight == 0


def test_a_failure_reaches_locust_as_its_class_and_message() -> None:
    env = FakeEnvironment()
    owner = Requests(env, lambda row: None, "local")
    context = _context(staged=False)
    record = owner.new_record(context, _spec())
    client = Client(owner, T0, outcome="http_500")
    owner.send(context, client, {}, record)
    assert str(env.fired[0]["exception"]).startswith("http_500") and env.logged == []


def test_a_request_counts_in_flight_until_its_row_is_handed_on() -> None:
    """With the row's work deferred (the runtime's idle folder), a search waiting for a step's
    requests to finish must not see the request gone before its row arrives."""
    rows: list[dict[str, Any]] = []
    later: list[Any] = []
    owner = Requests(FakeEnvironment(), rows.append, "local", later=later.append)
    context = _context(staged=False)
    record = owner.new_record(context, _spec())
    assert owner.send(context, Client(owner, T0), {}, record) == "text"
    assert rows == [] and owner.in_flight == 1 and owner.in_flight_before(1e12) == 1
    later.pop()()
    assert [r["request_id"] for r in rows] == ["local-0"] and owner.in_flight == 0
    assert owner.oldest() is None


def test_a_late_open_loop_arrival_counts_in_the_stage_that_meant_it() -> None:
    """An arrival meant for 8 s into the run (stage 0: [0, 10 s)) went out 3 s late, in stage 1:
    its stage is the one whose arrival process scheduled it; the lateness is its send lag."""
    rows: list[dict[str, Any]] = []
    owner = Requests(FakeEnvironment(), rows.append, "w1")
    context = _context()
    record = owner.new_record(context, _spec())
    record.t_intended = -3.0  # Client.send sets t_sent = 0.0: intended 3 s before the send
    record.schedule_offset = 8.0  # the schedule's own offset: exact, no clock conversion
    owner.send(context, Client(owner, T0 + 11.0), {}, record)
    assert (rows[0]["stage"], rows[0]["warmup"], rows[0]["send_lag"]) == (0, False, 3.0)


def test_an_arrival_scheduled_on_a_stage_boundary_is_in_the_later_stage() -> None:
    """Its wall-clock send time converted back can land a hair before the boundary (a 6/s step's
    first arrival counted in the 2/s step: [9, 23] for [8, 24]); its schedule offset cannot."""
    rows: list[dict[str, Any]] = []
    owner = Requests(FakeEnvironment(), rows.append, "w1")
    context = _context()
    record = owner.new_record(context, _spec())
    record.schedule_offset, record.t_intended = 10.0, 0.0
    owner.send(context, Client(owner, T0 + 10.0 - 1e-7), {}, record)
    assert rows[0]["stage"] == 1
