"""The deployment-plan file of ``llm-locust capacity``: a demand, an SLO, a workload, and plans.

::

    demand: {concurrency: 50}              # or {users: 400, think: "lognormal:mean=20s,std=10s"}, {rate: 5}
    slo: "success>=99%,ttft_p95<=5s,e2e_p95<=30s"
    workload: {profile: chat, max_tokens: 512}
    search: {min: 8, precision: 10%, step_time: 30s, warmup: 5s}   # optional
    plans:
      - {name: A-1x4gpu-tp4, endpoints: [http://a:8000], gpus: 4, gpu_hour_cost: 2.5}
      - {name: B-1x8gpu-tp8, endpoints: [http://b:8000], gpus: 8, gpu_hour_cost: 2.5}
      - {name: C-2x4gpu-tp4, endpoints: [http://c1:8000, http://c2:8000], gpus: 8, gpu_hour_cost: 2.5}
      - {name: A-2x-predicted, predict_from: A-1x4gpu-tp4, replicas: 2, gpus: 8, gpu_hour_cost: 2.5}

- ``gpus`` is the plan's total; its replicas are its ``endpoints`` (each gets ``gpus /
  replicas``). ``gpu_hour_cost`` is dollars per GPU-hour. ``gpu`` and ``model`` are optional
  labels; two plans whose labels agree and which differ only in replica count, or only in
  GPUs per replica, are compared for scaling efficiency.
- ``workload`` keys are ``--workload`` (``profile``) and the length options of a run
  (``max_tokens``, ``input_tokens``, ``output_tokens``, ``prompt_tokens``, ``dataset``, ``seed``),
  plus ``think_time``; ``search`` keys are the ``--search-*`` options (``kind``: users or rate),
  ``step_time``, ``warmup``, ``balance``, ``balance_scope``.
- A plan with ``predict_from: PLAN`` (a measured plan of the file) has no endpoints: it is not
  measured but predicted, by the engine model calibrated on that plan's search, with its own
  ``replicas`` (default the measured plan's) and ``workload`` changes (its keys override the
  file's ``workload``; only such a plan has a ``workload`` of its own). It needs ``search.kind:
  users`` (the prediction's search is a closed loop).

Every mapping forbids unknown keys: a typo is an error naming its place (``plans[1].gpu_hour_costs``).

Pure module: no Locust, no network.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from llm_locust.config.balance import BalancePolicy, BalanceScope
from llm_locust.config.demand import Demand, parse_demand
from llm_locust.config.slo import SloSpec, parse_slo
from llm_locust.config.stage_kind import StageKind
from llm_locust.config.think import parse_think_time
from llm_locust.config.units import as_items, one_line, parse_duration, read_yaml
from llm_locust.config.urls import check_target_url

__all__ = ["Plan", "PlanFile", "PlanFileError", "SearchSettings", "WorkloadSettings", "load_plan_file"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class PlanFileError(ValueError):
    """A plan file that cannot be used: one line naming the file and the key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _seconds(value: object) -> float | None:
    return None if value is None else parse_duration(value, "duration")


class WorkloadSettings(_Strict):
    profile: str | None = None
    max_tokens: Annotated[int, Field(ge=1)] | None = None
    input_tokens: str | None = None
    output_tokens: str | None = None
    prompt_tokens: Annotated[int, Field(ge=1)] | None = None
    dataset: str | None = None
    seed: int | None = None
    think_time: str | None = None

    @field_validator("input_tokens", "output_tokens", mode="before")
    @classmethod
    def _text(cls, value: object) -> object:
        return None if value is None else str(value)

    @field_validator("think_time", mode="before")
    @classmethod
    def _think(cls, value: object) -> object:
        return None if value is None else parse_think_time(value).spec()


class SearchSettings(_Strict):
    kind: StageKind = StageKind.USERS
    min: Annotated[float, Field(gt=0)] | None = None
    max: Annotated[float, Field(gt=0)] | None = None
    precision: Annotated[float, Field(gt=0, lt=1)] = 0.10
    settled_precision: Annotated[float, Field(gt=0, lt=1)] | None = None
    max_steps: Annotated[int, Field(ge=1)] = 12
    extensions: Annotated[int, Field(ge=0)] = 2
    step_time: Annotated[float, Field(gt=0)] = 60.0
    warmup: Annotated[float, Field(ge=0)] = 0.0
    balance: BalancePolicy = BalancePolicy.ROUND_ROBIN
    balance_scope: BalanceScope = BalanceScope.REQUEST

    @field_validator("precision", "settled_precision", mode="before")
    @classmethod
    def _percent(cls, value: object) -> object:
        if isinstance(value, str) and value.strip().endswith("%"):
            return float(value.strip()[:-1]) / 100
        return value

    @field_validator("step_time", "warmup", mode="before")
    @classmethod
    def _duration(cls, value: object) -> object:
        return _seconds(value)


