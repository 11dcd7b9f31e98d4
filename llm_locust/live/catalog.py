"""The metric catalog: every series llm-locust exports, described once.

The Prometheus exporter on the Locust master, the Grafana dashboard and the tests all
read names, help texts, label sets and bucket edges from here, so a rename or a new
bucket edge cannot drift between them. Pure module: no Locust, no network, no
``prometheus_client`` (the exporter turns :class:`MetricSpec` into live metrics).

Conventions (https://prometheus.io/docs/practices/naming/):

- every name starts with ``llm_locust_`` and uses base units: seconds, tokens, ratios
  in 0..1 (never milliseconds or percent);
- :attr:`MetricSpec.name` is always the full name as it appears on ``/metrics``. For
  counters that includes the ``_total`` suffix (``llm_locust_requests_total``).
  ``prometheus_client.Counter`` and ``CounterMetricFamily`` both accept that name and
  strip/re-add ``_total`` themselves; :attr:`MetricSpec.family` gives the name
  without it where an API wants the bare family name;
- histogram bucket edges equal vLLM's server-side histograms of the same meaning, so
  client-side and server-side quantiles interpolate over the same buckets and can be
  overlaid in Grafana: TTFT and ``vllm:time_to_first_token_seconds``, TPOT and
  ``vllm:request_time_per_output_token_seconds`` (per request, like ours), ITL and
  ``vllm:inter_token_latency_seconds`` (per token; before vLLM 0.11
  ``vllm:time_per_output_token_seconds``), E2E and ``vllm:e2e_request_latency_seconds``. Server
  TTFT excludes network and HTTP/SSE overhead. The simulator serves the same edges.

Per endpoint: with ``--endpoints`` of at most :data:`MAX_ENDPOINT_LABELS` replicas, the series
of :data:`ENDPOINT_SERIES` (requests by outcome, prompt and generation tokens, the latency
histograms) carry an ``endpoint`` label (:func:`endpoint_label`: the URL without credentials,
query or fragment), one series per endpoint and none without it, so ``sum(...)`` and ``sum by
(le)`` read the same totals either way. More endpoints, or none given: no ``endpoint`` label
(see the exporter's docstring for the cardinality rule).

Run filtering: only ``llm_locust_run_info`` carries ``run_id``. Dashboard queries join
every series to it on the scrape target (``on(instance, job)``), which keeps working
when one Prometheus scrapes several masters; the exporter must therefore expose
exactly one ``llm_locust_run_info`` series at a time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from llm_locust.config.redact import strip_credentials

__all__ = [
    "CACHED_PROMPT_TOKENS",
    "CATALOG",
    "CATALOG_BY_NAME",
    "E2E_LATENCY",
    "E2E_REQUEST_LATENCY_BUCKETS",
    "ENDPOINT_LABEL",
    "ENDPOINT_SERIES",
    "GENERATION_TOKENS",
    "INTER_TOKEN_LATENCY",
    "INTER_TOKEN_LATENCY_BUCKETS",
    "IN_FLIGHT",
    "MASTER_BACKLOG_ROWS",
    "MASTER_INGEST_LAG",
    "MAX_ENDPOINT_LABELS",
    "PREFIX",
    "PROMPT_TOKENS",
    "REASONING_TOKENS",
    "REQUESTS",
    "RUN_INFO",
    "SERVER_GPU_MEMORY_USAGE",
    "SERVER_GPU_MEMORY_USED",
    "SERVER_GPU_UTILIZATION",
    "SERVER_KV_CACHE_USAGE",
    "SERVER_NUM_REQUESTS_RUNNING",
    "SERVER_NUM_REQUESTS_WAITING",
    "SLO_GOOD_GENERATION_TOKENS",
    "SLO_GOOD_REQUESTS",
    "STAGE",
    "TARGET_REQUEST_RATE",
    "TIME_PER_OUTPUT_TOKEN",
    "TIME_PER_OUTPUT_TOKEN_BUCKETS",
    "TIME_TO_FIRST_TOKEN",
    "TIME_TO_FIRST_TOKEN_BUCKETS",
    "TIME_TO_FIRST_TOOL_CALL",
    "TIME_TO_FIRST_VISIBLE_TOKEN",
    "TIME_TO_TOOL_ARGS_COMPLETE",
    "USERS",
    "WORKERS",
    "MetricSpec",
    "buckets_with_thresholds",
    "endpoint_label",
]

PREFIX = "llm_locust_"
Kind = Literal["counter", "gauge", "histogram"]
_HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


@dataclass(frozen=True)
class MetricSpec:
    """One exported metric family.

    ``name`` is the exposed name (counters include ``_total``); ``buckets`` are the
    finite ``le`` edges of a histogram (``+Inf`` is implicit) and ``None`` otherwise;
    ``unit`` is the base unit the value is in ("" for plain counts).
    """

    name: str
    kind: Kind
    help: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] | None = None
    unit: str = ""

    @property
    def family(self) -> str:
        """The name without a counter's ``_total`` suffix."""
        if self.kind == "counter" and self.name.endswith("_total"):
            return self.name[: -len("_total")]
        return self.name

    @property
    def series_names(self) -> tuple[str, ...]:
        """Sample names this family puts on ``/metrics``."""
        if self.kind == "histogram":
            return tuple(self.name + s for s in _HISTOGRAM_SUFFIXES)
        return (self.name,)


