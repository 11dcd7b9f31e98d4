"""The load plan's inputs as configured: Locust's ``-u``/``-r``/``-t`` and the load models
(``--ramp``, ``--matrix``, ``--request-rate``, ``--rate-ramp``, ``--trace``, ``--search``), one
at a time; read by ``load/plan.py``. A part of :class:`llm_locust.config.model.RunConfig`.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field, PlainSerializer, ValidationInfo, field_validator, model_validator

from llm_locust.config.burst import BurstSpec, parse_burst
from llm_locust.config.demand import Demand, parse_demand
from llm_locust.config.matrix import MatrixKey, MatrixSpec, parse_matrix_spec
from llm_locust.config.part import NonNegative, Part, Positive, seconds_of
from llm_locust.config.stage_kind import StageKind
from llm_locust.config.units import OptionError, parse_levels

__all__ = ["LoadConfig", "LoadMode"]


class LoadMode(StrEnum):
    """A load model, named by its flag (a message that prints one prints the flag), in the order
    their conflicts are reported; the :class:`LoadConfig` field that chooses it is the flag's
    destination (:attr:`field`)."""

    RAMP = "--ramp"
    MATRIX = "--matrix"
    REQUEST_RATE = "--request-rate"
    RATE_RAMP = "--rate-ramp"
    TRACE = "--trace"
    SEARCH = "--search"

    @property
    def field(self) -> str:
        """The :class:`LoadConfig` field that chooses this model: ``--rate-ramp`` -> ``rate_ramp``."""
        return self.value.removeprefix("--").replace("-", "_")


class LoadConfig(Part):
    num_users: Annotated[int, Field(ge=1)] | None
    spawn_rate: Positive | None
    run_time: NonNegative | None
    ramp: tuple[int, ...] | None
    step_time: Positive
    warmup: NonNegative
    matrix: MatrixSpec | None
    request_rate: Positive | None
    num_requests: Annotated[int, Field(ge=1)] | None
    arrival: Literal["poisson", "gamma", "constant"]
    burstiness: Positive | None
    max_concurrency: Annotated[int, Field(ge=1)] | None
    rate_ramp: tuple[Positive, ...] | None
    trace: str | None
    trace_format: Literal["auto", "azure", "mooncake"]
    time_scale: Positive
    trace_spread: Literal["auto", "even", "random", "none"]
    trace_slot: Positive | None
    trace_start: NonNegative | None
    trace_duration: NonNegative | None
    trace_limit: Annotated[int, Field(ge=1)] | None
    trace_block_tokens: Annotated[int, Field(ge=1)]
    burst: Annotated[BurstSpec, PlainSerializer(str, return_type=str)] | None

    @field_validator("burst", mode="before")
    @classmethod
    def _burst(cls, value: object) -> object:
        if value is None or isinstance(value, BurstSpec) or not str(value).strip():
            return value or None
        return parse_burst(value)

    search: StageKind | None
    search_min: Positive | None
    search_max: Positive | None
    search_precision: Annotated[float, Field(gt=0, lt=1)]
    search_settled_precision: Annotated[float, Field(gt=0, lt=1)] | None = None
    search_max_steps: Annotated[int, Field(ge=1)]
    search_extensions: Annotated[int, Field(ge=0)]
    demand: Demand | None

    @field_validator("search_precision", "search_settled_precision", mode="before")
    @classmethod
    def _fraction(cls, value: object) -> object:
        if isinstance(value, str) and value.strip().endswith("%"):
            try:
                return float(value.strip()[:-1]) / 100
            except ValueError:
                raise ValueError("expected a fraction such as 0.1 or a percentage such as 10%") from None
        return value

    @field_validator("demand", mode="before")
    @classmethod
    def _demand(cls, value: object) -> object:
        return parse_demand(value) if isinstance(value, (str, dict)) else value

    @field_validator("ramp", "rate_ramp", mode="before")
    @classmethod
    def _levels(cls, value: object, info: ValidationInfo) -> object:
        if value is None or isinstance(value, tuple):
            return value
        ramp = info.field_name == "ramp"
        kind, flag = (StageKind.USERS, LoadMode.RAMP) if ramp else (StageKind.RATE, LoadMode.RATE_RAMP)
        levels = parse_levels(value, kind, flag)
        return tuple(int(v) for v in levels) if ramp else tuple(levels)

    @field_validator("run_time", "step_time", "warmup", "trace_start", "trace_duration", mode="before")
    @classmethod
    def _durations(cls, value: object, info: ValidationInfo) -> object:
        name = info.field_name or ""
        flag = "-t/--run-time" if name == "run_time" else "--" + name.replace("_", "-")
        return seconds_of(flag, positive=name == "step_time")(value)

    @field_validator("matrix", mode="before")
    @classmethod
    def _matrix(cls, value: object) -> object:
        return parse_matrix_spec(value) if isinstance(value, (str, dict)) else value

    @model_validator(mode="after")
    def _one_model(self) -> LoadConfig:
        chosen = [mode for mode in LoadMode if getattr(self, mode.field) is not None]
        if len(chosen) > 1:
            raise ValueError(f"{chosen[0]} and {chosen[1]} cannot be combined: choose one load model")
        if self.num_requests is not None and (self.mode not in (None, LoadMode.REQUEST_RATE) or self.warmup):
            why = f"not with {self.mode or '--warmup'}: every request it sends counts"
            raise ValueError(f"--num-requests applies to -u users or a --request-rate, {why}")
        if self.max_concurrency is not None and not self.open_loop:
            raise ValueError(
                "--max-concurrency applies to open-loop modes (--request-rate, --rate-ramp, --trace)"
            )
        self._check_search()
        return self

    def _check_search(self) -> None:
        if self.search is None:
            for flag, value in (("--search-min", self.search_min), ("--search-max", self.search_max)):
                if value is not None:
                    raise ValueError(f"{flag} applies to --search users|rate")
            return
        low = self.search_min if self.search_min is not None else 1.0
        if self.search is StageKind.USERS and (
            low != int(low) or (self.search_max or 1) != int(self.search_max or 1)
        ):
            raise OptionError("--search-min", low, "a user search takes whole numbers of users")
        if self.search_max is not None and self.search_max < low:
            raise OptionError("--search-max", self.search_max, f"must be at least --search-min ({low:g})")
        if self.warmup >= self.step_time:
            raise OptionError(
                "--warmup", self.warmup, f"must be shorter than --step-time ({self.step_time:g}s)"
            )

    @property
    def mode(self) -> LoadMode | None:
        """The load model (its value is its flag, ``--ramp``...), or ``None`` for Locust's ``-u/-r/-t``."""
        return next((mode for mode in LoadMode if getattr(self, mode.field) is not None), None)

    @property
    def open_loop(self) -> bool:
        if (
            self.mode in (LoadMode.REQUEST_RATE, LoadMode.RATE_RAMP, LoadMode.TRACE)
            or self.search is StageKind.RATE
        ):
            return True
        return self.matrix is not None and self.matrix.axis(MatrixKey.RATE) is not None
