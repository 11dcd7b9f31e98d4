"""Stage plans: a load test as a sequence of fixed-duration steps.

A capacity test is rarely one load level. ``--ramp 1,5,10,20,50`` steps the number of
concurrent users (closed loop); ``--rate-ramp 1,2,4,8`` steps the request rate (open
loop); ``--matrix`` crosses a user (or rate) ramp with workload shapes so that each
``(input, output)`` cell gets its own capacity ramp. Everything here is pure data: a
Locust ``LoadTestShape`` calls :meth:`StagePlan.stage_at` (the one stage lookup) on each
tick, and the summary groups records by ``RequestRecord.stage`` (the stage index).

Each stage starts with ``warmup_s`` seconds whose requests are flagged ``warmup=True``
and left out of the stage's statistics: the queue needs time to fill after a step.

Matrix ordering: the workload cells are the outer loop (``input`` outermost, then
``output``, then ``profile``) and the load level is the inner loop, ascending as given.
So ``users=1,10;input=128,1024`` runs ``(128,1) (128,10) (1024,1) (1024,10)``: a full
capacity ramp per workload, and the "highest passing stage" is found per cell.

Durations are seconds everywhere. Pure module: no Locust, no network.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from llm_locust.config.jsontypes import JsonObject, JsonValue
from llm_locust.config.matrix import CELL_KEYS, MatrixKey, MatrixSpec, parse_matrix_spec
from llm_locust.config.stage_kind import StageKind
from llm_locust.config.units import OptionError, parse_duration, parse_levels

__all__ = [
    "Stage",
    "StageBlock",
    "StagePlan",
    "load_matrix_file",
    "parse_duration",
    "parse_matrix",
    "parse_ramp",
    "parse_rate_ramp",
]


@dataclass(frozen=True)
class Stage:
    """One step of a plan. ``target`` is a user count (``users``) or req/s (``rate``)."""

    index: int
    kind: StageKind
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
        return int(self.target) if self.kind is StageKind.USERS else None

    @property
    def rate(self) -> float | None:
        return self.target if self.kind is StageKind.RATE else None

    def in_warmup(self, time_in_stage: float) -> bool:
        return time_in_stage < self.warmup_s

    def overrides(self) -> dict[str, str]:
        """The workload settings this stage changes (empty for a plain ramp)."""
        items = {"input": self.input, "output": self.output, "profile": self.profile}
        return {k: v for k, v in items.items() if v is not None}

    def to_json(self) -> JsonObject:
        """The stage as the files keep it, written through :class:`StageBlock` (what
        ``search.json`` is read back with), so the two cannot drift."""
        block = StageBlock(
            index=self.index,
            kind=self.kind,
            target=self.target,
            start_s=self.start_s,
            duration_s=self.duration_s,
            spawn_rate=self.spawn_rate,
            warmup_s=self.warmup_s,
            label=self.label,
            **self.overrides(),
        )
        out: JsonObject = block.model_dump(mode="json", exclude_unset=True)
        return out

    @classmethod
    def of(cls, block: StageBlock) -> Stage:
        """The stage a file kept (:meth:`to_json` read back)."""
        return cls(
            index=block.index,
            kind=block.kind,
            target=block.target,
            duration_s=block.duration_s,
            start_s=block.start_s,
            spawn_rate=block.spawn_rate,
            warmup_s=block.warmup_s,
            input=block.input,
            output=block.output,
            profile=block.profile,
            label=block.label,
        )


class StageBlock(BaseModel):
    """A step's stage as the plan held it (:meth:`llm_locust.load.stages.Stage.to_json`)."""

    model_config = ConfigDict(extra="ignore")

    index: int
    kind: StageKind
    target: float
    start_s: float = 0.0
    duration_s: float
    spawn_rate: float | None = None
    warmup_s: float = 0.0
    label: str = ""
    input: str | None = None
    output: str | None = None
    profile: str | None = None


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

    def to_json(self) -> list[JsonObject]:
        return [s.to_json() for s in self.stages]

    def stage_at(self, elapsed_s: float) -> tuple[Stage | None, float]:
        """The stage running ``elapsed_s`` after the start, and the time spent in it.

        Stage boundaries belong to the later stage. After the plan ends this returns
        ``(None, elapsed_s - total_s)``. The one stage lookup: the shape, the level samples
        and the records (through the run context's wall clock) all use it.
        """
        if not math.isfinite(elapsed_s) or elapsed_s < 0:
            raise ValueError(f"elapsed time must be a non-negative number, got {elapsed_s!r}")
        if elapsed_s >= self.total_s:
            return None, elapsed_s - self.total_s
        i = bisect.bisect_right(self._starts, elapsed_s) - 1
        stage = self.stages[i]
        return stage, elapsed_s - stage.start_s


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


