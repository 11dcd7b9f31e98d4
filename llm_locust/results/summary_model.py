"""The run summary (``summary.json``) as typed models: the run, its stage rows, their blocks.

Why pydantic (v2) and not msgspec: it is already a dependency (the configuration,
:mod:`llm_locust.config.model`), so no new one, and it validates a file read back (an old
``summary.json`` loads with defaults) and generates the JSON Schema the project publishes
(:mod:`llm_locust.results.schemas`, ``docs/schemas/summary.v1.json``) from the same classes.

The latency keys stay ``vllm bench serve``'s flat ones (``mean_ttft_ms``, ``p95_ttft_ms``,
``p99.9_ttft_ms`` for ``--percentiles 99.9``): real users' scripts read them. In the model
each latency is one :class:`Latency` (mean, median, std and a ``{q: ms}`` map of its
percentiles), gathered from the flat keys when a file is read and flattened back when it is
written, by one codec (:mod:`llm_locust.results.latency_keys`), so ``summary.ttft.p(95)``
reads what ``p95_ttft_ms`` holds. The schema names the flat keys by pattern
(``patternProperties``).

The ``search`` block is :class:`~llm_locust.results.search_model.SearchResult` (the model
``search.json`` and ``capacity.json`` use); ``windows`` and ``drift`` are those of
:mod:`llm_locust.results.series_model`, ``config`` is :class:`ConfigBlock`. A block not typed
here yet is a JSON value (:data:`JsonObject`): typed, never ``Any``. Keys a
model does not name are kept as they were (``extra="allow"``), so no number a run wrote is
ever lost when read back.

Pure module: no Locust, no network.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import ClassVar, Self

import numpy as np
from pydantic import (
    Field,
    GetJsonSchemaHandler,
    JsonValue,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from llm_locust.config.jsontypes import number
from llm_locust.config.stage_kind import StageKind
from llm_locust.load.search import Verdict
from llm_locust.results.ending import Interruption, WorkerQuit
from llm_locust.results.latency_keys import (
    LATENCY_KEY,
    LATENCY_NAMES,
    Latency,
    file_key,
    gather_latencies,
    latency_name,
)
from llm_locust.results.search_model import SearchResult
from llm_locust.results.series_model import DriftBlock, WindowRow
from llm_locust.results.session_model import SessionsBlock
from llm_locust.results.summary_blocks import (
    Block,
    BurstsBlock,
    ClientBlock,
    Concurrency,
    ConfigBlock,
    DemandBlock,
    Excluded,
    ItlPrecision,
    JsonObject,
    LittlesLaw,
    MasterBlock,
    MeasuredSpan,
    PrefixCacheBlock,
    ReasoningBlock,
    RecordsBlock,
    Slo,
    SloLine,
    ToolsBlock,
    Wait,
    Window,
    WorkerSilence,
    WorkerStop,
)

__all__ = [
    "LATENCY_NAMES",
    "SCHEMA_VERSION",
    "ClientBlock",
    "Concurrency",
    "DemandBlock",
    "Excluded",
    "ItlPrecision",
    "JsonObject",
    "Latency",
    "LittlesLaw",
    "MasterBlock",
    "MeasuredSpan",
    "RecordsBlock",
    "ReplicaRow",
    "RunSummary",
    "Slo",
    "SloLine",
    "StageRow",
    "Stats",
    "Wait",
    "Window",
    "WorkerSilence",
    "WorkerStop",
    "file_key",
    "jsonable",
]

#: ``summary.json``'s schema version: raised when a key changes meaning or type, or goes away
#: (a new optional key keeps it); ``docs/schemas/summary.v<N>.json`` is generated for each.
SCHEMA_VERSION = 1


class Stats(Block):
    """What :func:`~llm_locust.results.summary.summarize` states over some records: counts,
    rates over the measured span, every latency, the traffic blocks. The run and each stage
    row are these plus their own keys."""

    completed: int = 0
    failed: int = 0
    incomplete: int = 0
    cancelled: int = 0
    duration: float = 0.0
    total_input_tokens: int = 0
    total_output_tokens: int = 0
    request_throughput: float = 0.0
    output_throughput: float = 0.0
    total_token_throughput: float = 0.0
    max_concurrent_requests: int = 0
    ttft: Latency | None = None
    tpot: Latency | None = None
    itl: Latency | None = None
    e2el: Latency | None = None
    itl_precision: ItlPrecision | None = None
    itl_zero_gap_share: float | None = None
    ttft_visible: Latency | None = None
    ttft_burst: Latency | None = None
    ttft_base: Latency | None = None
    ttft_cache_hit: Latency | None = None
    ttft_cache_miss: Latency | None = None
    time_to_first_tool_call: Latency | None = None
    time_to_tool_args_complete: Latency | None = None
    reasoning: ReasoningBlock | None = None
    tools: ToolsBlock | None = None
    prefix_cache: PrefixCacheBlock | None = None
    bursts: BurstsBlock | None = None
    sessions: SessionsBlock | None = None  # results/sessions.py
    # by failure class; vLLM's per-request list under --save-detailed (errors_by_class then)
    errors: dict[str, int] | list[str] = Field(default_factory=dict)
    token_sources: dict[str, int] = Field(default_factory=dict)
    usage_conflicts: int = 0
    usage_conflict_counts: JsonObject | None = None
    tpot_undefined: int = 0
    client_stalled: int = 0
    # open loop (a send lag recorded)
    achieved_request_rate: float | None = None
    waited_for_slot: int | None = None
    p50_send_lag_ms: float | None = None
    p99_send_lag_ms: float | None = None
    max_send_lag_ms: float | None = None
    ttft_intended: Latency | None = None
    e2el_intended: Latency | None = None

    _LATENCIES: ClassVar[frozenset[str]] = frozenset(LATENCY_NAMES)
    #: The keys a file states first, before the statistics (what the row or file is).
    _FIRST: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="before")
    @classmethod
    def _flat_keys(cls, data: object) -> object:
        """A file's flat vLLM keys (``p95_ttft_ms``...) into one :class:`Latency` each."""
        return gather_latencies(data) if isinstance(data, dict) else data

    @model_serializer(mode="wrap")
    def _flat_out(self, handler: SerializerFunctionWrapHandler) -> JsonObject:
        """Each :class:`Latency` back into its flat keys, where it stands."""
        out: JsonObject = {}
        for key, value in handler(self).items():
            latency = getattr(self, key, None) if key in self._LATENCIES else None
            if isinstance(latency, Latency):
                out.update(latency.flat(key))
            else:
                out[key] = value
        first = {key: out.pop(key) for key in self._FIRST if key in out}
        return first | out

    @classmethod
    def __get_pydantic_json_schema__(cls, core: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        """The schema of the file: the flat latency keys by pattern, not the model's nesting."""
        schema = handler.resolve_ref_schema(handler(core))
        for name in LATENCY_NAMES:
            schema.get("properties", {}).pop(name, None)
        number = {"anyOf": [{"type": "number"}, {"type": "null"}]}
        schema["patternProperties"] = {LATENCY_KEY.pattern: number}
        return schema

    @classmethod
    def of(cls, data: Mapping[str, object]) -> Self:
        """The model of a block built as a dict (its numpy scalars made plain JSON first)."""
        return cls.model_validate(json.loads(json.dumps(data, default=jsonable)))

    def stated(self, key: str) -> float | None:
        """The number the file key ``key`` states (``p95_ttft_ms``, ``request_throughput``,
        ``completed``...); ``None``: not stated, or not a number."""
        match = LATENCY_KEY.match(key)
        if match is not None:
            stat, q, name = match.groups()
            return self.ms(stat or f"p{q}", name)
        value = getattr(self, key) if key in type(self).model_fields else None
        return number(value)

    def latency(self, name: str) -> Latency:
        """The statistics of latency ``name`` (one of :data:`LATENCY_NAMES`); empty when absent."""
        value = getattr(self, name) if name in self._LATENCIES else None
        return value if isinstance(value, Latency) else Latency()

    def ms(self, stat: str, name: str) -> float | None:
        """``mean``/``median``/``std``/``p95``/``p99.9`` of latency ``name`` (ms), as the key
        ``<stat>_<name>_ms`` states it; ``None``: not stated."""
        latency = self.latency(name)
        if stat in ("mean", "median", "std"):
            value: float | None = getattr(latency, stat)
            return value
        return latency.p(float(stat.removeprefix("p")))


class StageRow(Stats):
    """One stage of the stage table (or one step of a capacity search)."""

    #: What the stage is (its plan's :meth:`~llm_locust.load.stages.Stage.to_json`) before its statistics.
    _FIRST = ("index", "kind", "target", "start_s", "duration_s", "spawn_rate", "warmup_s", "label")

    index: int = 0
    kind: StageKind = StageKind.USERS
    target: float = 0.0
    start_s: float | None = None
    duration_s: float | None = None
    spawn_rate: float | None = None
    warmup_s: float | None = None
    label: str = ""
    peak_users: int | None = None
    sent_rate: float | None = None
    target_reached_s: float | None = None
    time_at_target_s: float | None = None
    excluded: Excluded | None = None
    span: Window | None = None
    window: Window | None = None
    littles_law: LittlesLaw | None = None
    invalid_reason: str | None = None
    valid: bool | None = None
    slo: Slo | None = None
    verdict: Verdict | None = None
    client: ClientBlock | None = None
    drift: DriftBlock | None = None


class ReplicaRow(Stats):
    """One of ``--endpoints``: its share of the requests, outcomes, TTFT and E2E percentiles."""

    requests: int = 0
    share: float | None = None


class RunSummary(Stats):
    """``summary.json``: the run's statistics over its measured records, and its blocks."""

    _FIRST = ("schema_version",)

    schema_version: int | None = None  # None: a file written before the schema had a version
    percentiles: list[float] | None = None
    measured_span: MeasuredSpan | None = None
    records: RecordsBlock | None = None
    excluded: Excluded | None = None
    warmup_requests: int = 0
    rampup_requests: int = 0
    length_accuracy: JsonObject | None = None
    length_policy: str | None = None
    slo: Slo | None = None
    generator_lagging: bool | None = None
    stages: list[StageRow] | None = None
    search: SearchResult | None = None
    capacity: str | None = None
    highest_passing_stage: int | None = None
    client: ClientBlock | None = None
    client_saturated: str | None = None
    concurrency: Concurrency | None = None
    demand: DemandBlock | None = None
    replicas: dict[str, ReplicaRow] | None = None
    master: MasterBlock | None = None
    workers_stopped_early: list[WorkerStop] | None = None
    workers_silent: list[WorkerSilence] | None = None
    workers_quit: list[WorkerQuit] | None = None
    #: open loop, workers quit: planned arrivals up to the stop less the records (the departed's share)
    arrivals_not_sent: int | None = None
    interrupted: bool = False
    interrupted_by: str | None = None
    interruption: Interruption | None = None
    drain: JsonObject | None = None
    config: ConfigBlock = Field(default_factory=ConfigBlock)
    error_messages: dict[str, list[list[JsonValue]]] = Field(default_factory=dict)
    waits: dict[str, Wait] = Field(default_factory=dict)
    window_s: float | None = None
    windows: list[WindowRow] | None = None
    drift: DriftBlock | None = None
    errors_by_class: dict[str, int] | None = None
    rebuilt: JsonObject | None = None
    rejudged: JsonObject | None = None

    @classmethod
    def of(cls, data: Mapping[str, object]) -> Self:
        """The model of a summary built as a dict (its numpy scalars made plain JSON first),
        with this version of the schema."""
        return super().of({"schema_version": SCHEMA_VERSION, **data})

    @classmethod
    def checked(cls, data: Mapping[str, object]) -> tuple[RunSummary, str | None]:
        """:meth:`of`, and ``None``; or, when the model refuses a key, the model without the keys
        it refused and the reason (the caller writes ``data`` as computed and says so)."""
        try:
            return cls.of(data), None
        except ValidationError as exc:
            refused = {str(e["loc"][0]) for e in exc.errors() if e["loc"]}
            kept = {
                key: value
                for key, value in json.loads(json.dumps(data, default=jsonable)).items()
                if key not in refused and latency_name(key) not in refused
            }
            try:
                return cls.model_validate(kept), str(exc)
            except ValidationError:
                return cls(), str(exc)

    def to_json(self) -> JsonObject:
        """The keys of ``summary.json``: exactly those the run stated, flat latency keys included."""
        out: JsonObject = self.model_dump(exclude_unset=True, by_alias=True)
        return out


def jsonable(value: object) -> JsonValue:
    """What ``json`` cannot write as it is: a numpy scalar or array as plain numbers."""
    if isinstance(value, np.generic | np.ndarray):
        plain: JsonValue = value.tolist()
        return plain
    if isinstance(value, float) and math.isnan(value):
        return None
    return str(value)
