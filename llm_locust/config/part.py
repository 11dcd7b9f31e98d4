"""What every part of the run configuration shares: the frozen base model (unknown keys are
errors) and the constrained number types and duration parser its fields use
(:mod:`llm_locust.config.model` says why pydantic).

Pure module: no Locust, no network.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from llm_locust.config.units import OptionError, parse_duration

__all__ = ["Finite", "NonNegative", "Part", "Positive", "seconds_of"]

Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Finite = Annotated[float, Field(allow_inf_nan=False)]


class Part(BaseModel):
    """A frozen part of the configuration; unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def seconds_of(flag: str, positive: bool) -> Callable[[object], float | None]:
    """A field validator's parse of a duration flag (``"30s"``, ``"2m"``) into seconds."""

    def parse(value: object) -> float | None:
        seconds = None if value is None else parse_duration(value, flag)
        if positive and seconds is not None and seconds <= 0:
            raise OptionError(flag, value, "must be above 0")
        return seconds

    return parse