def _label(kind: StageKind, target: float, cell: dict[MatrixKey, str]) -> str:
    head = f"users={int(target)}" if kind is StageKind.USERS else f"rate={target:g}"
    return " ".join([head, *(f"{k}={v}" for k, v in cell.items())])


def _level_stages(
    kind: StageKind,
    levels: Sequence[float],
    step_s: float,
    warmup_s: float,
    spawn_rate: float | None,
    cell: dict[MatrixKey, str],
) -> list[Stage]:
    """One stage per load level. Default spawn rate: reach each new user count in ~1 s."""
    out, previous = [], 0.0
    for level in levels:
        spawn = spawn_rate
        if kind is StageKind.USERS and spawn is None:
            spawn = max(1.0, abs(level - previous))
        out.append(
            Stage(
                index=0,
                kind=kind,
                target=level,
                duration_s=step_s,
                spawn_rate=spawn,
                warmup_s=warmup_s,
                input=cell.get(MatrixKey.INPUT),
                output=cell.get(MatrixKey.OUTPUT),
                profile=cell.get(MatrixKey.PROFILE),
                label=_label(kind, level, cell),
            )
        )
        previous = level
    return out


def parse_ramp(
    levels: str | Sequence[JsonValue],
    step_time: str | float = "60s",
    spawn_rate: float | None = None,
    warmup: str | float | None = None,
) -> StagePlan:
    """``--ramp 1,5,10`` -> one ``users`` stage per count, ``step_time`` each.

    Without ``spawn_rate`` each stage spawns ``max(1, |delta users|)`` users/s, so every
    new level is reached in about a second.
    """
    step_s, warmup_s, spawn = _timing(step_time, warmup, spawn_rate)
    users = parse_levels(levels, StageKind.USERS, "--ramp")
    return StagePlan.build(_level_stages(StageKind.USERS, users, step_s, warmup_s, spawn, {}))


def parse_rate_ramp(
    levels: str | Sequence[JsonValue],
    step_time: str | float = "60s",
    warmup: str | float | None = None,
) -> StagePlan:
    """``--rate-ramp 1,2,4,8`` -> one open-loop ``rate`` stage (req/s) per level."""
    step_s, warmup_s, _ = _timing(step_time, warmup, None)
    rates = parse_levels(levels, StageKind.RATE, "--rate-ramp")
    return StagePlan.build(_level_stages(StageKind.RATE, rates, step_s, warmup_s, None, {}))


def parse_matrix(
    spec: str | JsonObject | MatrixSpec,
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
    axes: dict[MatrixKey, tuple[str, ...]],
    step_time: str | float,
    spawn_rate: float | None,
    warmup: str | float | None,
) -> StagePlan:
    load_kinds = [k for k in StageKind if MatrixKey(k.value) in axes]
    if len(load_kinds) != 1:
        raise ValueError("--matrix: give exactly one of users=... or rate=...")
    kind = load_kinds[0]
    step_s, warmup_s, spawn = _timing(step_time, warmup, spawn_rate if kind is StageKind.USERS else None)
    levels = parse_levels(axes[MatrixKey(kind.value)], kind, f"--matrix {kind}")
    cell_keys = [k for k in CELL_KEYS if k in axes]
    stages: list[Stage] = []
    for combo in itertools.product(*(axes[k] for k in cell_keys)):
        cell = dict(zip(cell_keys, combo, strict=True))
        stages.extend(_level_stages(kind, levels, step_s, warmup_s, spawn, cell))
    return StagePlan.build(stages)
