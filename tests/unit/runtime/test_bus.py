"""The record bus and the finalized signal, in process: no Locust, no sockets."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from llm_locust.runtime.bus import Finalized, RecordBus


def test_rows_reach_every_sink_in_order_only_while_the_bus_is_open(caplog: pytest.LogCaptureFixture) -> None:
    bus, seen = RecordBus(), []
    bus.subscribe(lambda row: seen.append(("writer", row["request_id"])))
    bus.subscribe(lambda row: seen.append(("aggregate", row["request_id"])))
    with caplog.at_level(logging.WARNING, logger="llm_locust"):
        bus.publish({"request_id": "early"})  # before the test's results are open
        bus.open()
        bus.publish({"request_id": "a"})
        bus.close()
        bus.publish({"request_id": "late"})
        bus.publish({"request_id": "later"})
    assert seen == [("writer", "a"), ("aggregate", "a")]
    assert bus.published == 1 and bus.late == 3 and not bus.is_open
    assert caplog.text.count("dropped (counted)") == 1  # said once, counted every time


def test_a_failing_listener_is_logged_and_the_others_still_hear_finalized(
    caplog: pytest.LogCaptureFixture,
) -> None:
    finalized: Finalized = Finalized("finalized")
    heard: list[Any] = []

    def broken(summary: dict[str, Any], directory: Path | None) -> None:
        raise RuntimeError("boom")

    finalized.subscribe(broken)
    finalized.subscribe(lambda summary, directory: heard.append((summary["completed"], directory)))
    with caplog.at_level(logging.ERROR, logger="llm_locust"):
        finalized.fire({"completed": 3}, Path("/r"))
    assert heard == [(3, Path("/r"))]
    assert "a finalized listener failed" in caplog.text and "boom" in caplog.text
