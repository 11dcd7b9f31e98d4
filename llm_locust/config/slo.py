"""The SLO format: ``--slo`` text or a YAML file, parsed once into a typed :class:`SloSpec`.

Spec (``--slo``), comma-separated ``<metric><op><value>`` lines::

    success>=99%,ttft_p95<=5s,e2e_p95<=30s,tpot_p99<=100ms,e2e_p95_intended<=40s

- ``success``: share of requests that succeeded; ``>=``/``>`` only. Value ``99%``,
  ``0.99``, or a bare number above 1 read as a percentage (``99``); ``1`` means 100%.
- a latency of :data:`llm_locust.record.LATENCIES` (``ttft|tpot|itl|e2e``) with a statistic
  ``_p50|_p90|_p95|_p99|_pNN[.N]|_mean|_max`` (bare ``ttft`` means ``ttft_max``: every
  request); ``<=``/``<`` only. Value in ``ms``, ``s``, or a bare number of seconds.
- ``_intended`` (``ttft`` and ``e2e`` only) measures from the intended send time
  (``t_intended``, open-loop schedules), so queueing in the load generator itself counts;
  records without one fall back to the actual send.
- Terms on the server's metrics and on drift (``kv_cache_usage_max<=95%``, ``waiting_p95<=10``,
  ``preemptions==0``, ``ttft_p95_drift<=50ms``): :mod:`llm_locust.config.slo_terms`, judged
  from series by :mod:`llm_locust.results.slo_series`.

YAML file (``--slo slo.yaml``, see :func:`~llm_locust.config.units.names_file`): a mapping
``{success: ">=99%", ttft_p95: "<=5s"}`` (a bare number takes the natural operator: ``>=``
for success, ``<=`` otherwise), a list of line strings, or either under a top-level ``slo:``
key (:class:`SloFile`; any other top-level key is an error naming it). Every key is a line's
metric, so a misspelt key is an error that names it.

Evaluation (aggregates, goodput, verdicts) is :mod:`llm_locust.results.slo`. Pure module.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Union

from pydantic import BaseModel, ConfigDict, ValidationError

from llm_locust.config.slo_terms import SloKind, parse_series_term
from llm_locust.config.units import names_file, read_yaml
from llm_locust.record import LATENCIES

__all__ = [
    "SloFile",
    "SloKind",
    "SloLine",
    "SloSpec",
    "load_slo_file",
    "parse_slo",
    "scaled_line",
    "scaled_slo",
]

_INTENDED_OK = ("ttft", "e2e")
_LINE = re.compile(r"^\s*([A-Za-z0-9_.]+)\s*(<=|>=|==|<|>)\s*(.+?)\s*$")
_METRIC = re.compile(rf"^({'|'.join(LATENCIES)})(?:_(p\d+(?:\.\d+)?|mean|max))?(_intended)?$")
_NUMBER = re.compile(r"^([0-9]*\.?[0-9]+(?:e[-+]?\d+)?)\s*(ms|s|%)?$")


@dataclass(frozen=True)
class SloLine:
    """One objective. ``stat`` is ``pNN``, ``mean`` or ``max``; ``None`` for success."""

    metric: str
    stat: str | None
    op: str
    threshold: float  # seconds, or a fraction for success
    intended: bool = False
    text: str = ""
    kind: SloKind = SloKind.REQUEST

    @property
    def name(self) -> str:
        if self.stat is None:
            return self.metric
        return f"{self.metric}_{self.stat}" + ("_intended" if self.intended else "")

    def holds(self, value: float) -> bool:
        return {
            "<=": value <= self.threshold,
            "<": value < self.threshold,
            ">=": value >= self.threshold,
            ">": value > self.threshold,
            "==": value == self.threshold,
        }[self.op]


@dataclass(frozen=True)
class SloSpec:
    lines: tuple[SloLine, ...]

    def __iter__(self) -> Iterator[SloLine]:
        return iter(self.lines)

    def __len__(self) -> int:
        return len(self.lines)

    def to_json(self) -> list[str]:
        return [line.text for line in self.lines]


def _bad(part: str, why: str) -> ValueError:
    return ValueError(f"--slo: {part.strip()!r}: {why}")


def _parse_metric(part: str, name: str) -> tuple[str, str | None, bool]:
    if name == "success":
        return "success", None, False
    m = _METRIC.match(name)
    if not m:
        raise _bad(part, "unknown metric (use success, or ttft/tpot/itl/e2e with _p95, _mean, _max ...)")
    metric, stat, intended = m.group(1), m.group(2) or "max", bool(m.group(3))
    if stat.startswith("p") and not 0 <= float(stat[1:]) <= 100:
        raise _bad(part, "percentile must be between 0 and 100")
    if intended and metric not in _INTENDED_OK:
        raise _bad(part, "_intended applies only to ttft and e2e")
    return metric, stat, intended


def _parse_value(part: str, metric: str, value: str) -> float:
    m = _NUMBER.match(value.strip().lower())
    if not m:
        raise _bad(part, f"bad value {value!r} (e.g. 500ms, 5s, 99%)")
    number, unit = float(m.group(1)), m.group(2)
    if metric == "success":
        if unit in ("ms", "s"):
            raise _bad(part, "success takes a percentage or a fraction")
        fraction = number / 100 if unit == "%" or number > 1 else number
        if fraction > 1:
            raise _bad(part, "success cannot exceed 100%")
        return fraction
    if unit == "%":
        raise _bad(part, "latencies take ms or s")
    return number / 1000 if unit == "ms" else number


def _parse_line(part: str) -> SloLine:
    m = _LINE.match(part)
    if not m:
        raise _bad(part, "expected <metric><op><value>, e.g. ttft_p95<=5s")
    name, op, value = m.group(1).lower(), m.group(2), m.group(3)
    try:
        term = parse_series_term(name, op, value)
    except ValueError as exc:
        raise _bad(part, str(exc)) from None
    if term is not None:
        text = f"{name}{op}{value.strip()}"
        return SloLine(term.metric, term.stat, op, term.threshold, False, text, term.kind)
    if op == "==":
        raise _bad(part, "== applies only to preemptions")
    metric, stat, intended = _parse_metric(part, name)
    if metric == "success" and op.startswith("<"):
        raise _bad(part, "success needs >= or >")
    if metric != "success" and op.startswith(">"):
        raise _bad(part, "latency objectives need <= or <")
    threshold = _parse_value(part, metric, value)
    return SloLine(metric, stat, op, threshold, intended, f"{name}{op}{value.strip()}")


def parse_slo(spec: str | Sequence[str] | Mapping[str, object]) -> SloSpec:
    """``--slo`` text, a YAML file path, a list of lines, or a mapping (the YAML form)."""
    if isinstance(spec, Mapping):
        return _from_mapping(spec)
    if isinstance(spec, str):
        if names_file(spec):
            return load_slo_file(spec.strip())
        parts = [p for p in spec.split(",") if p.strip()]
    else:
        parts = [str(p) for p in spec]
    if not parts:
        raise ValueError("--slo: empty objective list")
    lines = tuple(_parse_line(p) for p in parts)
    names = [line.name for line in lines]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"--slo: {dupes[0]!r} given more than once")
    return SloSpec(lines)


def _from_mapping(data: Mapping[str, object]) -> SloSpec:
    parts = []
    for key, value in data.items():
        name = str(key).strip()
        if isinstance(value, bool) or value is None:
            raise _bad(f"{name}: {value}", "needs a value such as '<=5s'")
        text = str(value).strip()
        if not text.startswith(("<", ">")):
            text = (">=" if name.lower() == "success" else "<=") + text
        parts.append(name + text)
    return parse_slo(parts)


_Body = Union[dict[str, Union[str, float, int, None]], list[str]]  # noqa: UP007 (pydantic, py3.10)


class SloFile(BaseModel):
    """An SLO file with a top-level ``slo:`` key (the bare mapping or list is accepted too)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    slo: _Body


