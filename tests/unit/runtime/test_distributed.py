"""Worker -> master shipping without sockets: the outbox's numbered batches, the inbox's once-only rule."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from llm_locust.runtime.distributed import MESSAGE_TYPE, Inbox, Outbox


def _pair() -> tuple[Outbox, Inbox, list[dict[str, Any]], list[tuple[str, Any]]]:
    delivered: list[dict[str, Any]] = []
    sent: list[tuple[str, Any]] = []
    inbox = Inbox(delivered.append)
    in_flight = iter(range(3, 0, -1))
    outbox = Outbox(lambda kind, data: sent.append((kind, data)), in_flight=lambda: next(in_flight, 0))
    return outbox, inbox, delivered, sent


def test_batches_are_numbered_applied_once_and_tagged_with_their_worker() -> None:
    outbox, inbox, delivered, sent = _pair()
    outbox.add({"request_id": "w1-0"})
    outbox.add({"request_id": "w1-1"})
    outbox.flush()
    outbox.flush()  # nothing new: a heartbeat with the in-flight count, no sequence number
    outbox.add({"request_id": "w1-2"})
    outbox.stop()  # the final batch
    assert [kind for kind, _ in sent] == [MESSAGE_TYPE] * 3
    assert [data["seq"] for _, data in sent] == [1, None, 2]
    for _, data in sent:
        assert inbox.handle("w1", data)
    assert not inbox.handle("w1", sent[0][1])  # resent: ignored
    assert [r["request_id"] for r in delivered] == ["w1-0", "w1-1", "w1-2"]
    assert {r["worker"] for r in delivered} == {"w1"} and inbox.received == 3
    assert inbox.finals == {"w1"} and inbox.total_in_flight() == 0  # the final batch leaves none in flight


def test_in_flight_is_tracked_per_worker_and_forgotten_with_it() -> None:
    inbox = Inbox(lambda row: None)
    inbox.handle("a", {"seq": None, "rows": [], "in_flight": 4})
    inbox.handle("b", {"seq": None, "rows": [], "in_flight": 2})
    assert inbox.total_in_flight() == 6
    inbox.forget("a")
    assert inbox.total_in_flight() == 2
    inbox.reset()
    assert inbox.total_in_flight() == 0 and not inbox.finals


def test_a_master_gone_at_the_final_batch_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    def gone(kind: str, data: Any) -> None:
        raise ConnectionError("master gone")

    outbox = Outbox(gone)
    outbox.add({"request_id": "x"})
    with caplog.at_level(logging.ERROR):
        outbox.stop()
    assert "shipping the final records to the master failed" in caplog.text


def test_health_intervals_travel_with_the_records_and_count_once() -> None:
    sent: list[tuple[str, Any]] = []
    pending = [[{"start": 0.0, "end": 1.0, "cpu": 0.5}], [], [{"start": 1.0, "end": 2.0, "cpu": 0.97}]]
    outbox = Outbox(lambda kind, data: sent.append((kind, data)), intervals=lambda: pending.pop(0))
    outbox.add({"request_id": "w-1", "outcome": "ok"})
    outbox.flush()
    outbox.flush()  # nothing new: a heartbeat without a sequence number
    outbox.flush(final=True)
    assert [kind for kind, _ in sent] == [MESSAGE_TYPE] * 3
    assert sent[1][1]["seq"] is None and "health" not in sent[1][1]
    rows: list[dict[str, Any]] = []
    inbox = Inbox(rows.append)
    for _, data in sent:
        inbox.handle("w", data)
    assert not inbox.handle("w", sent[0][1])  # a resent batch: neither rows nor health again
    assert [r["request_id"] for r in rows] == ["w-1"] and rows[0]["worker"] == "w"
    assert inbox.health_intervals() == [
        {"start": 0.0, "end": 1.0, "cpu": 0.5, "worker": "w"},
        {"start": 1.0, "end": 2.0, "cpu": 0.97, "worker": "w"},
    ]
