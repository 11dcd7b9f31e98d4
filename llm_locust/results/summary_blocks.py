"""The blocks of the run summary (``summary.json``): the SLO and its objectives, the measured
span, every record's counts, the exclusions, the client's health, concurrency, a master's
ingest, the waits, the demand. Models of :mod:`llm_locust.results.summary_model`, which says
why pydantic; each block keeps the keys it does not name (``extra="allow"``).

Pure module: no Locust, no network.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from llm_locust.config.jsontypes import JsonObject, JsonValue
from llm_locust.load.search import Verdict

__all__ = [
    "Block",
    "BurstsBlock",
    "ClientBlock",
    "Concurrency",
    "ConfigBlock",
    "DemandBlock",
    "Excluded",
    "ItlPrecision",
    "JsonObject",
    "LittlesLaw",
    "MasterBlock",
    "MeasuredSpan",
    "PrefixCacheBlock",
    "ReasoningBlock",
    "RecordsBlock",
    "RunTimeScale",
    "Slo",
    "SloLine",
    "ToolsBlock",
    "Wait",
    "Window",
    "WorkerSilence",
    "WorkerStop",
]


class Block(BaseModel):
    """A block of the summary: keys it does not name are kept as they were."""

    model_config = ConfigDict(extra="allow", use_enum_values=False)

    def to_json(self) -> JsonObject:
        """The block as the file writes it: the keys it was given (and those it keeps), as JSON."""
        out: JsonObject = self.model_dump(mode="json", exclude_unset=True)
        return out


class SloLine(Block):
    """One objective of ``--slo`` as judged: its measured value (seconds, or a share) and verdict."""

    objective: str
    name: str = ""
    kind: str = "request"  # a config.slo.SloKind value, kept as text so any summary reads back
    op: str = "<"
    threshold: float | None = None
    measured: float | None = None
    n: int | None = None
    passed: bool = False
    interval: list[float | None] = Field(default_factory=list)
    verdict: Verdict = Verdict.INCONCLUSIVE
    note: str | None = None


class Slo(Block):
    """The ``slo`` block: each objective, the verdict, the goodput."""

    passed: bool = False
    verdict: Verdict = Verdict.INCONCLUSIVE
    objectives: list[SloLine] = Field(default_factory=list)
    requests: int = 0
    succeeded: int = 0
    success_rate: float | None = None
    good_requests: int = 0
    good_fraction: float | None = None
    goodput_rps: float = 0.0
    goodput_output_tokens_per_s: float | None = None
    duration_s: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _verdict_of_old_files(cls, data: object) -> object:
        """A file from before the verdict: the point estimate's pass or fail."""
        if isinstance(data, dict) and "verdict" not in data:
            return {**data, "verdict": "pass" if data.get("passed") else "fail"}
        return data


class ItlPrecision(Block):
    """How the ITL percentiles were computed: exactly, or from a histogram (its error)."""

    method: str = "exact"
    gaps: int = 0


class Window(Block):
    """A span of wall-clock time (Unix seconds)."""

    start: float
    end: float


class LittlesLaw(Block):
    """L = λW over a stage: mean in flight against arrival rate x mean E2E."""

    mean_in_flight: float | None = None
    arrival_rate: float | None = None
    mean_e2e: float | None = None
    product: float | None = None


class Excluded(Block):
    """Records the statistics leave out, by why."""

    incomplete: int = 0
    warmup: int = 0
    rampup: int = 0
    outside: int = 0


class ClientBlock(Block):
    """The load generator's own health over a span (:mod:`llm_locust.results.saturation`)."""

    saturated: bool = False
    saturated_processes: list[JsonValue] = Field(default_factory=list)
    intervals: int = 0
    saturated_intervals: int = 0
    cpu_max: float | None = None
    lag_p90_ms_median: float | None = None
    lag_max_ms: float | None = None
    stall_s: float | None = None
    own_core_intervals: int = 0
    host_others_mean: float | None = None
    host_cores: int | None = None


class MeasuredSpan(Block):
    """The wall time the run's rates are over: its measured windows (not warm-up, not ramp-up)."""

    start: float | None = None
    end: float | None = None
    seconds: float = 0.0
    windows: int = 0
    test_seconds: float | None = None
    excluded_s: float | None = None
    excluded: str | None = None


class RecordsBlock(Block):
    """Every record of the test, as the live view and the exporter count them."""

    requests: dict[str, int] = Field(default_factory=dict)
    total: int = 0
    completed: int = 0
    failed: int = 0
    incomplete: int = 0
    cancelled: int = 0
    prompt_tokens: int = 0
    generation_tokens: int = 0
    reasoning_tokens: int = 0
    cached_tokens: int = 0
    timed: int = 0


class Concurrency(Block):
    """Users, requests in flight and Little's law over the whole test."""

    peak_users: int = 0
    peak_in_flight: int = 0
    think_time_mean_s: float | None = None
    span_s: float | None = None
    mean_in_flight: float | None = None
    arrival_rate: float | None = None
    mean_e2e_s: float | None = None
    littles_law_product: float | None = None
    closed_loop_expected_in_flight: float | None = None