# --- Bucket edges ---------------------------------------------------------------
# Copied as numbers from vLLM's PrometheusStatLogger, vllm/v1/metrics/loggers.py
# (vLLM 0.11/0.12; the TTFT and E2E edges are unchanged since the v0 engine's
# vllm/engine/metrics.py). In vLLM 0.11+ vllm:inter_token_latency_seconds (per token)
# and vllm:request_time_per_output_token_seconds (per request) share the edges that
# the deprecated vllm:time_per_output_token_seconds used.

TIME_TO_FIRST_TOKEN_BUCKETS: tuple[float, ...] = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
    1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
)  # fmt: skip
INTER_TOKEN_LATENCY_BUCKETS: tuple[float, ...] = (
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
    1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
)  # fmt: skip
TIME_PER_OUTPUT_TOKEN_BUCKETS: tuple[float, ...] = INTER_TOKEN_LATENCY_BUCKETS
E2E_REQUEST_LATENCY_BUCKETS: tuple[float, ...] = (
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
    40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0,
)  # fmt: skip


def buckets_with_thresholds(base: Sequence[float], thresholds: Iterable[float]) -> tuple[float, ...]:
    """``base`` plus each SLO threshold as an exact edge, sorted and deduplicated.

    With the threshold as an edge, ``X_bucket{le="<threshold>"}`` counts exactly the
    observations that met it, so an SLO ratio needs no interpolation. Edges must be
    finite (``+Inf`` is implicit in a Prometheus histogram).
    """
    edges = [float(x) for x in (*base, *thresholds)]
    bad = [x for x in edges if not math.isfinite(x)]
    if bad:
        raise ValueError(f"bucket edges must be finite, got {bad}")
    return tuple(sorted(set(edges)))


# --- Counters -------------------------------------------------------------------

REQUESTS = MetricSpec(
    f"{PREFIX}requests_total",
    "counter",
    "Requests finished, by outcome (ok, or the failure class).",
    labels=("outcome",),
)
PROMPT_TOKENS = MetricSpec(
    f"{PREFIX}prompt_tokens_total", "counter", "Prompt (input) tokens sent.", unit="tokens"
)
GENERATION_TOKENS = MetricSpec(
    f"{PREFIX}generation_tokens_total",
    "counter",
    "Generation (output) tokens received.",
    unit="tokens",
)
REASONING_TOKENS = MetricSpec(
    f"{PREFIX}reasoning_tokens_total",
    "counter",
    "Reasoning tokens among the generation tokens (usage's reasoning_tokens, else counted).",
    unit="tokens",
)
CACHED_PROMPT_TOKENS = MetricSpec(
    f"{PREFIX}prompt_cached_tokens_total",
    "counter",
    "Prompt tokens the server served from its prefix cache (usage's cached_tokens).",
    unit="tokens",
)
SLO_GOOD_REQUESTS = MetricSpec(
    f"{PREFIX}slo_good_requests_total",
    "counter",
    "Successful requests that met every configured SLO threshold.",
)
SLO_GOOD_GENERATION_TOKENS = MetricSpec(
    f"{PREFIX}slo_good_generation_tokens_total",
    "counter",
    "Generation tokens of requests that met every SLO threshold (goodput).",
    unit="tokens",
)

