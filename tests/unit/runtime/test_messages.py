"""The custom messages between llm-locust's processes: each kind's data goes out and comes back
as the same typed value, and a message of the wrong shape is refused in one place."""

from __future__ import annotations

import logging

import pytest

from llm_locust.runtime.distributed import Inbox
from llm_locust.runtime.messages import BadMessage, PlanStart, RateSteps, RecordBatch, StoppedEarly, StopUsers


def test_each_message_comes_back_as_it_went() -> None:
    batch = RecordBatch(
        seq=3,
        rows=[{"request_id": "w-1", "outcome": "ok"}],
        final=True,
        health=[{"start": 0.0, "end": 1.0, "cpu": 0.5}],
        in_flight=2,
        oldest_in_flight=1700000000.5,
        sent_at=1700000001.0,
    )
    assert RecordBatch.from_data(batch.to_data()) == batch
    assert PlanStart.from_data(PlanStart(1700000000.0, 4).to_data()) == PlanStart(1700000000.0, 4)
    assert PlanStart.from_data(PlanStart(1700000000.0, 2, 8.0).to_data()).end == 8.0
    steps = RateSteps([(0.0, 2.0), (30.0, 4.0)], stopped_at=None)
    assert RateSteps.from_data(steps.to_data()) == steps
    assert StoppedEarly.from_data(StoppedEarly(12.5, "no heartbeat").to_data()) == StoppedEarly(
        12.5, "no heartbeat"
    )
    assert StopUsers.from_data(StopUsers(now=True).to_data()).now
    assert not StopUsers.from_data(None).now  # Locust's own stop carries no data: drain


def test_a_heartbeat_carries_no_health_list() -> None:
    data = RecordBatch(seq=None, in_flight=5).to_data()
    assert "health" not in data and data["seq"] is None and data["in_flight"] == 5


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ("not an object", "data is str"),
        ({"seq": "one", "rows": []}, "seq is 'one'"),
        ({"seq": 1, "rows": ["x"]}, "rows is not a list of objects"),
        ({"seq": 1, "rows": [], "health": [1.0]}, "health is not a list of objects"),
        ({"seq": 1, "rows": [], "in_flight": True}, "in_flight is True"),
    ],
)
def test_a_malformed_batch_is_named(data: object, said: str) -> None:
    with pytest.raises(BadMessage, match=said):
        RecordBatch.from_data(data)


def test_plan_and_steps_need_their_fields() -> None:
    with pytest.raises(BadMessage, match="t0 is missing"):
        PlanStart.from_data({"workers": 2})
    assert PlanStart.from_data({"t0": 1.0, "workers": 2}).end is None  # no end said: the plan's own
    with pytest.raises(BadMessage, match=r"end is -1\.0"):
        PlanStart.from_data({"t0": 1.0, "workers": 2, "end": -1.0})
    with pytest.raises(BadMessage, match="end is nan"):
        PlanStart.from_data({"t0": 1.0, "workers": 2, "end": float("nan")})
    with pytest.raises(BadMessage, match=r"a step is \[1\.0\]"):
        RateSteps.from_data({"steps": [[1.0]]})


def test_the_master_ignores_a_message_that_is_not_a_batch_and_says_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A stray or other-version client on the master's port: its messages are left out with one
    line, and the batches of the real workers still count (before, ``data.get`` on a string
    raised inside Locust's message loop)."""
    delivered: list[object] = []
    inbox = Inbox(delivered.append)
    with caplog.at_level(logging.WARNING):
        assert inbox.handle("stray", "hello") is None
        assert inbox.handle("stray", ["not", "a", "batch"]) is None
        applied = inbox.handle("w1", RecordBatch(seq=1, rows=[{"request_id": "a"}], in_flight=1).to_data())
    assert applied is not None and applied.seq == 1
    assert delivered == [{"request_id": "a", "worker": "w1"}]
    said = [r.getMessage() for r in caplog.records if "not a batch of records" in r.getMessage()]
    assert len(said) == 1 and "stray" in said[0]
    assert inbox.in_flight == {"w1": 1}
