"""Worker -> master with the live view's second tier (issue 29 §3), in process through Locust's own
message encoding: the worker counts its rows' gaps and sends them as JSON text; the master
writes each row byte for byte as it would have written the row itself, and its live aggregate
ends up with the same counts. A master that needs the values gets them back as the row's list."""

from __future__ import annotations

from locust.rpc import Message

import json
import random
from pathlib import Path
from typing import Any

import pytest

from llm_locust.live.aggregate import LATENCIES, LiveAggregate
from llm_locust.live.gap_counts import gap_edges
from llm_locust.record import RawJson, RequestRecord, json_line
from llm_locust.results.histogram import same_counts
from llm_locust.results.writer import ResultsWriter
from llm_locust.runtime.bus import RecordBus
from llm_locust.runtime.distributed import Inbox, Outbox
from llm_locust.runtime.messages import BadMessage, RecordBatch


def _rows(n: int, tokens: int = 300, seed: int = 2) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows = []
    for k in range(n):
        record = RequestRecord(request_id=f"w-{k}", wall_start=1e9 + k, t_sent=100.0, status=200)
        t = 100.0 + rng.uniform(0.05, 0.4)
        for _ in range(tokens if k % 7 else 1):  # a one-token reply: no gaps
            record.chunk_times.append(t)
            t += rng.choice([rng.uniform(0.001, 0.06), 0.025, 0.05])  # on the exporter's edges too
        record.t_first_token, record.t_end, record.completion_tokens = record.chunk_times[0], t, tokens
        if k % 11 == 0:
            record.error_type = "timeout"
        rows.append(record.to_json())
    return rows


def _master(
    tmp_path: Path, edges: tuple[float, ...] | None
) -> tuple[Inbox, RecordBus, ResultsWriter, LiveAggregate]:
    bus, writer, agg = RecordBus(), ResultsWriter(tmp_path), LiveAggregate()
    bus.subscribe(writer.write)
    bus.subscribe(agg.add)
    bus.subscribe_gaps(agg.add_counts)
    bus.open()
    inbox = Inbox(bus.publish, gap_edges=lambda: edges, deliver_gaps=bus.publish_gaps)
    return inbox, bus, writer, agg


def _ship(rows: list[dict[str, Any]], inbox: Inbox, per_batch: int = 20) -> list[int]:
    """The rows through a worker's outbox and Locust's msgpack encoding; the batches' sizes in bytes."""
    sent: list[bytes] = []
    outbox = Outbox(
        lambda kind, data: sent.append(Message(kind, data, "w").serialize()), intervals=lambda: []
    )
    for start in range(0, len(rows), per_batch):
        for row in rows[start : start + per_batch]:
            outbox.add(dict(row))
        outbox.flush()
    for raw in sent:
        message = Message.unserialize(raw)
        assert inbox.handle(message.node_id, message.data) is not None
    return [len(raw) for raw in sent]


def _expected(rows: list[dict[str, Any]]) -> list[str]:
    return [json_line({**row, "worker": "w"}) for row in rows]


def test_the_master_writes_the_workers_rows_byte_for_byte_and_merges_their_counts(tmp_path: Path) -> None:
    rows = _rows(120)
    inbox, bus, writer, agg = _master(tmp_path, gap_edges(None, searching=False))
    seen: list[object] = []
    bus.subscribe(lambda row: seen.append(row["itl"]))
    _ship(rows, inbox)
    writer.close()
    assert (tmp_path / "requests.jsonl").read_text().splitlines(keepends=True) == _expected(rows)
    assert all(isinstance(itl, RawJson) for itl in seen)  # written as they came
    direct = LiveAggregate()
    for row in rows:
        direct.add({**row, "worker": "w"})
    for name in LATENCIES:
        assert same_counts(agg.overall[name], direct.overall[name]) and same_counts(
            agg.buckets[name], direct.buckets[name]
        ), name
    assert agg.overall["itl"].count == sum(len(r["itl"]) for r in rows if r["outcome"] == "ok") > 0


@pytest.mark.parametrize("edges", [None, (0.01, 0.5)])
def test_a_master_that_needs_the_values_or_counts_over_other_edges_gets_the_lists(
    tmp_path: Path, edges: tuple[float, ...] | None
) -> None:
    rows = _rows(45)
    inbox, bus, writer, agg = _master(tmp_path, edges)  # None: a search or an ITL SLO line
    seen: list[Any] = []
    bus.subscribe(lambda row: seen.append(row["itl"]))
    _ship(rows, inbox)
    writer.close()
    assert seen == [row["itl"] for row in rows]  # the values, as the worker had them
    assert (tmp_path / "requests.jsonl").read_text().splitlines(keepends=True) == _expected(rows)
    assert agg.overall["itl"].count == sum(len(r["itl"]) for r in rows if r["outcome"] == "ok")


def test_the_wire_is_no_larger(tmp_path: Path) -> None:
    rows = _rows(40, tokens=1024)
    inbox, *_ = _master(tmp_path, gap_edges(None, searching=False))
    now = sum(_ship(rows, inbox))
    before = sum(
        len(
            Message(
                "llm_locust_records", RecordBatch(seq=1, rows=rows[k : k + 20]).to_data(), "w"
            ).serialize()
        )
        for k in range(0, 40, 20)
    )
    assert now < before * 1.05  # the gaps' JSON text is about as long as their msgpack floats


def test_a_batch_whose_gaps_text_is_not_one_json_list_is_refused() -> None:
    for itl in (b"[0.1]\n[0.2]", b"0.1,0.2", b"[0.1"):
        with pytest.raises(BadMessage, match="not a JSON list on one line"):
            RecordBatch.from_data({"seq": 1, "rows": [{"request_id": "x", "itl": itl}]})
    with pytest.raises(BadMessage, match="gap counts"):
        RecordBatch.from_data({"seq": 1, "rows": [], "gaps": {"edges": [0.1]}})


def test_a_rows_json_text_goes_into_its_line_as_it_is() -> None:
    row = {"request_id": "x", "itl": [0.001, 2e-6, 0.5], "big": 1}
    raw = {**row, "itl": RawJson(json.dumps(row["itl"]).encode())}
    assert json.loads(json_line(raw)) == row
    huge = {**raw, "big": 2**70}  # orjson refuses it: the json module writes the line, the text read back
    assert json.loads(json_line(huge)) == {**row, "big": 2**70}


def test_counts_after_the_results_closed_are_dropped_with_their_rows(tmp_path: Path) -> None:
    inbox, bus, _, agg = _master(tmp_path, gap_edges(None, searching=False))
    bus.close()
    _ship(_rows(10), inbox)
    assert bus.late == 10 and agg.overall["itl"].count == 0 and agg.completed == 0