# --- Histograms -----------------------------------------------------------------

TIME_TO_FIRST_TOKEN = MetricSpec(
    f"{PREFIX}time_to_first_token_seconds",
    "histogram",
    "Time from sending a request to its first token-bearing chunk (reasoning or content).",
    buckets=TIME_TO_FIRST_TOKEN_BUCKETS,
    unit="seconds",
)
TIME_TO_FIRST_VISIBLE_TOKEN = MetricSpec(
    f"{PREFIX}time_to_first_visible_token_seconds",
    "histogram",
    "Time from sending a request to its first content (answer, not reasoning) chunk.",
    buckets=TIME_TO_FIRST_TOKEN_BUCKETS,
    unit="seconds",
)
TIME_TO_FIRST_TOOL_CALL = MetricSpec(
    f"{PREFIX}time_to_first_tool_call_seconds",
    "histogram",
    "Time from sending a request to its first tool-call piece (delta.tool_calls); requests with a tool call.",
    buckets=TIME_TO_FIRST_TOKEN_BUCKETS,
    unit="seconds",
)
TIME_TO_TOOL_ARGS_COMPLETE = MetricSpec(
    f"{PREFIX}time_to_tool_args_complete_seconds",
    "histogram",
    "Time from sending a request to the last piece of its tool call's arguments.",
    buckets=E2E_REQUEST_LATENCY_BUCKETS,
    unit="seconds",
)
TIME_PER_OUTPUT_TOKEN = MetricSpec(
    f"{PREFIX}time_per_output_token_seconds",
    "histogram",
    "Per request: (E2E - TTFT) / (output tokens - 1); one observation per request.",
    buckets=TIME_PER_OUTPUT_TOKEN_BUCKETS,
    unit="seconds",
)
INTER_TOKEN_LATENCY = MetricSpec(
    f"{PREFIX}inter_token_latency_seconds",
    "histogram",
    "Gap between successive content-bearing chunks; one observation per gap.",
    buckets=INTER_TOKEN_LATENCY_BUCKETS,
    unit="seconds",
)
E2E_LATENCY = MetricSpec(
    f"{PREFIX}e2e_request_latency_seconds",
    "histogram",
    "Time from sending a request to the last byte of its response.",
    buckets=E2E_REQUEST_LATENCY_BUCKETS,
    unit="seconds",
)

# --- Gauges ---------------------------------------------------------------------

USERS = MetricSpec(f"{PREFIX}users", "gauge", "Simulated users currently running, all workers.")
IN_FLIGHT = MetricSpec(
    f"{PREFIX}requests_in_flight", "gauge", "Requests sent and not yet finished, all workers."
)
WORKERS = MetricSpec(f"{PREFIX}workers", "gauge", "Locust workers connected to the master.")
STAGE = MetricSpec(f"{PREFIX}stage", "gauge", "Index of the load stage currently running.")
TARGET_REQUEST_RATE = MetricSpec(
    f"{PREFIX}target_request_rate",
    "gauge",
    "Request rate the load model aims for in the current stage (0 in closed-loop modes).",
    unit="requests_per_second",
)
CLIENT_SATURATED = MetricSpec(
    f"{PREFIX}client_saturated",
    "gauge",
    "1 while a load-generating process is saturated (CPU >= 90 % of a core or event-loop lag p90 "
    ">= 10 ms in 20 % of its last 10 s): timings unreliable, add workers.",
)
MASTER_BACKLOG_ROWS = MetricSpec(
    f"{PREFIX}master_backlog_rows",
    "gauge",
    "Records the workers have sent that the master has not applied yet (an estimate: each worker's "
    "rows per second x its batches' lag; 0 on a local runner). Growing: the master cannot keep up.",
)
MASTER_INGEST_LAG = MetricSpec(
    f"{PREFIX}master_ingest_lag_seconds",
    "gauge",
    "How long after a worker sent it the master applied its latest batch of records (the "
    "worker's smallest lag subtracted; 0 on a local runner).",
    unit="seconds",
)
RUN_INFO = MetricSpec(
    f"{PREFIX}run_info",
    "gauge",
    "Always 1; labels identify the run. Join on(instance, job) to filter by run_id.",
    labels=("run_id", "model", "target"),
)
SERVER_NUM_REQUESTS_RUNNING = MetricSpec(
    f"{PREFIX}server_num_requests_running",
    "gauge",
    "Server-reported requests in execution batches (re-exported from the target).",
)
SERVER_NUM_REQUESTS_WAITING = MetricSpec(
    f"{PREFIX}server_num_requests_waiting",
    "gauge",
    "Server-reported requests waiting to be scheduled (re-exported from the target).",
)
SERVER_KV_CACHE_USAGE = MetricSpec(
    f"{PREFIX}server_kv_cache_usage",
    "gauge",
    "Server-reported KV-cache usage as a ratio, 0..1 (re-exported from the target).",
    unit="ratio",
)

