"""The record bus: every finished request's row goes to the sinks that subscribed, once.

Locust's events are the seam between Locust and this package; inside it the same idea
carries the records. A row (:meth:`~llm_locust.record.RequestRecord.to_json`) is published
once, by the process that owns the results (the local runner, or the master for its
workers' rows); the sinks subscribed at ``init``, in order:

- the results writer (``requests.jsonl``, flushed per record);
- the live aggregate (Prometheus exporter, web UI);
- on a worker, the outbox to the master instead of both.

A master's workers count their rows' ITL gaps for the live view themselves
(:mod:`llm_locust.live.gap_counts`); each batch's counts go to the sinks subscribed to them
(:meth:`RecordBus.subscribe_gaps`: the live aggregates) right after the batch's rows.

The bus is open while a test's results are: a row published while it is closed (after the
summary was written) is dropped and counted, never written half-way.

:class:`Signal` is the bus's other half: ``finalized(summary, directory)`` fires once per
test when its ``summary.json`` is written, so outputs that need the end (``metrics_final.prom``,
the web UI's result, a report) listen instead of polling.

Pure module: no Locust, no network.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from llm_locust.config.jsontypes import JsonObject
from llm_locust.live.gap_counts import GapCounts
from llm_locust.results.summary_model import RunSummary

__all__ = ["Finalized", "RecordBus", "Signal", "Sink"]

log = logging.getLogger("llm_locust")
Sink = Callable[[JsonObject], None]
F = TypeVar("F", bound=Callable[..., object])


class RecordBus:
    """Rows in, to every subscribed sink, in subscription order."""

    def __init__(self) -> None:
        self._sinks: list[Sink] = []
        self._gap_sinks: list[Callable[[GapCounts], None]] = []
        self._open = False
        self.published = 0
        self.late = 0  # rows that arrived while the bus was closed

    def subscribe(self, sink: Sink) -> None:
        self._sinks.append(sink)

    def subscribe_gaps(self, sink: Callable[[GapCounts], None]) -> None:
        """``sink`` takes each batch of the workers' rows' gaps, counted (:meth:`publish_gaps`)."""
        self._gap_sinks.append(sink)

    def open(self) -> None:
        self._open = True

    def close(self) -> None:
        self._open = False

    @property
    def is_open(self) -> bool:
        return self._open

    def publish(self, row: JsonObject) -> None:
        if not self._open:
            self.late += 1
            if self.late == 1:
                log.warning("llm-locust: a record arrived after the results were closed; dropped (counted)")
            return
        self.published += 1
        for sink in self._sinks:
            sink(row)

    def publish_gaps(self, counts: GapCounts) -> None:
        """A batch's ITL gaps, counted by its worker, after the batch's rows (dropped, as they
        were, while the bus is closed)."""
        if self._open:
            for sink in self._gap_sinks:
                sink(counts)


class Signal(Generic[F]):
    """A list of listeners called in order; one that raises is logged and the rest still run."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._listeners: list[F] = []

    def subscribe(self, listener: F) -> F:
        self._listeners.append(listener)
        return listener

    def fire(self, *args: object) -> None:
        for listener in list(self._listeners):
            try:
                listener(*args)
            except Exception:  # an output must never lose the run
                log.exception("llm-locust: a %s listener failed", self.name)


#: ``finalized(summary, directory)``: a test's summary is written (``directory`` is ``None``
#: without ``--results-dir``).
Finalized = Signal[Callable[[RunSummary, Path | None], object]]  # what a listener returns is dropped
