"""Which records a statistic covers: the one inclusion rule of the results side.

Every number of a run (the summary and its stages, a capacity search's steps, the time windows,
the replicas, visible TTFT and cache hits, the report's charts, ``/llm``, the exporter) counts
or times the records this module selects, from what each record carries (:data:`FIELDS`: its
outcome, its ``warmup``, ``rampup`` and ``outside`` marks, its ``client_stall_s``, its stage;
the columns of :mod:`llm_locust.results.columns` and :mod:`llm_locust.results.timeline` hold
them as arrays):

=================  =========================================================================
condition          a record meets it when
=================  =========================================================================
``COMPLETE``       it ended (not ``incomplete``: in flight when the load stopped)
``IN_WINDOW``      it was sent in its stage's measured window (not ``warmup``: the first
                   ``--warmup`` seconds of a stage; not ``rampup``: before its stage reached
                   its user count; not ``outside``: a staged run's record sent in no stage's
                   window, e.g. while a search step settled). A record's stage is set when
                   it is sent; a run without stages has one window, the whole test.
``NOT_CANCELLED``  the client did not abandon it on purpose (``--cancel``)
``OK``             it succeeded
``UNSTALLED``      the load generator did not stall inside it (``client_stall_s`` is 0 or
                   absent, :mod:`llm_locust.client.health`): its times are the server's
=================  =========================================================================

A statistic covers the records that meet every condition of its :class:`Coverage`
(:data:`RULE`):

- ``REQUESTS``: request counts by outcome, and the span the rates divide by: ``COMPLETE``,
  ``IN_WINDOW`` (a cancelled request is counted, as cancelled, not as a failure);
- ``SUCCESS``: the success ratio of an SLO: also ``NOT_CANCELLED`` (neither served nor failed);
- ``COMPLETED``: tokens, throughputs, reasoning and prefix-cache counts, goodput (a request
  meeting every latency line on its own times: a stalled one's hold the client's pause, so it
  can only be counted as not good): also ``OK``;
- ``LATENCY``: every latency statistic (TTFT, visible TTFT, cache hit / miss TTFT, burst
  TTFT, TPOT, ITL, E2E, the SLO's latency lines): also ``UNSTALLED``;
- ``SERIES``: a statistic of time (a window of the run, the live view, the exporter's
  counters, the summary's ``records``): every record that ended in it, its latencies when
  ``OK`` and ``UNSTALLED`` (``SERIES_LATENCY``); the warm-up is part of the series;
- ``IN_FLIGHT``: concurrency and Little's law: every record (each was in flight).

Client-stalled requests, deliberately: the client, not the server, delayed them, so their
latencies are left out of every latency statistic; they are still requests the server
served (counted, tokens counted, ``client_stalled`` says how many). Whether a step or stage
with many of them can be judged at all is a validity question
(:mod:`llm_locust.results.validity`, :mod:`llm_locust.results.saturation`).

A record left out of a stage's statistics is counted under exactly one :class:`Exclusion`
(first match: incomplete, warm-up, ramp-up, outside), the summary's ``excluded``.

Rates divide by the *measured span* (:func:`measured_span`): the seconds of the measured
windows (a run without stages: the test, start to stop), so a warm-up neither adds its
requests nor its time.

The rule is evaluated two ways, from the same table: on one row (:func:`row_covers`, the live
aggregate, the replicas) and on columns (:func:`covered`, everything else); a test checks they
agree. Pure module: numpy, no Locust, no network.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum, StrEnum
from typing import Any, Protocol

import numpy as np

from llm_locust.record import CANCELLED, INCOMPLETE, OK

__all__ = [
    "EXCLUSIONS",
    "FIELDS",
    "RULE",
    "Condition",
    "Coverage",
    "Exclusion",
    "Marks",
    "covered",
    "exclusion",
    "measured_span",
    "row_covers",
]

#: The record fields the rule reads (a record cut for later judging must keep them).
FIELDS = ("outcome", "warmup", "rampup", "outside", "client_stall_s", "stage")


class Exclusion(StrEnum):
    """Why a record is left out of its stage's statistics (first match, in this order)."""

    INCOMPLETE = "incomplete"
    WARMUP = "warmup"
    RAMPUP = "rampup"
    OUTSIDE = "outside"


#: The exclusion reasons' names, in order of precedence.
EXCLUSIONS = tuple(e.value for e in Exclusion)


class Condition(Enum):
    COMPLETE = "complete"
    IN_WINDOW = "in_window"
    NOT_CANCELLED = "not_cancelled"
    OK = "ok"
    UNSTALLED = "unstalled"


