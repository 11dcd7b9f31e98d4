"""Length distributions: synthetic ones from a flag, and the sample they produce.

A length sampler draws one ``(input_tokens, output_tokens)`` pair per request from a
``numpy.random.Generator`` the caller owns, so a stream is reproducible from its seed
alone. Built-in trace profiles (``profiles.py``) and the synthetic pair below share the
:class:`LengthSampler` protocol.

Syntax of ``--input-tokens`` / ``--output-tokens`` (one distribution each)::

    512                     fixed length 512 (same as fixed:512)
    fixed:512
    uniform:100,2000        integers in [100, 2000], both ends included
    uniform:min=100,max=2000
    normal:mean=1000,std=200[,min=1][,max=4000]
    lognormal:mean=1000,std=400[,min=10][,max=8000]

``mean``/``std`` are those of the lengths themselves (the lognormal's log-space parameters
are derived from them). ``min`` (default 1) and ``max`` truncate: a draw outside is
redrawn, up to a few times, then clamped, so the bounds do not pile up probability mass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

import numpy as np

from llm_locust.config.jsontypes import JsonObject
from llm_locust.config.units import parse_kind_spec

__all__ = [
    "Distribution",
    "DistributionKind",
    "LengthSample",
    "LengthSampler",
    "SyntheticLengths",
    "parse_distribution",
]

_REDRAWS = 16


class DistributionKind(StrEnum):
    """The shape of a length distribution (its value is the spec's spelling)."""

    FIXED = "fixed"
    UNIFORM = "uniform"
    NORMAL = "normal"
    LOGNORMAL = "lognormal"


class SpecError(ValueError):
    """A distribution spec that does not parse."""


@dataclass(frozen=True)
class LengthSample:
    """One request's lengths; ``reused_blocks`` only for profiles with prefix reuse."""

    input_tokens: int
    output_tokens: int
    reused_blocks: int = 0


class LengthSampler(Protocol):
    @property
    def name(self) -> str: ...

    def draw(self, rng: np.random.Generator) -> LengthSample: ...

    def describe(self) -> JsonObject: ...


@dataclass(frozen=True)
class Distribution:
    """One length distribution: its ``kind`` and the parameters it takes."""

    kind: DistributionKind
    params: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", DistributionKind(self.kind))  # text becomes the member

    @property
    def lower(self) -> int:
        if self.kind is DistributionKind.FIXED:
            return int(self.params["value"])
        return int(self.params.get("min", 1))

    @property
    def upper(self) -> float:
        if self.kind is DistributionKind.FIXED:
            return self.params["value"]
        return self.params.get("max", math.inf)

    def draw(self, rng: np.random.Generator) -> int:
        if self.kind is DistributionKind.FIXED:
            return int(self.params["value"])
        if self.kind is DistributionKind.UNIFORM:
            return int(rng.integers(self.lower, int(self.upper) + 1))
        for _ in range(_REDRAWS):
            x = self._raw(rng)
            if self.lower <= x <= self.upper:
                return round(x)
        return round(min(max(x, self.lower), self.upper))

    def _raw(self, rng: np.random.Generator) -> float:
        mean, std = self.params["mean"], self.params["std"]
        if self.kind is DistributionKind.NORMAL:
            return float(rng.normal(mean, std))
        sigma2 = math.log1p((std / mean) ** 2)
        return float(rng.lognormal(math.log(mean) - sigma2 / 2, math.sqrt(sigma2)))

    def spec(self) -> str:
        if self.kind is DistributionKind.FIXED:
            return f"fixed:{int(self.params['value'])}"
        body = ",".join(f"{k}={_fmt(v)}" for k, v in self.params.items())
        return f"{self.kind}:{body}"


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else str(v)


_KEYS = {
    "fixed": ("value",),
    "uniform": ("min", "max"),
    "normal": ("mean", "std", "min", "max"),
    "lognormal": ("mean", "std", "min", "max"),
}
_REQUIRED = {
    "fixed": ("value",),
    "uniform": ("min", "max"),
    "normal": ("mean", "std"),
    "lognormal": ("mean", "std"),
}


def parse_distribution(text: str) -> Distribution:
    """Parse a spec such as ``lognormal:mean=1000,std=400,max=8000``; raise ``SpecError``."""
    try:
        name, params = parse_kind_spec(text, _KEYS, _number)
    except ValueError as exc:
        raise SpecError(str(exc)) from None
    kind = DistributionKind(name)
    _check(kind, params, text.strip())
    return Distribution(kind, params)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError("not a number") from None


def _check(kind: DistributionKind, params: dict[str, float], text: str) -> None:
    missing = [k for k in _REQUIRED[kind] if k not in params]
    if missing:
        raise SpecError(f"{kind} needs {', '.join(missing)} in {text!r}")
    if any(v < 0 for v in params.values()):
        raise SpecError(f"negative value in {text!r}")
    lo = params.get("value", params.get("min", 1))
    if lo < 1:
        raise SpecError(f"lengths are at least 1 token: {text!r}")
    if params.get("max", math.inf) < lo:
        raise SpecError(f"max below min in {text!r}")
    shaped = kind in (DistributionKind.NORMAL, DistributionKind.LOGNORMAL)
    if shaped and (params["mean"] <= 0 or params["std"] < 0):
        raise SpecError(f"{kind} needs mean > 0 and std >= 0: {text!r}")


@dataclass(frozen=True)
class SyntheticLengths:
    """Independent input and output distributions (a synthetic profile has no joint relation)."""

    input: Distribution
    output: Distribution
    name: str = "synthetic"

    def draw(self, rng: np.random.Generator) -> LengthSample:
        return LengthSample(self.input.draw(rng), self.output.draw(rng))

    def describe(self) -> JsonObject:
        return {"name": self.name, "input_tokens": self.input.spec(), "output_tokens": self.output.spec()}
