"""Stage plans: a load test as a sequence of fixed-duration steps, plus Little's law.

A capacity test is rarely one load level. ``--ramp 1,5,10,20,50`` steps the number of
concurrent users (closed loop); ``--rate-ramp 1,2,4,8`` steps the request rate (open
loop); ``--matrix`` crosses a user (or rate) ramp with workload shapes so that each
``(input, output)`` cell gets its own capacity ramp. Everything here is pure data: a
Locust ``LoadTestShape`` calls :func:`stage_at` on each tick, and the summary groups
records by ``RequestRecord.stage`` (the stage index).

Each stage starts with ``warmup_s`` seconds whose requests are flagged ``warmup=True``
and left out of the stage's statistics: the queue needs time to fill after a step.

Matrix ordering: the workload cells are the outer loop (``input`` outermost, then
``output``, then ``profile``) and the load level is the inner loop, ascending as given.
So ``users=1,10;input=128,1024`` runs ``(128,1) (128,10) (1024,1) (1024,10)``: a full
capacity ramp per workload, and the "highest passing stage" is found per cell.

Little's law (L = lambda * W) is a consistency check on the measurements: the
time-weighted mean number of requests in flight must equal arrival rate times mean E2E.
Durations are seconds everywhere.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from llm_locust.config.matrix import CELL_KEYS, MatrixSpec, parse_matrix_spec
from llm_locust.config.units import OptionError, parse_duration, parse_levels
from llm_locust.record import RequestRecord

__all__ = [
    "Stage",
    "StagePlan",
    "littles_law",
    "load_matrix_file",
    "parse_duration",
    "parse_matrix",
    "parse_ramp",
    "parse_rate_ramp",
    "stage_at",
    "time_weighted_in_flight",
]


@dataclass(frozen=True)
class Stage:
    """One step of a plan. ``target`` is a user count (``users``) or req/s (``rate``)."""

    index: int
    kind: str
    target: float
    duration_s: float
    start_s: float = 0.0
    spawn_rate: float | None = None
    warmup_s: float = 0.0
    input: str | None = None
    output: str | None = None
    profile: str | None = None
    label: str = ""

    @property
    def end_s(self) -> float:
        return self.start_s + self.duration_s

    @property
    def users(self) -> int | None:
        return int(self.target) if self.kind == "users" else None

    @property
    def rate(self) -> float | None:
        return self.target if self.kind == "rate" else None

    def in_warmup(self, time_in_stage: float) -> bool:
        return time_in_stage < self.warmup_s

    def overrides(self) -> dict[str, str]:
        """The workload settings this stage changes (empty for a plain ramp)."""
        items = {"input": self.input, "output": self.output, "profile": self.profile}
        return {k: v for k, v in items.items() if v is not None}

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "kind": self.kind,
            "target": self.target,
            "start_s": self.start_s,
            "duration_s": self.duration_s,
            "spawn_rate": self.spawn_rate,
            "warmup_s": self.warmup_s,
            "label": self.label,
            **self.overrides(),
        }


@dataclass(frozen=True)
class StagePlan:
    """Contiguous stages: stage ``i`` runs over ``[start_s, start_s + duration_s)``."""

    stages: tuple[Stage, ...]
    _starts: tuple[float, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.stages:
            raise ValueError("a stage plan needs at least one stage")
        object.__setattr__(self, "_starts", tuple(s.start_s for s in self.stages))

    @classmethod
    def build(cls, stages: Iterable[Stage]) -> StagePlan:
        """Renumber ``stages`` and lay them end to end from t=0."""
        out, t = [], 0.0
        for i, st in enumerate(stages):
            out.append(replace(st, index=i, start_s=t))
            t += st.duration_s
        return cls(tuple(out))

    @property
    def total_s(self) -> float:
        return self.stages[-1].end_s

    def __iter__(self) -> Iterator[Stage]:
        return iter(self.stages)

    def __len__(self) -> int:
        return len(self.stages)

    def __getitem__(self, index: int) -> Stage:
        return self.stages[index]

    def to_json(self) -> list[dict[str, Any]]:
        return [s.to_json() for s in self.stages]


# --------------------------------------------------------------------------- parsing


def _as_given(value: str | float | None) -> str | None:
    """A duration as typed, or seconds as ``"10s"`` when it arrives parsed (the configuration's)."""
    return value if value is None or isinstance(value, str) else f"{float(value):g}s"


def _timing(
    step_time: str | float, warmup: str | float | None, spawn_rate: float | None
) -> tuple[float, float, float | None]:
    step_s = parse_duration(step_time, "--step-time")
    if step_s <= 0:
        raise OptionError("--step-time", _as_given(step_time), "must be positive")
    warmup_s = 0.0 if warmup is None else parse_duration(warmup, "--warmup")
    if warmup_s >= step_s:
        raise OptionError("--warmup", _as_given(warmup), f"must be shorter than --step-time ({step_s:g}s)")
    if spawn_rate is not None and (not math.isfinite(spawn_rate) or spawn_rate <= 0):
        raise OptionError("--spawn-rate", spawn_rate, "must be a positive number")
    return step_s, warmup_s, spawn_rate


def _label(kind: str, target: float, cell: dict[str, str]) -> str:
    head = f"users={int(target)}" if kind == "users" else f"rate={target:g}"
    return " ".join([head, *(f"{k}={v}" for k, v in cell.items())])


def _level_stages(
    kind: str,
    levels: Sequence[float],
    step_s: float,
    warmup_s: float,
    spawn_rate: float | None,
    cell: dict[str, str],
) -> list[Stage]:
    """One stage per load level. Default spawn rate: reach each new user count in ~1 s."""
    out, previous = [], 0.0
    for level in levels:
        spawn = spawn_rate
        if kind == "users" and spawn is None:
            spawn = max(1.0, abs(level - previous))
        out.append(
            Stage(
                index=0,
                kind=kind,
                target=level,
                duration_s=step_s,
                spawn_rate=spawn,
                warmup_s=warmup_s,
                input=cell.get("input"),
                output=cell.get("output"),
                profile=cell.get("profile"),
                label=_label(kind, level, cell),
            )
        )
        previous = level
    return out


def parse_ramp(
    levels: str | Sequence[Any],
    step_time: str | float = "60s",
    spawn_rate: float | None = None,
    warmup: str | float | None = None,
) -> StagePlan:
    """``--ramp 1,5,10`` -> one ``users`` stage per count, ``step_time`` each.

    Without ``spawn_rate`` each stage spawns ``max(1, |delta users|)`` users/s, so every
    new level is reached in about a second.
    """
    step_s, warmup_s, spawn = _timing(step_time, warmup, spawn_rate)
    users = parse_levels(levels, "users", "--ramp")
    return StagePlan.build(_level_stages("users", users, step_s, warmup_s, spawn, {}))


def parse_rate_ramp(
    levels: str | Sequence[Any],
    step_time: str | float = "60s",
    warmup: str | float | None = None,
) -> StagePlan:
    """``--rate-ramp 1,2,4,8`` -> one open-loop ``rate`` stage (req/s) per level."""
    step_s, warmup_s, _ = _timing(step_time, warmup, None)
    rates = parse_levels(levels, "rate", "--rate-ramp")
    return StagePlan.build(_level_stages("rate", rates, step_s, warmup_s, None, {}))


def parse_matrix(
    spec: str | dict[str, Any] | MatrixSpec,
    step_time: str | float = "60s",
    spawn_rate: float | None = None,
    warmup: str | float | None = None,
) -> StagePlan:
    """``--matrix "users=1,10,50;input=128,1024;output=128,512"`` -> the Cartesian product.

    ``spec`` may also be a mapping (the YAML form), the path of a YAML file, or a parsed
    :class:`~llm_locust.config.matrix.MatrixSpec`, whose ``step_time``, ``warmup`` and
    ``spawn_rate`` (from a file) override the arguments. Exactly one of ``users`` or ``rate``
    is required; ``input``, ``output`` and ``profile`` are optional and kept as strings.
    """
    matrix = spec if isinstance(spec, MatrixSpec) else parse_matrix_spec(spec)
    step_time = step_time if matrix.step_time is None else matrix.step_time
    warmup = warmup if matrix.warmup is None else matrix.warmup
    spawn_rate = spawn_rate if matrix.spawn_rate is None else matrix.spawn_rate
    return _matrix_plan(dict(matrix.axes), step_time, spawn_rate, warmup)


def load_matrix_file(
    path: str | Path,
    step_time: str | float = "60s",
    spawn_rate: float | None = None,
    warmup: str | float | None = None,
) -> StagePlan:
    """A YAML matrix file (the format: :mod:`llm_locust.config.matrix`) -> its stages."""
    return parse_matrix(parse_matrix_spec(str(path)), step_time, spawn_rate, warmup)


def _matrix_plan(
    axes: dict[str, tuple[str, ...]],
    step_time: str | float,
    spawn_rate: float | None,
    warmup: str | float | None,
) -> StagePlan:
    load_keys = [k for k in ("users", "rate") if k in axes]
    if len(load_keys) != 1:
        raise ValueError("--matrix: give exactly one of users=... or rate=...")
    kind = load_keys[0]
    step_s, warmup_s, spawn = _timing(step_time, warmup, spawn_rate if kind == "users" else None)
    levels = parse_levels(axes[kind], kind, f"--matrix {kind}")
    cell_keys = [k for k in CELL_KEYS if k in axes]
    stages: list[Stage] = []
    for combo in itertools.product(*(axes[k] for k in cell_keys)):
        cell = dict(zip(cell_keys, combo, strict=True))
        stages.extend(_level_stages(kind, levels, step_s, warmup_s, spawn, cell))
    return StagePlan.build(stages)


# --------------------------------------------------------------------------- running


def stage_at(plan: StagePlan, elapsed_s: float) -> tuple[Stage | None, float]:
    """The stage running ``elapsed_s`` after the start, and the time spent in it.

    Stage boundaries belong to the later stage. After the plan ends this returns
    ``(None, elapsed_s - plan.total_s)``.
    """
    if not math.isfinite(elapsed_s) or elapsed_s < 0:
        raise ValueError(f"elapsed time must be a non-negative number, got {elapsed_s!r}")
    if elapsed_s >= plan.total_s:
        return None, elapsed_s - plan.total_s
    i = bisect.bisect_right(plan._starts, elapsed_s) - 1
    stage = plan.stages[i]
    return stage, elapsed_s - stage.start_s


# --------------------------------------------------------------------------- Little's law


def _interval(record: RequestRecord, wall_clock: bool) -> tuple[float, float] | None:
    e2e = record.e2e
    if e2e is None:
        return None
    start = record.wall_start if wall_clock else record.t_sent
    return start, start + e2e


def time_weighted_in_flight(
    records: Iterable[RequestRecord], t_start: float, t_end: float, wall_clock: bool = False
) -> float:
    """Mean number of requests in flight over ``[t_start, t_end]``: the exact integral
    of the in-flight count (the sum of each ``[send, end]`` interval's overlap with the
    window) divided by the window's length.

    Times are on the records' ``perf_counter`` clock, or with ``wall_clock=True`` on
    ``wall_start`` (comparable across machines; use it for merged distributed records).
    Records without an end (``e2e is None``) are skipped.
    """
    span = t_end - t_start
    if not span > 0:
        raise ValueError(f"window must have positive length, got [{t_start}, {t_end}]")
    busy = 0.0
    for r in records:
        iv = _interval(r, wall_clock)
        if iv is not None:
            busy += max(0.0, min(iv[1], t_end) - max(iv[0], t_start))
    return busy / span


def littles_law(
    records: Iterable[RequestRecord], t_start: float, t_end: float, wall_clock: bool = False
) -> dict[str, float | None]:
    """L = lambda * W over a window: measured ``mean_in_flight`` (L) against ``product``.

    ``arrival_rate`` counts requests sent in ``[t_start, t_end)``; ``mean_e2e`` is their
    mean E2E. The two sides agree when the window is long against the E2E latency
    (edge effects shrink as E2E / window).
    """
    rows = list(records)
    in_flight = time_weighted_in_flight(rows, t_start, t_end, wall_clock)
    arrived = [iv for r in rows if (iv := _interval(r, wall_clock)) and t_start <= iv[0] < t_end]
    rate = len(arrived) / (t_end - t_start)
    mean_e2e = sum(b - a for a, b in arrived) / len(arrived) if arrived else None
    return {
        "mean_in_flight": in_flight,
        "arrival_rate": rate,
        "mean_e2e": mean_e2e,
        "product": None if mean_e2e is None else rate * mean_e2e,
    }
