"""Think time: how long a closed-loop user pauses between two requests, as a distribution.

Users are not concurrency: 400 people who each read a reply for 20 s keep far fewer than
400 requests in flight (Little's law: ``users x E2E / (E2E + think)``). ``--think-time`` takes
the workload distributions' grammar with durations for values::

    1.5                              1.5 s every time (the old form: seconds)
    fixed:1.5s
    uniform:5s,15s                   uniformly between 5 and 15 s
    normal:mean=20s,std=5s[,min=..][,max=..]
    lognormal:mean=20s,std=10s[,min=..][,max=..]
    exponential:mean=20s[,max=..]    memoryless pauses (a Poisson user)

``mean``/``std`` are those of the pauses themselves. ``min`` (default 0) and ``max``
truncate: a draw outside is redrawn a few times, then clamped. Values take ``ms``, ``s``,
``m``, ``h`` or a bare number of seconds.

Pure module: no Locust, no network.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from llm_locust.config.units import parse_duration, parse_kind_spec

__all__ = ["NO_THINK", "ThinkKind", "ThinkTime", "parse_think_time"]


class ThinkKind(StrEnum):
    """The distribution of the pauses (its value is the spec's spelling)."""

    FIXED = "fixed"
    UNIFORM = "uniform"
    NORMAL = "normal"
    LOGNORMAL = "lognormal"
    EXPONENTIAL = "exponential"


_KINDS = {
    "fixed": ("value",),
    "uniform": ("min", "max"),
    "normal": ("mean", "std", "min", "max"),
    "lognormal": ("mean", "std", "min", "max"),
    "exponential": ("mean", "max"),
}
_REQUIRED = {
    "fixed": ("value",),
    "uniform": ("min", "max"),
    "normal": ("mean", "std"),
    "lognormal": ("mean", "std"),
    "exponential": ("mean",),
}
_REDRAWS = 16


@dataclass(frozen=True)
class ThinkTime:
    """A distribution of pauses in seconds."""

    kind: ThinkKind = ThinkKind.FIXED
    params: dict[str, float] = field(default_factory=lambda: {"value": 0.0})

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", ThinkKind(self.kind))  # a name given as text becomes the member

    @property
    def lower(self) -> float:
        return self.params["value"] if self.kind is ThinkKind.FIXED else self.params.get("min", 0.0)

    @property
    def upper(self) -> float:
        return self.params["value"] if self.kind is ThinkKind.FIXED else self.params.get("max", math.inf)

    @property
    def mean(self) -> float:
        """The mean pause (of the untruncated distribution for normal, lognormal, exponential)."""
        if self.kind is ThinkKind.FIXED:
            return self.params["value"]
        if self.kind is ThinkKind.UNIFORM:
            return (self.params["min"] + self.params["max"]) / 2
        return self.params["mean"]

    @property
    def none(self) -> bool:
        return self.kind is ThinkKind.FIXED and self.params["value"] == 0.0

    def draw(self, rng: np.random.Generator) -> float:
        if self.kind is ThinkKind.FIXED:
            return self.params["value"]
        if self.kind is ThinkKind.UNIFORM:
            return float(rng.uniform(self.params["min"], self.params["max"]))
        x = self.lower
        for _ in range(_REDRAWS):
            x = self._raw(rng)
            if self.lower <= x <= self.upper:
                return x
        return min(max(x, self.lower), self.upper)

    def _raw(self, rng: np.random.Generator) -> float:
        mean = self.params["mean"]
        if self.kind is ThinkKind.EXPONENTIAL:
            return float(rng.exponential(mean))
        std = self.params["std"]
        if self.kind is ThinkKind.NORMAL:
            return float(rng.normal(mean, std))
        sigma2 = math.log1p((std / mean) ** 2)
        return float(rng.lognormal(math.log(mean) - sigma2 / 2, math.sqrt(sigma2)))

    def scaled(self, factor: float) -> ThinkTime:
        """Every pause multiplied by ``factor`` (a simulator at ``--speedup K`` takes ``1/K``)."""
        return ThinkTime(self.kind, {k: v * factor for k, v in self.params.items()})

    def spec(self) -> str:
        """The normalised text, e.g. ``lognormal:mean=20s,std=10s``."""
        if self.kind is ThinkKind.FIXED:
            return f"{self.params['value']:g}s"
        return f"{self.kind}:" + ",".join(f"{k}={v:g}s" for k, v in self.params.items())


NO_THINK = ThinkTime()


def _seconds(text: str) -> float:
    try:
        return parse_duration(text, "--think-time")
    except ValueError:
        raise ValueError("not a duration") from None


def parse_think_time(text: object) -> ThinkTime:
    """A think-time spec (see the module docstring); ``ValueError`` with a one-line reason."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        text = str(float(text))
    name, params = parse_kind_spec(str(text), _KINDS, _seconds, "think-time distribution")
    kind = ThinkKind(name)
    missing = [k for k in _REQUIRED[kind] if k not in params]
    if missing:
        raise ValueError(f"{kind} needs {', '.join(missing)} in {str(text).strip()!r}")
    if kind in (ThinkKind.NORMAL, ThinkKind.LOGNORMAL, ThinkKind.EXPONENTIAL) and params["mean"] <= 0:
        raise ValueError(f"{kind} needs a mean above 0 in {str(text).strip()!r}")
    lo = params.get("value", params.get("min", 0.0))
    if params.get("max", math.inf) < lo:
        raise ValueError(f"max below min in {str(text).strip()!r}")
    return ThinkTime(kind, params)
