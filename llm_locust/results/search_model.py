"""A capacity search, typed: its judged steps (probes), its result, and ``search.json``.

- :class:`JudgedStep`: one judged step (:func:`llm_locust.results.probe.judge_step`, gated by the
  run's validity, :func:`~llm_locust.results.probe.gate`): level, verdict, why, validity
  (``invalidity``, the client's health), the load measures and each SLO line (:class:`SloTerm`).
- :class:`SearchResult`: the ``search`` block of ``summary.json`` and what ``llm-locust capacity``
  compares (:func:`llm_locust.results.search_result.search_result`): the bracket, every probe, the
  steps that decided it (:class:`Decider`) and whether each was valid, the stop, the sentence.
- :class:`SearchLog`: the content of ``search.json`` (:mod:`llm_locust.results.search_log`): the
  search's options, each step's stage and last judgment (:class:`StepRecord`), the stop reason.

Serialized with the keys the files have always had (:meth:`Model.to_json`: the keys a value was
built with, no more), plus ``schema_version`` on :class:`SearchLog`. Reading is tolerant: a key
this version does not know is ignored, a key an older file lacks takes its default; a file
that is not a search at all raises :class:`pydantic.ValidationError` (readers turn it into one
line). The JSON Schema (``docs/schemas/search.v1.json``) is generated from these models.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from llm_locust.config.stage_kind import StageKind
from llm_locust.load.search import Phase, StopReason, Verdict
from llm_locust.load.stages import StageBlock

__all__ = [
    "SEARCH_SCHEMA_VERSION",
    "ClientHealth",
    "Decider",
    "DeciderRole",
    "Invalidity",
    "JudgedStep",
    "LevelFacts",
    "Model",
    "Rebuilt",
    "SearchLog",
    "SearchResult",
    "SearchSpecBlock",
    "SloTerm",
    "StageBlock",
    "StepRecord",
    "Window",
]

#: ``search.json``'s schema version (``docs/schemas/search.v<N>.json``): raised when a key
#: changes meaning or is removed; a new optional key keeps it.
SEARCH_SCHEMA_VERSION: Literal[1] = 1


class Model(BaseModel):
    """Tolerant reading (unknown keys ignored, missing ones defaulted), exact writing."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    def to_json(self) -> dict[str, object]:
        """The keys this value was built with (a key never given is not written), JSON types."""
        out: dict[str, object] = self.model_dump(mode="json", exclude_unset=True, by_alias=True)
        return out


class Invalidity(StrEnum):
    """Why the run does not hold a step as a measurement, and what to do about it."""

    LEVEL = "level"  # the level was not applied (users not reached, rate not sent)
    CLIENT = "client"  # the load generator was saturated or stalled over the window
    SAMPLES = "samples"  # too few requests for the SLO's lines, after running on for them


class DeciderRole(StrEnum):
    """What a deciding step stands for in a search's answer."""

    CAPACITY = "capacity"  # the highest step shown to pass below the bound
    BOUND = "bound"  # the lowest step not shown to pass
    DEMAND = "demand"  # the step measured at the demand


class Window(Model):
    start: float
    end: float


class SloTerm(Model):
    """One request SLO line at a step: its value, margin, 95 % interval and verdict."""

    objective: str
    name: str
    op: str
    threshold: float
    value: float | None = None
    margin: float | None = None
    interval: list[float | None] = Field(default_factory=list)
    n: int = 0
    verdict: Verdict
    why: str = ""


class ClientHealth(Model):
    """The load generator's health over a step's window (``results.saturation.client_block``)."""

    saturated: bool = False
    saturated_processes: list[str] = Field(default_factory=list)
    intervals: int = 0
    saturated_intervals: int = 0
    cpu_max: float | None = None
    lag_p90_ms_median: float | None = None
    lag_max_ms: float | None = None
    stall_s: float = 0.0
    own_core_intervals: int = 0
    host_others_mean: float | None = None
    host_cores: int | None = None


class LevelFacts(Model):
    """What the judgment read of the level: the users reached, when, how long at the level."""

    peak_users: int | None = None
    target_reached_s: float | None = None
    time_at_target_s: float | None = None