def load_slo_file(path: str | Path) -> SloSpec:
    """A YAML (or JSON) SLO file; see the module docstring for the accepted shapes."""
    data = read_yaml(path, "--slo")
    if isinstance(data, Mapping) and "slo" in data:
        try:
            data = SloFile.model_validate(data).slo
        except ValidationError as exc:
            raise ValueError(f"--slo: {path}: {_first_problem(exc)}") from None
    if isinstance(data, Mapping):
        return _from_mapping(data)
    if isinstance(data, list) and all(isinstance(x, str) for x in data):
        return parse_slo(data)
    raise ValueError(f"--slo: {path} must hold a mapping (ttft_p95: '<=5s') or a list of lines")


def _first_problem(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden":
        return f"unknown key {where!r} (an SLO file has only 'slo:')"
    return f"{where}: {err['msg']}"


def scaled_line(line: SloLine, k: float) -> SloLine:
    """``line`` with its threshold divided by ``k``, to the 6 significant digits its text says
    (a success ratio unchanged): the line of a target ``k`` times faster (``1 / k``: the line of
    the deployment a ``k`` times faster target stands for)."""
    if line.metric == "success":
        return line
    value = f"{line.threshold / k:.6g}"
    return replace(line, threshold=float(value), text=f"{line.name}{line.op}{value}s")


def scaled_slo(spec: SloSpec, k: float) -> str:
    """The SLO with every latency threshold divided by ``k`` (the success ratio unchanged): the
    SLO a simulator running ``k`` times faster than the deployment it models is judged by."""
    return ",".join(scaled_line(line, k).text for line in spec.lines)
