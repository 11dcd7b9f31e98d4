"""What llm-locust's processes say to each other, typed: one class per custom message.

Locust's channel carries a message as a kind (a string) and ``data`` (msgpack of plain JSON
values). Each class here is one kind: :meth:`to_data` is what goes on the wire,
:meth:`from_data` reads it back and checks its shape, so a node never reads a message by string
keys and a malformed one (another version of llm-locust, a stray client on the master's port) is
refused in one place (:class:`BadMessage`) instead of failing somewhere behind it.

- :class:`RecordBatch` (worker -> master, :data:`RECORDS`): a worker's finished records (each a
  row of ``requests.jsonl``, :meth:`llm_locust.record.RequestRecord.to_json`), numbered so the
  master applies a batch once, with its in-flight count, the send time of its oldest request in
  flight and its health intervals (:mod:`llm_locust.runtime.distributed`); each row's ITL gaps as
  their JSON text (bytes) and the batch's gaps counted for the live view
  (:class:`~llm_locust.live.gap_counts.GapCounts`), when the worker counted them;
- :class:`PlanStart` (master -> workers, :data:`PLAN`): the plan's start, the worker count and where
  the schedule ends (a worker's own plan has no ``-t``: Locust passes workers only its own options);
- :class:`RateSteps` (master -> workers, :data:`SEARCH`): a rate search's steps so far;
- :class:`StoppedEarly` (worker -> master, :data:`STOPPED`): a worker stopped its load on its own;
- :class:`StopUsers` (master -> workers, :data:`STOP`): stop the users, draining or now.

Pure module: no Locust, no gevent, no network.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from llm_locust.config.jsontypes import JsonObject, JsonValue
from llm_locust.live.gap_counts import GapCounts

__all__ = [
    "PLAN",
    "RECORDS",
    "SEARCH",
    "STOP",
    "STOPPED",
    "BadMessage",
    "PlanStart",
    "RateSteps",
    "RecordBatch",
    "StopUsers",
    "StoppedEarly",
]

RECORDS = "llm_locust_records"
PLAN = "llm_locust_plan"
SEARCH = "llm_locust_search"
STOPPED = "llm_locust_stopped_early"
STOP = "llm_locust_stop"


class BadMessage(ValueError):
    """A message whose data does not have its kind's shape."""


def _fields(kind: str, data: object) -> Mapping[str, object]:
    if not isinstance(data, Mapping):
        raise BadMessage(f"{kind}: data is {type(data).__name__}, not an object")
    return data


def _number(kind: str, data: Mapping[str, object], key: str, default: float | None = None) -> float | None:
    value = data.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadMessage(f"{kind}: {key} is {value!r}, not a number")
    return float(value)


def _required(kind: str, data: Mapping[str, object], key: str) -> float:
    value = _number(kind, data, key)
    if value is None:
        raise BadMessage(f"{kind}: {key} is missing")
    return value