class MasterBlock(Block):
    """A master's ingest of its workers' records (``runtime/ingest.py``)."""

    batches: int = 0
    rows: int = 0
    lag_max_s: float = 0.0
    rows_behind_max: int = 0
    behind_s: float | None = None
    fell_behind: bool = False
    warning: str | None = None
    note: str | None = None


class WorkerStop(Block):
    """A worker that stopped its load on its own."""

    index: int
    worker: str
    at: float | None = None
    why: str = ""


class WorkerSilence(Block):
    """A worker that stopped answering its master (no heartbeat) during the test: from its last
    heartbeat ``since`` to the one that ended the silence (``until``; ``None``: none came before
    the test ended). Unix times."""

    index: int
    worker: str
    since: float
    until: float | None = None


class Wait(Block):
    """Users paused for one reason (``waits``)."""

    pauses: int = 0
    total_s: float = 0.0


class DemandBlock(Block):
    """``--demand`` judged against the search's or the stages' answer: the sentence and the
    verdict, the demand as given (one of ``users`` with its ``think``, ``concurrency``, ``rate``),
    its ``unit``, the capacity in that unit, the stage it was measured at, the headroom."""

    text: str = ""
    meets: bool | None = None
    users: int | None = None
    think: str | None = None
    concurrency: float | None = None
    rate: float | None = None
    unit: str | None = None
    capacity: float | None = None
    capacity_stage: int | None = None
    headroom: float | None = None


class ReasoningBlock(Block):
    """Requests with a reasoning phase: token totals and percentiles, where the split came from."""

    requests: int = 0
    with_reasoning: int = 0
    total_reasoning_tokens: int = 0
    total_answer_tokens: int = 0
    mean_reasoning_tokens: float | None = None
    p50_reasoning_tokens: float | None = None
    p90_reasoning_tokens: float | None = None
    p99_reasoning_tokens: float | None = None
    mean_answer_tokens: float | None = None
    p50_answer_tokens: float | None = None
    p90_answer_tokens: float | None = None
    p99_answer_tokens: float | None = None
    sources: dict[str, int] = Field(default_factory=dict)
    first_chunk_batched: int = 0
    phases: dict[str, str] = Field(default_factory=dict)


class ToolsBlock(Block):
    """``--tools``: requests that offered tools, those answered with a call, the calls."""

    requests_offered: int = 0
    requests_with_tool_calls: int = 0
    tool_calls: int = 0
    args_json_ok_share: float | None = None


class PrefixCacheBlock(Block):
    """Prefix-cache hits of the requests whose server reported ``cached_tokens``."""

    requests_reporting: int = 0
    hits: int = 0
    hit_ratio: float = 0.0
    cached_tokens: int = 0
    prompt_tokens: int = 0
    token_hit_ratio: float | None = None


class BurstsBlock(Block):
    """``--burst``: the waves, their requests, how long each took to drain."""

    waves: int = 0
    requests: int = 0
    completed: int = 0
    mean_queue_drain_s: float | None = None
    max_queue_drain_s: float | None = None
    max_drain_s: float | None = None
    per_wave: list[JsonObject] = Field(default_factory=list)


class RunTimeScale(Block):
    """``config.time_scale``: the target ran ``target_speedup`` times faster than its deployment
    (a simulator at ``--speedup``), and this folder's numbers are in the measured ``clock``."""

    clock: str = "wall"
    target_speedup: float = 1.0


class ConfigBlock(Block):
    """``config``: what was run (no secrets): the target, the client's peak CPU, when the test
    started and stopped, the workload and load model as described, and ``options`` (the run's
    options as given, :func:`~llm_locust.results.finalize.options_block`). A distributed run
    adds the workers missing or without a final batch; other keys are kept as written."""

    llm_locust_version: str | None = None
    target: str | None = None
    model: str | None = None
    endpoint: str | None = None
    role: str | None = None
    peak_users: int | None = None
    client_cpu_peak_percent: float | None = None
    client_cpu_saturated: bool | None = None
    start_time: float | None = None
    stop_time: float | None = None
    plan_t0: float | None = None
    workers_without_final_batch: list[str] | None = None
    workers_missing: list[str] | None = None
    max_model_len: int | None = None
    preflight_sent: JsonValue = None
    workload: JsonValue = None
    load_model: JsonValue = None
    time_scale: RunTimeScale | None = None
    options: JsonObject = Field(default_factory=dict)
    gpus: float | None = None

    def option(self, name: str) -> JsonValue:
        """The run's option ``name`` as recorded (``None``: not recorded)."""
        return self.options.get(name)

    @property
    def speedup(self) -> float:
        """How many times faster than its deployment the run's target ran (``--target-speedup``;
        1: real time, or not recorded)."""
        value = self.option("target_speedup")
        return float(value) if isinstance(value, int | float) and value > 0 else 1.0