class JudgedStep(Model):
    """A judged search step (all in one time scale: wall clock in a run's files, deployment time
    in ``capacity.json``)."""

    index: int
    label: str
    level: float
    verdict: Verdict
    reason: str = ""
    invalidity: Invalidity | None = None
    judged_as: Verdict | None = None  # the verdict before the run's validity made it invalid
    window: Window | None = None
    extensions: int = 0
    unsettled: int = 0
    requests: int = 0
    window_s: float | None = None
    request_throughput: float = 0.0
    output_throughput: float = 0.0
    goodput_rps: float = 0.0
    goodput_output_tokens_per_s: float = 0.0
    mean_in_flight: float | None = None
    arrival_rate: float | None = None
    median_tpot_ms: float | None = None
    p95_ttft_ms: float | None = None
    p95_e2el_ms: float | None = None
    completed: int | None = None
    failed: int | None = None
    client_stalled: int | None = None
    terms: list[SloTerm] = Field(default_factory=list)
    phase: Phase | None = None
    sample_extensions: int = 0
    level_facts: LevelFacts | None = None
    client: ClientHealth | None = None

    @property
    def valid(self) -> bool:
        return self.verdict != Verdict.INVALID


class Decider(Model):
    """A step a search's answer rests on, and whether the run held it valid."""

    role: DeciderRole
    index: int
    label: str
    level: float
    verdict: Verdict
    valid: bool
    requests: int | None = None
    client_saturated: bool = False


class Rebuilt(Model):
    """A search rebuilt by ``llm-locust summarize`` from ``search.json``: rebuilt verdicts or
    request counts that differ from the run's."""

    from_: str = Field("search.json", alias="from")
    mismatches: list[str] = Field(default_factory=list)


class SearchResult(Model):
    """A capacity search's result (``summary.json``'s ``search`` block)."""

    kind: StageKind
    min: float
    max: float | None = None
    precision: float
    settled_precision: float | None = None  # the precision once the demand was shown not met
    max_steps: int
    max_extensions: int
    step_time_s: float
    steps: list[JudgedStep] = Field(default_factory=list)
    highest_pass: JudgedStep | None = None
    upper: JudgedStep | None = None
    lowest_fail: JudgedStep | None = None
    capacity: float | None = None
    demand: float | None = None
    demand_step: JudgedStep | None = None
    stop_reason: StopReason | None = None
    stop: str = ""
    broke_first: str | None = None
    withheld: str | None = None
    invalid_steps: int = 0
    decided_by: list[Decider] = Field(default_factory=list)
    sentence: str = ""
    passed: bool | None = None  # the search ended with a capacity (set once the run is over)
    rebuilt: Rebuilt | None = None


class SearchSpecBlock(Model):
    """The search's options as ``search.json`` keeps them."""

    kind: StageKind
    minimum: float
    maximum: float | None = None
    precision: float
    max_steps: int
    max_extensions: int
    demand: float | None = None
    max_reruns: int = 1
    settled_precision: float | None = None  # the precision once the demand was shown not met


class StepRecord(Model):
    """What ``search.json`` keeps of a step: its stage and its last judgment (``None`` before)."""

    index: int
    level: float
    phase: Phase | None = None
    stage: StageBlock
    begin: float
    applied: float
    window_end: float | None = None
    extensions: int | None = None
    sample_extensions: int | None = None
    unsettled: int | None = None
    level_facts: LevelFacts = LevelFacts()
    judged_at: float | None = None
    verdict: Verdict | None = None
    reason: str | None = None
    client: ClientHealth | None = None
    requests: int | None = None


class SearchLog(Model):
    """The content of ``search.json``."""

    schema_version: Literal[1] = SEARCH_SCHEMA_VERSION
    format: int = 1
    spec: SearchSpecBlock
    step_time_s: float
    t0: float
    steps: list[StepRecord] = Field(default_factory=list)
    stop_reason: StopReason | None = None

    def model_post_init(self, context: object, /) -> None:
        self.model_fields_set.add("schema_version")  # always written, even when defaulted
