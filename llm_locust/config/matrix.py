"""The test-matrix format: ``--matrix`` text or a YAML file, parsed once into a :class:`MatrixSpec`.

Text: ``"users=1,10,50;input=128,1024;output=128,512"``: ``;``-separated axes, each
``key=v1,v2,...``. YAML (:class:`MatrixFile`): the same axes as lists (or one value),
optionally with ``step_time``, ``warmup`` and ``spawn_rate``, which override the options of
the same name for the matrix. Keys: exactly one of ``users`` or ``rate`` (the load level),
and any of ``input``, ``output`` (length distributions) and ``profile`` (a ``--workload``
profile). An unknown key, in the text or the file, is an error that names it.

Which cells run in which order, and their stages, is :func:`llm_locust.load.stages.parse_matrix`.
Pure module: no Locust, no network.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Union

from pydantic import BaseModel, ConfigDict, ValidationError

from llm_locust.config.jsontypes import JsonObject
from llm_locust.config.units import names_file, read_yaml, split_list

__all__ = [
    "CELL_KEYS",
    "MATRIX_KEYS",
    "MatrixFile",
    "MatrixKey",
    "MatrixSpec",
    "load_matrix_file",
    "parse_matrix_spec",
]


class MatrixKey(StrEnum):
    """An axis of a matrix: a load level (``users``, ``rate``: a
    :class:`~llm_locust.config.stage_kind.StageKind`'s value) or a workload cell's setting."""

    USERS = "users"
    RATE = "rate"
    INPUT = "input"
    OUTPUT = "output"
    PROFILE = "profile"


MATRIX_KEYS = tuple(MatrixKey)
#: The axes that make a workload cell (each cell gets its own ramp of the load axis).
CELL_KEYS = (MatrixKey.INPUT, MatrixKey.OUTPUT, MatrixKey.PROFILE)
Axes = tuple[tuple[MatrixKey, tuple[str, ...]], ...]

_Axis = Union[list[Union[str, int, float]], str, int, float, None]  # noqa: UP007 (pydantic, py3.10)


class MatrixSpec(BaseModel):
    """The axes of a matrix (key -> values as strings) and the file's timing overrides."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    axes: Axes
    step_time: str | float | None = None
    warmup: str | float | None = None
    spawn_rate: float | None = None

    def axis(self, key: MatrixKey) -> tuple[str, ...] | None:
        return dict(self.axes).get(key)

    def keys(self) -> list[MatrixKey]:
        return [k for k, _ in self.axes]


class MatrixFile(BaseModel):
    """A YAML matrix file; any other key is an error naming it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    users: _Axis = None
    rate: _Axis = None
    input: _Axis = None
    output: _Axis = None
    profile: _Axis = None
    step_time: str | float | None = None
    warmup: str | float | None = None
    spawn_rate: float | None = None


def parse_matrix_spec(spec: str | JsonObject) -> MatrixSpec:
    """``--matrix`` text, a YAML file's path (see :func:`~llm_locust.config.units.names_file`),
    or a mapping (the YAML form) -> :class:`MatrixSpec`."""
    if isinstance(spec, str) and names_file(spec):
        return load_matrix_file(spec.strip())
    if isinstance(spec, str):
        return MatrixSpec(axes=_text_axes(spec))
    return MatrixSpec(axes=_mapping_axes(spec))


def load_matrix_file(path: str | Path) -> MatrixSpec:
    data = read_yaml(path, "--matrix")
    if not isinstance(data, dict):
        raise ValueError(f"--matrix: {path} must hold a mapping such as 'users: [1, 10]'")
    lowered = {str(k).strip().lower(): v for k, v in data.items()}
    try:
        parsed = MatrixFile.model_validate(lowered)
    except ValidationError as exc:
        raise ValueError(f"--matrix: {path}: {_first_problem(exc)}") from None
    axes = {k.value: v for k in MATRIX_KEYS if (v := getattr(parsed, k)) is not None}
    return MatrixSpec(
        axes=_mapping_axes(axes),
        step_time=parsed.step_time,
        warmup=parsed.warmup,
        spawn_rate=parsed.spawn_rate,
    )


def _first_problem(exc: ValidationError) -> str:
    err = exc.errors()[0]
    key = str(err["loc"][0]) if err["loc"] else ""
    if err["type"] == "extra_forbidden":
        return (
            f"unknown key {key!r} (expected one of {', '.join(MATRIX_KEYS)}, step_time, warmup, spawn_rate)"
        )
    return f"{key}: {err['msg']}"


def _text_axes(spec: str) -> Axes:
    axes: dict[MatrixKey, tuple[str, ...]] = {}
    for part in spec.split(";"):
        if not part.strip():
            continue
        name, sep, values = part.partition("=")
        if not sep:
            raise ValueError(f"--matrix: {part.strip()!r} is not key=v1,v2,...")
        key = _key(name, axes)
        axes[key] = tuple(split_list(values, f"--matrix {key}"))
    return tuple(axes.items())


def _mapping_axes(data: JsonObject) -> Axes:
    axes: dict[MatrixKey, tuple[str, ...]] = {}
    for name, values in data.items():
        key = _key(str(name), axes)
        seq = values if isinstance(values, (list, tuple)) else [values]
        axes[key] = tuple(split_list([str(v) for v in seq], f"--matrix {key}"))
    return tuple(axes.items())


def _key(name: str, axes: Mapping[MatrixKey, object]) -> MatrixKey:
    """The axis ``name`` names (any case, spaces around it), not given before."""
    text = name.strip().lower()
    try:
        key = MatrixKey(text)
    except ValueError:
        expected = ", ".join(MATRIX_KEYS)
        raise ValueError(f"--matrix: unknown key {text!r} (expected one of {expected})") from None
    if key in axes:
        raise ValueError(f"--matrix: key {text!r} given twice")
    return key