class Coverage(Enum):
    REQUESTS = "requests"
    SUCCESS = "success"
    COMPLETED = "completed"
    LATENCY = "latency"
    SERIES = "series"
    SERIES_LATENCY = "series_latency"
    IN_FLIGHT = "in_flight"


_C = Condition
#: The rule: the conditions a record meets to be covered by each kind of statistic.
RULE: Mapping[Coverage, frozenset[Condition]] = {
    Coverage.REQUESTS: frozenset({_C.COMPLETE, _C.IN_WINDOW}),
    Coverage.SUCCESS: frozenset({_C.COMPLETE, _C.IN_WINDOW, _C.NOT_CANCELLED}),
    Coverage.COMPLETED: frozenset({_C.COMPLETE, _C.IN_WINDOW, _C.OK}),
    Coverage.LATENCY: frozenset({_C.COMPLETE, _C.IN_WINDOW, _C.OK, _C.UNSTALLED}),
    Coverage.SERIES: frozenset(),
    Coverage.SERIES_LATENCY: frozenset({_C.OK, _C.UNSTALLED}),
    Coverage.IN_FLIGHT: frozenset(),
}


class Marks(Protocol):
    """Columns holding the rule's facts, one boolean per record."""

    ok: np.ndarray
    incomplete: np.ndarray
    cancelled: np.ndarray
    warmup: np.ndarray
    rampup: np.ndarray
    outside: np.ndarray
    stalled: np.ndarray


def _column(marks: Marks, condition: Condition) -> np.ndarray:
    if condition is _C.COMPLETE:
        return ~marks.incomplete
    if condition is _C.IN_WINDOW:
        inside: np.ndarray = ~(marks.warmup | marks.rampup | marks.outside)
        return inside
    if condition is _C.NOT_CANCELLED:
        return ~marks.cancelled
    if condition is _C.OK:
        return marks.ok
    return ~marks.stalled


def _row(row: Mapping[str, Any], condition: Condition) -> bool:
    if condition is _C.COMPLETE:
        return row.get("outcome") != INCOMPLETE
    if condition is _C.IN_WINDOW:
        return not (row.get("warmup") or row.get("rampup") or row.get("outside"))
    if condition is _C.NOT_CANCELLED:
        return row.get("outcome") != CANCELLED
    if condition is _C.OK:
        return row.get("outcome") == OK
    return not row.get("client_stall_s")


def covered(coverage: Coverage, marks: Marks, mask: np.ndarray | None = None) -> np.ndarray:
    """The records of ``marks`` (within ``mask``, when given) that ``coverage`` covers."""
    out = np.ones(marks.ok.shape, dtype=bool) if mask is None else mask.copy()
    for condition in RULE[coverage]:
        out &= _column(marks, condition)
    return out


def row_covers(coverage: Coverage, row: Mapping[str, Any]) -> bool:
    """Does ``coverage`` cover the record ``row`` (its ``requests.jsonl`` form)?"""
    return all(_row(row, condition) for condition in RULE[coverage])


def exclusion(row: Mapping[str, Any]) -> Exclusion | None:
    """Why ``row`` is left out of its stage's statistics, or ``None``: it is measured."""
    if not _row(row, _C.COMPLETE):
        return Exclusion.INCOMPLETE
    if row.get("warmup"):
        return Exclusion.WARMUP
    if row.get("rampup"):
        return Exclusion.RAMPUP
    if row.get("outside"):
        return Exclusion.OUTSIDE
    return None


def measured_span(windows: Sequence[tuple[float, float]] | None, start: float, stop: float) -> dict[str, Any]:
    """The time the run's rates divide by: the measured ``windows`` (``(start, end)`` wall clock,
    a staged run's stages'), or, without stages (``None``), the test from ``start`` to ``stop``.

    ``seconds`` is the windows' total; ``excluded_s`` the rest of the test (warm-ups, ramp-ups,
    a search step's settling, the time before the first window and after the last)."""
    test_s = max(stop - start, 0.0)
    if windows is None:
        spans = [(start, stop)]
        what = "nothing: a run without stages is measured from its start to its stop"
    else:
        spans = [(a, b) for a, b in windows if b > a]
        what = "each stage's warm-up and ramp-up, and any time outside the stages' measured windows"
    seconds = sum(b - a for a, b in spans)
    return {
        "start": min((a for a, _ in spans), default=start),
        "end": max((b for _, b in spans), default=start),
        "seconds": seconds,
        "windows": len(spans),
        "test_seconds": test_s,
        "excluded_s": max(test_s - seconds, 0.0),
        "excluded": what,
    }