class Plan(_Strict):
    name: str
    endpoints: tuple[str, ...] = ()
    gpus: Annotated[int, Field(ge=1)]
    gpu_hour_cost: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    gpu: str | None = None
    model: str | None = None
    predict_from: str | None = None
    #: the measured plan's endpoints, or a predicted plan's engines (filled in before validation)
    replicas: Annotated[int, Field(ge=1)] = 1
    workload: WorkloadSettings | None = None

    @model_validator(mode="before")
    @classmethod
    def _count(cls, data: object) -> object:
        if isinstance(data, dict) and data.get("predict_from") is None and "replicas" not in data:
            urls = data.get("endpoints")
            return {**data, "replicas": 1 if isinstance(urls, str) else max(1, len(urls or ()))}
        return data

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(f"{value!r}: letters, digits, '.', '_' and '-' only (it names a folder)")
        return value

    @field_validator("endpoints", mode="before")
    @classmethod
    def _urls(cls, value: object) -> object:
        urls = [value] if isinstance(value, str) else list(as_items(value or ()))
        return tuple(check_target_url(u, "endpoint") for u in urls)

    @model_validator(mode="after")
    def _split(self) -> Plan:
        if self.predict_from is None:
            if not self.endpoints:
                raise ValueError(
                    "endpoints: missing (a plan is measured at its endpoints, or predict_from: PLAN)"
                )
            if self.workload is not None:
                raise ValueError("workload: only a plan with predict_from has a workload of its own")
            if self.replicas != len(self.endpoints):
                raise ValueError(f"replicas: {self.replicas}, but {len(self.endpoints)} endpoints")
        elif self.endpoints:
            raise ValueError("endpoints: a plan with predict_from is predicted, not measured: no endpoints")
        if self.gpus % self.replicas:
            raise ValueError(f"{self.gpus} GPUs do not split evenly over {self.replicas} replicas")
        return self

    @property
    def predicted(self) -> bool:
        return self.predict_from is not None

    @property
    def gpus_per_replica(self) -> int:
        return self.gpus // self.replicas


class PlanFile(_Strict):
    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)
    demand: Demand
    slo: SloSpec
    workload: WorkloadSettings = WorkloadSettings()
    search: SearchSettings = SearchSettings()
    plans: Annotated[tuple[Plan, ...], Field(min_length=1)]

    @field_validator("demand", mode="before")
    @classmethod
    def _demand(cls, value: object) -> object:
        return parse_demand(value) if isinstance(value, (str, dict)) else value

    @field_validator("slo", mode="before")
    @classmethod
    def _slo(cls, value: object) -> object:
        return parse_slo(value) if isinstance(value, (str, list, dict)) else value

    @model_validator(mode="before")
    @classmethod
    def _predicted_replicas(cls, data: object) -> object:
        """A predicted plan without ``replicas`` has its measured plan's."""
        plans = data.get("plans") if isinstance(data, dict) else None
        if not isinstance(data, dict) or not isinstance(plans, list):
            return data
        urls = {p.get("name"): p.get("endpoints") for p in plans if isinstance(p, dict)}
        filled = []
        for p in plans:
            if isinstance(p, dict) and p.get("predict_from") is not None and "replicas" not in p:
                source = urls.get(p["predict_from"])
                p = {**p, "replicas": 1 if isinstance(source, str) else max(1, len(source or ()))}
            filled.append(p)
        return {**data, "plans": filled}

    @model_validator(mode="after")
    def _names(self) -> PlanFile:
        names = [p.name for p in self.plans]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"plan name {dupes[0]!r} is used twice")
        measured = {p.name for p in self.plans if not p.predicted}
        for p in self.plans:
            if p.predict_from is not None and p.predict_from not in measured:
                raise ValueError(
                    f"plan {p.name!r}: predict_from: {p.predict_from!r} is not a measured plan of this file"
                )
            if p.predicted and self.search.kind is not StageKind.USERS:
                raise ValueError(f"plan {p.name!r}: predict_from needs search.kind users (a closed loop)")
        if self.search.kind is StageKind.RATE and self.workload.think_time:
            raise ValueError("workload.think_time paces users: it cannot go with search.kind rate")
        return self


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def load_plan_file(path: str | Path) -> PlanFile:
    """Read and validate a plan file; :class:`PlanFileError` with one line on any problem."""
    try:
        data = read_yaml(path, str(path))
    except ValueError as exc:
        raise PlanFileError(one_line(exc)) from None
    if not isinstance(data, dict):
        raise PlanFileError(f"{path}: expected a mapping with demand, slo, workload, search and plans")
    try:
        return PlanFile.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        # a typo'd key is also a missing one: name the typo, the cause
        err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        where = _where(tuple(err["loc"]))
        if err["type"] == "extra_forbidden":
            raise PlanFileError(f"{path}: {where}: unknown key") from None
        if err["type"] == "missing":
            raise PlanFileError(f"{path}: {where}: missing") from None
        cause = (err.get("ctx") or {}).get("error")
        message = str(cause) if cause is not None else str(err["msg"]).removeprefix("Value error, ")
        raise PlanFileError(
            one_line(f"{path}: {where}: {message}" if where else f"{path}: {message}")
        ) from None