SERVER_GPU_MEMORY_USAGE = MetricSpec(
    f"{PREFIX}server_gpu_memory_usage",
    "gauge",
    "The fullest GPU's memory used / total, 0..1 (DCGM_FI_DEV_FB_USED and _FREE, re-exported).",
    unit="ratio",
)
SERVER_GPU_MEMORY_USED = MetricSpec(
    f"{PREFIX}server_gpu_memory_used_bytes",
    "gauge",
    "GPU memory used, summed over the GPUs (DCGM_FI_DEV_FB_USED, re-exported).",
    unit="bytes",
)
SERVER_GPU_UTILIZATION = MetricSpec(
    f"{PREFIX}server_gpu_utilization",
    "gauge",
    "The busiest GPU's utilisation, 0..1 (DCGM_FI_DEV_GPU_UTIL, re-exported).",
    unit="ratio",
)

CATALOG: tuple[MetricSpec, ...] = (
    REQUESTS,
    PROMPT_TOKENS,
    GENERATION_TOKENS,
    REASONING_TOKENS,
    CACHED_PROMPT_TOKENS,
    SLO_GOOD_REQUESTS,
    SLO_GOOD_GENERATION_TOKENS,
    TIME_TO_FIRST_TOKEN,
    TIME_TO_FIRST_VISIBLE_TOKEN,
    TIME_PER_OUTPUT_TOKEN,
    INTER_TOKEN_LATENCY,
    E2E_LATENCY,
    TIME_TO_FIRST_TOOL_CALL,
    TIME_TO_TOOL_ARGS_COMPLETE,
    USERS,
    IN_FLIGHT,
    WORKERS,
    STAGE,
    TARGET_REQUEST_RATE,
    CLIENT_SATURATED,
    MASTER_BACKLOG_ROWS,
    MASTER_INGEST_LAG,
    RUN_INFO,
    SERVER_NUM_REQUESTS_RUNNING,
    SERVER_NUM_REQUESTS_WAITING,
    SERVER_KV_CACHE_USAGE,
    SERVER_GPU_MEMORY_USAGE,
    SERVER_GPU_MEMORY_USED,
    SERVER_GPU_UTILIZATION,
)
CATALOG_BY_NAME: dict[str, MetricSpec] = {spec.name: spec for spec in CATALOG}

#: The label that says which of ``--endpoints`` served a request.
ENDPOINT_LABEL = "endpoint"
#: The most endpoints that get a series each. Each endpoint multiplies the labelled families
#: (3 counters, 7 histograms of ~20-25 buckets: about 180 series per endpoint, ~1,400 at 8),
#: and Prometheus' advice is to keep a label's values under 10; a deployment plan with more
#: replicas than this sits behind a load balancer anyway (the summary's ``replicas`` block
#: still breaks every endpoint down).
MAX_ENDPOINT_LABELS = 8
#: The families that carry the ``endpoint`` label (when the endpoints are few enough).
ENDPOINT_SERIES: tuple[str, ...] = (
    REQUESTS.name,
    PROMPT_TOKENS.name,
    GENERATION_TOKENS.name,
    TIME_TO_FIRST_TOKEN.name,
    TIME_TO_FIRST_VISIBLE_TOKEN.name,
    TIME_PER_OUTPUT_TOKEN.name,
    INTER_TOKEN_LATENCY.name,
    E2E_LATENCY.name,
    TIME_TO_FIRST_TOOL_CALL.name,
    TIME_TO_TOOL_ARGS_COMPLETE.name,
)


def endpoint_label(url: str) -> str:
    """An endpoint's label value: its URL without credentials, query or fragment, no trailing ``/``."""
    parts = urlsplit(strip_credentials(url))
    return parts._replace(query="", fragment="").geturl().rstrip("/")
