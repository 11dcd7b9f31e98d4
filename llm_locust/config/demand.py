"""The demand: the peak load a deployment must carry, against which a capacity is judged.

Three ways to state it (``--demand`` text, or a plan file's ``demand:`` mapping)::

    users=400,think=lognormal:mean=20s,std=10s    400 people, pausing between requests
    concurrency=50                                50 requests in flight at peak
    rate=5                                        5 requests per second at peak

``think`` takes ``--think-time``'s grammar (:mod:`llm_locust.config.think`) and only goes with
``users``; being last, its own commas need no quoting. A mapping has the same keys
(``{users: 400, think: "lognormal:mean=20s,std=10s"}``); any other key is an error naming it.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from llm_locust.config.jsontypes import JsonObject
from llm_locust.config.think import ThinkTime, parse_think_time

__all__ = ["DEMAND_KINDS", "Demand", "DemandKind", "parse_demand"]


class DemandKind(StrEnum):
    """How the demand is stated (its value is the key: ``users=``, ``concurrency=``, ``rate=``)."""

    USERS = "users"  # people, each pausing for its think time
    CONCURRENCY = "concurrency"  # requests in flight at peak
    RATE = "rate"  # requests per second at peak


DEMAND_KINDS = tuple(kind.value for kind in DemandKind)


class Demand(BaseModel):
    """One of ``users`` (with an optional ``think``), ``concurrency`` or ``rate``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    users: Annotated[int, Field(ge=1)] | None = None
    think: str | None = None
    concurrency: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    rate: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None

    @field_validator("think", mode="before")
    @classmethod
    def _think(cls, value: object) -> object:
        return None if value is None else parse_think_time(value).spec()

    @model_validator(mode="after")
    def _one(self) -> Demand:
        given = [k for k in DEMAND_KINDS if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of users=N, concurrency=N or rate=R")
        if self.think is not None and self.users is None:
            raise ValueError("think= goes with users=N")
        return self

    @property
    def kind(self) -> DemandKind:
        return next(k for k in DemandKind if getattr(self, k.value) is not None)

    @property
    def value(self) -> float:
        return float(getattr(self, self.kind.value))

    @property
    def think_time(self) -> ThinkTime:
        return parse_think_time(self.think or 0)

    def text(self) -> str:
        """``50 concurrent``, ``5 req/s``, ``400 users (think lognormal:mean=20s,std=10s)``."""
        if self.kind is DemandKind.CONCURRENCY:
            return f"{self.value:g} concurrent"
        if self.kind is DemandKind.RATE:
            return f"{self.value:g} req/s"
        return f"{self.users} users" + (f" (think {self.think})" if self.think else "")

    def to_json(self) -> JsonObject:
        return {k: v for k, v in self.model_dump().items() if v is not None}


def _from_text(text: str) -> dict[str, str]:
    head, sep, think = text.partition("think=")
    data: dict[str, str] = {"think": think.strip()} if sep else {}
    for item in (p.strip() for p in head.split(",") if p.strip()):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"expected key=value, got {item!r}")
        data[key.strip().lower()] = value.strip()
    return data


def parse_demand(spec: str | Mapping[str, object]) -> Demand:
    """``--demand`` text or a mapping -> :class:`Demand`; ``ValueError`` with one line."""
    data = dict(spec) if isinstance(spec, Mapping) else _from_text(str(spec))
    try:
        return Demand.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        where = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            raise ValueError(f"unknown key {where!r} (use users, think, concurrency or rate)") from None
        cause = (err.get("ctx") or {}).get("error")
        message = str(cause) if cause is not None else str(err["msg"]).removeprefix("Value error, ")
        raise ValueError(f"{where}: {message}" if where else message) from None