@dataclass(frozen=True)
class RecordBatch:
    """A worker's records since its last batch. ``seq`` is ``None`` for a heartbeat that carries
    only the in-flight count (nothing new to apply); ``final`` marks the last batch of a test."""

    seq: int | None
    rows: list[JsonObject] = field(default_factory=list)
    final: bool = False
    health: list[dict[str, float]] = field(default_factory=list)
    in_flight: int = 0
    oldest_in_flight: float | None = None  # send time (Unix) of its oldest request in flight
    sent_at: float | None = None  # when the worker sent it (Unix): the master's ingest lag
    gaps: GapCounts | None = None  # its rows' ITL gaps counted for the live view, if they were

    def to_data(self) -> JsonObject:
        rows: list[JsonValue] = list(self.rows)
        data: JsonObject = {"seq": self.seq, "rows": rows, "final": self.final}
        if self.health:  # a heartbeat carries none (1 a second from every worker)
            data["health"] = [dict(interval) for interval in self.health]
        if self.gaps is not None:
            data["gaps"] = self.gaps.to_data()
        data.update(in_flight=self.in_flight, oldest_in_flight=self.oldest_in_flight, sent_at=self.sent_at)
        return data

    @classmethod
    def from_data(cls, data: object) -> RecordBatch:
        fields = _fields(RECORDS, data)
        seq = _number(RECORDS, fields, "seq")
        rows = fields.get("rows") or []
        if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
            raise BadMessage(f"{RECORDS}: rows is not a list of objects")
        health = fields.get("health") or []
        if not isinstance(health, list) or not all(isinstance(i, dict) for i in health):
            raise BadMessage(f"{RECORDS}: health is not a list of objects")
        try:
            gaps = None if fields.get("gaps") is None else GapCounts.from_data(fields["gaps"])
        except ValueError as exc:
            raise BadMessage(f"{RECORDS}: {exc}") from None
        for row in rows:  # gaps as JSON text are written as they came: one line, a list
            itl = row.get("itl")
            if isinstance(itl, bytes) and not (itl[:1] == b"[" and itl[-1:] == b"]" and b"\n" not in itl):
                raise BadMessage(f"{RECORDS}: a row's itl is bytes but not a JSON list on one line")
        return cls(
            seq=None if seq is None else int(seq),
            rows=rows,
            final=bool(fields.get("final")),
            health=health,
            in_flight=int(_number(RECORDS, fields, "in_flight", 0) or 0),
            oldest_in_flight=_number(RECORDS, fields, "oldest_in_flight"),
            sent_at=_number(RECORDS, fields, "sent_at"),
            gaps=gaps,
        )


@dataclass(frozen=True)
class PlanStart:
    """The next test's plan start (Unix time), how many workers share its load, and where its
    schedule ends (seconds from ``t0``, the master's plan's; ``None``: it has no end of its own)."""

    t0: float
    workers: int
    end: float | None = None

    def to_data(self) -> JsonObject:
        return {"t0": self.t0, "workers": self.workers, "end": self.end}

    @classmethod
    def from_data(cls, data: object) -> PlanStart:
        fields = _fields(PLAN, data)
        end = _number(PLAN, fields, "end")
        if end is not None and not end >= 0:  # NaN too
            raise BadMessage(f"{PLAN}: end is {end!r}, not a time from t0")
        return cls(t0=_required(PLAN, fields, "t0"), workers=int(_required(PLAN, fields, "workers")), end=end)


@dataclass(frozen=True)
class RateSteps:
    """A rate search's steps so far (each ``(start, rate)``), and when it stopped (``None``: not)."""

    steps: list[tuple[float, float]]
    stopped_at: float | None = None

    def to_data(self) -> JsonObject:
        steps: list[JsonValue] = [[start, rate] for start, rate in self.steps]
        return {"steps": steps, "stopped_at": self.stopped_at}

    @classmethod
    def from_data(cls, data: object) -> RateSteps:
        fields = _fields(SEARCH, data)
        raw = fields.get("steps") or []
        if not isinstance(raw, list):
            raise BadMessage(f"{SEARCH}: steps is not a list")
        steps: list[tuple[float, float]] = []
        for step in raw:
            if not isinstance(step, Sequence) or len(step) != 2:
                raise BadMessage(f"{SEARCH}: a step is {step!r}, not [start, rate]")
            start, rate = (_required(SEARCH, {"step": v}, "step") for v in step)
            steps.append((start, rate))
        return cls(steps=steps, stopped_at=_number(SEARCH, fields, "stopped_at"))


@dataclass(frozen=True)
class StoppedEarly:
    """A worker stopped its load on its own at ``at`` (Unix time), and why."""

    at: float
    why: str

    def to_data(self) -> JsonObject:
        return {"at": self.at, "why": self.why}

    @classmethod
    def from_data(cls, data: object) -> StoppedEarly:
        fields = _fields(STOPPED, data)
        return cls(at=_required(STOPPED, fields, "at"), why=str(fields.get("why") or ""))


@dataclass(frozen=True)
class StopUsers:
    """Stop the users: ``now`` kills them (their streams recorded incomplete), else they drain."""

    now: bool = False

    def to_data(self) -> JsonObject:
        return {"now": self.now}

    @classmethod
    def from_data(cls, data: object) -> StopUsers:
        return cls(now=bool(data.get("now")) if isinstance(data, Mapping) else False)
