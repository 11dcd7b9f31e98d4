"""Shipping request records from workers to the master over Locust's own channel.

Workers do not aggregate: they ship the records themselves (their JSONL form) in a
registered custom message every :data:`SHIP_INTERVAL` seconds and once more, marked
final, when their test stops. The master writes them to the one ``requests.jsonl`` and
feeds its live aggregates, so its summary is exactly what one process would compute
from the same records.

Each batch carries ``(worker id, sequence number)``; the master applies a given pair at
most once, so a resent batch never double counts. A worker killed with SIGKILL loses at
most the records of its last interval (1 s by default) plus its requests in flight.

Each batch also carries the worker's health intervals closed since the last one
(:mod:`llm_locust.client.health`: CPU and event-loop lag per second); the master keeps them
per worker (:meth:`Inbox.health_intervals`) for the saturation verdicts and hands each on
as it arrives (``health_sink``: the results folder's ``health.jsonl``).

Each batch is stamped with the time the worker sent it; the master measures how late it
applies them (:class:`~llm_locust.runtime.ingest.IngestWatch`: its lag, the rows behind,
one warning when it cannot keep up).

The live view's second tier (:mod:`llm_locust.live.gap_counts`): the outbox sends each row's
ITL gaps as their JSON text and counts them into the batch's
:class:`~llm_locust.live.gap_counts.GapCounts` as it takes the row (in the event loop's idle
time, :mod:`llm_locust.runtime.fold`); the inbox hands the counts to the live aggregates and each
row's text on as :class:`~llm_locust.record.RawJson`, written as it came. A master that needs
the values (``gap_edges`` says ``None``: a capacity search, an SLO line on ITL) or gets counts
over other edges decodes the text into the row's list as before: the rows are the same either way.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import cast

import gevent
import orjson

from llm_locust.client import health
from llm_locust.client.health import HealthInterval
from llm_locust.config.jsontypes import JsonObject, JsonValue
from llm_locust.live.gap_counts import GapCounts, gap_edges
from llm_locust.record import RawJson
from llm_locust.runtime.ingest import IngestWatch
from llm_locust.runtime.messages import RECORDS, BadMessage, RecordBatch

__all__ = ["MESSAGE_TYPE", "SHIP_INTERVAL", "Inbox", "Outbox"]

MESSAGE_TYPE = RECORDS  # the batches' message kind (:class:`~llm_locust.runtime.messages.RecordBatch`)
SHIP_INTERVAL = 1.0

log = logging.getLogger(__name__)


@dataclass
class Outbox:
    """Worker side: buffer finished records, ship them in numbered batches."""

    send: Callable[[str, object], None]  # runner.send_message
    interval: float = SHIP_INTERVAL
    in_flight: Callable[[], int] = lambda: 0
    intervals: Callable[[], list[HealthInterval]] = lambda: health.monitor().take_intervals()
    oldest: Callable[[], float | None] = lambda: None  # send time of the oldest request in flight
    #: the ``le`` edges rows' gaps are counted over for the master (``None``: it needs the values)
    gap_edges: Callable[[], tuple[float, ...] | None] = lambda: gap_edges(None, searching=False)
    _rows: list[JsonObject] = field(default_factory=list)
    _gaps: GapCounts | None = None  # this batch's, once its first row is in (if counted)
    _counting: bool | None = None  # whether this batch counts (asked at its first row)
    _seq: int = 0
    _greenlet: gevent.Greenlet | None = None

    def add(self, row: JsonObject) -> None:
        """A finished request's row: its gaps counted (if the batch counts them) and sent as their
        JSON text (bytes: msgpack's bin), the rest as it is."""
        itl = row.get("itl")
        if isinstance(itl, list):
            if self._counting is None:
                edges = self.gap_edges()
                self._counting = edges is not None
                self._gaps = None if edges is None else GapCounts(edges)
            if self._gaps is not None:
                self._gaps.add(row)
            row["itl"] = cast(JsonValue, orjson.dumps(itl))  # bytes on the wire
        self._rows.append(row)

    def start(self) -> None:
        if self._greenlet is None:
            self._greenlet = gevent.spawn(self._loop)

    def stop(self) -> None:
        """Ship what is left, marked final (called from the worker's ``test_stop``)."""
        if self._greenlet is not None:
            self._greenlet.kill(block=False)
            self._greenlet = None
        try:
            self.flush(final=True)
        except Exception:  # the master is gone: nothing can take the rows any more
            log.exception("llm-locust: shipping the final records to the master failed")

    def flush(self, final: bool = False) -> None:
        intervals = self.intervals()
        if not self._rows and not intervals and not final:  # a heartbeat: the in-flight count
            self.send(MESSAGE_TYPE, self._batch(None).to_data())
            return
        rows, self._rows = self._rows, []
        gaps, self._gaps, self._counting = self._gaps, None, None
        self._seq += 1
        self.send(MESSAGE_TYPE, self._batch(self._seq, rows, final, intervals, gaps).to_data())

    def _batch(
        self,
        seq: int | None,
        rows: list[JsonObject] | None = None,
        final: bool = False,
        intervals: list[HealthInterval] | None = None,
        gaps: GapCounts | None = None,
    ) -> RecordBatch:
        """The batch with what is in flight, and since when (a capacity search waits for a
        step's requests to finish)."""
        return RecordBatch(
            seq=seq,
            rows=rows or [],
            final=final,
            health=intervals or [],
            in_flight=self.in_flight(),
            oldest_in_flight=self.oldest(),
            sent_at=time.time(),
            gaps=gaps,
        )

    def _loop(self) -> None:
        while True:
            gevent.sleep(self.interval)
            try:
                self.flush()
            except Exception:  # a lost connection: keep the rows for the next try
                log.exception("llm-locust: shipping records to the master failed; will retry")


@dataclass
class Inbox:
    """Master side: apply each worker batch once, track in-flight and final batches."""

    deliver: Callable[[JsonObject], None]
    _applied: dict[str, set[int]] = field(default_factory=dict)
    in_flight: dict[str, int] = field(default_factory=dict)
    finals: set[str] = field(default_factory=set)
    received: int = 0
    health: dict[str, list[HealthInterval]] = field(default_factory=dict)
    #: per worker: (when its last batch was sent, send time of its oldest request in flight)
    reports: dict[str, tuple[float, float | None]] = field(default_factory=dict)
    #: each health interval as it arrives, marked with its worker (the results' health.jsonl)
    health_sink: Callable[[Mapping[str, float | str]], None] = lambda interval: None
    ingest: IngestWatch = field(default_factory=IngestWatch)
    #: the ITL ``le`` edges this master's live view counts over, or ``None``: it needs each row's
    #: gaps as values (they are decoded); a batch's counts over these edges go to ``deliver_gaps``
    gap_edges: Callable[[], tuple[float, ...] | None] = lambda: None
    deliver_gaps: Callable[[GapCounts], None] = lambda counts: None
    _refused: set[str] = field(default_factory=set)  # workers whose message was not a batch

    def handle(self, worker: str, data: object) -> RecordBatch | None:
        """Apply one batch (a :class:`RecordBatch`'s data) and return it; ``None`` for a
        duplicate that was ignored (its stale in-flight count too) and for a message that is not
        a batch (said in the log, once per worker)."""
        try:
            batch = RecordBatch.from_data(data)
        except BadMessage as e:
            if worker not in self._refused:
                self._refused.add(worker)
                log.warning("llm-locust: a message from %s is not a batch of records, ignored: %s", worker, e)
            return None
        if batch.seq is not None:
            seen = self._applied.setdefault(worker, set())
            if batch.seq in seen:
                return None
            seen.add(batch.seq)
        self.in_flight[worker] = batch.in_flight
        if batch.sent_at is not None:
            self.reports[worker] = (batch.sent_at, batch.oldest_in_flight)
        warning = self.ingest.observe(worker, batch.sent_at, len(batch.rows), time.time())
        if warning is not None:
            log.warning("llm-locust: %s", warning)
        counted = batch.gaps is not None and batch.gaps.edges == self.gap_edges()
        for row in batch.rows:
            if row.get("worker") is None:
                row["worker"] = worker
            itl = row.get("itl")
            if isinstance(itl, bytes):  # counted in the batch's gaps: written as it came
                row["itl"] = cast(JsonValue, RawJson(itl)) if counted else orjson.loads(itl)
            self.deliver(row)
            self.received += 1
        if counted:
            assert batch.gaps is not None
            self.deliver_gaps(batch.gaps)
        if batch.health:
            self.health.setdefault(worker, []).extend(batch.health)
            for interval in batch.health:
                self.health_sink({**interval, "worker": worker})
        if batch.final:
            self.finals.add(worker)
            self.in_flight[worker] = 0
        return batch

    def reset(self) -> None:
        """A new test: forget finals and in-flight counts (sequence numbers stay)."""
        self.finals.clear()
        self.in_flight.clear()
        self.reports.clear()
        self.ingest.reset()

    def forget(self, worker: str) -> None:
        """A worker that quit or went missing has nothing in flight any more."""
        self.in_flight.pop(worker, None)

    def total_in_flight(self) -> int:
        return sum(self.in_flight.values())

    def health_intervals(self, start: float | None = None) -> list[Mapping[str, float | str]]:
        """Every worker's health intervals (those ending after ``start``, if given), each
        marked with its worker."""
        return [
            {**i, "worker": worker}
            for worker, own in self.health.items()
            for i in (own if start is None else health.since(own, start))
        ]

    def in_flight_before(self, when: float, workers: Iterable[str]) -> int | None:
        """Requests sent before ``when`` that ``workers`` still had in flight (an upper bound: a
        worker's whole in-flight count once its oldest predates ``when``); ``None`` until every
        worker has reported after ``when`` (the records of its report are applied with it)."""
        total = 0
        for worker in workers:
            report = self.reports.get(worker)
            if report is None or report[0] <= when:
                return None
            oldest = report[1]
            if self.in_flight.get(worker, 0) and oldest is not None and oldest < when:
                total += self.in_flight[worker]
        return total
