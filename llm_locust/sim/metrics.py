"""The simulator's ``/metrics``: Prometheus text format with vLLM's metric names.

Hand-written rather than ``prometheus_client`` because the hot path is the token stream:
counting a token here is one integer addition, and a histogram observation (one per request,
not per token) is a bisect. Rendering happens only when ``/metrics`` is scraped.

Names follow vLLM's V1 engine, labelled with ``model_name``, so dashboards and the
load generator's server-metrics scraper work unchanged against the simulator:
``vllm:num_requests_running``, ``vllm:num_requests_waiting``, ``vllm:kv_cache_usage_perc``,
``vllm:prompt_tokens_total``, ``vllm:generation_tokens_total``,
``vllm:request_success_total{finished_reason}`` (``abort`` counts requests whose client went
away, as vLLM V1 does), ``vllm:time_to_first_token_seconds``,
``vllm:e2e_request_latency_seconds``, the prefix cache's ``vllm:prefix_cache_queries_total``
and ``vllm:prefix_cache_hits_total`` (in tokens, engine mode), ``vllm:num_preemptions_total``
(always 0: the engine reserves KV and never preempts) and ``vllm:cache_config_info``.
Simulator-only: ``llm_sim_faults_total{kind}`` and ``llm_sim_info`` (mode, replica, time
scale and, for a deployment, GPU, GPU count, TP and model class), both gauges fixed at 1.

Pure module: no network.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence

from llm_locust.live.catalog import E2E_REQUEST_LATENCY_BUCKETS, TIME_TO_FIRST_TOKEN_BUCKETS
from llm_locust.sim.faults import FaultKind

__all__ = ["E2E_BUCKETS", "TTFT_BUCKETS", "Histogram", "Metrics"]

#: vLLM's edges, defined once in the metric catalog (pure: no Locust, no gevent).
TTFT_BUCKETS = TIME_TO_FIRST_TOKEN_BUCKETS
E2E_BUCKETS = E2E_REQUEST_LATENCY_BUCKETS


class Histogram:
    """Cumulative-on-render histogram: observe() touches one bucket."""

    def __init__(self, edges: Sequence[float]) -> None:
        self.edges = tuple(edges)
        self.counts = [0] * (len(self.edges) + 1)  # last slot is +Inf
        self.total = 0.0
        self.n = 0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.edges, value)] += 1
        self.total += value
        self.n += 1

    def render(self, name: str, labels: str) -> list[str]:
        out = []
        running = 0
        for edge, c in zip(self.edges, self.counts, strict=False):
            running += c
            out.append(f'{name}_bucket{{le="{edge}",{labels}}} {running}')
        out.append(f'{name}_bucket{{le="+Inf",{labels}}} {self.n}')
        out.append(f"{name}_sum{{{labels}}} {self.total!r}")
        out.append(f"{name}_count{{{labels}}} {self.n}")
        return out


def _label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Metrics:
    """Counters and histograms; gauges are read through callbacks at render time."""

    def __init__(
        self, model: str, gauges: Callable[[], dict[str, float]], info: dict[str, str] | None = None
    ) -> None:
        self.model_label = f'model_name="{_label_value(model)}"'
        self._gauges = gauges  # -> running, waiting, kv (usage 0..1), [prefix_queries, prefix_hits]
        self._info = info or {}
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.success: dict[str, int] = {}
        self.faults: dict[FaultKind, int] = {}
        self.ttft = Histogram(TTFT_BUCKETS)
        self.e2e = Histogram(E2E_BUCKETS)

    def request_finished(self, reason: str, e2e: float | None) -> None:
        """Count a finished request; ``e2e`` None for an aborted one (no latency observed)."""
        self.success[reason] = self.success.get(reason, 0) + 1
        if e2e is not None:
            self.e2e.observe(e2e)

    def fault(self, kind: FaultKind) -> None:
        self.faults[kind] = self.faults.get(kind, 0) + 1

    def _info_lines(self) -> list[str]:
        lab = self.model_label
        cache = ("block_size", "enable_prefix_caching", "kv_cache_tokens")
        cache_labels = ",".join(f'{k}="{self._info[k]}"' for k in cache if k in self._info)
        sim_labels = ",".join(f'{k}="{_label_value(v)}"' for k, v in self._info.items() if k not in cache)
        return [
            "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig",
            "# TYPE vllm:cache_config_info gauge",
            f"vllm:cache_config_info{{{cache_labels}{',' if cache_labels else ''}{lab}}} 1",
            "# HELP llm_sim_info The simulator's configuration (mode, replica, time scale, deployment).",
            "# TYPE llm_sim_info gauge",
            f"llm_sim_info{{{sim_labels}{',' if sim_labels else ''}{lab}}} 1",
        ]

    def _prefix_lines(self, gauges: dict[str, float]) -> list[str]:
        if "prefix_queries" not in gauges:
            return []
        lab = self.model_label
        return [
            "# HELP vllm:prefix_cache_queries Prefix cache queries, in terms of number of queried tokens.",
            "# TYPE vllm:prefix_cache_queries counter",
            f"vllm:prefix_cache_queries_total{{{lab}}} {int(gauges['prefix_queries'])}",
            "# HELP vllm:prefix_cache_hits Prefix cache hits, in terms of number of cached tokens.",
            "# TYPE vllm:prefix_cache_hits counter",
            f"vllm:prefix_cache_hits_total{{{lab}}} {int(gauges['prefix_hits'])}",
        ]

    def _clock_lines(self, gauges: dict[str, float]) -> list[str]:
        """How well the engine kept its schedule (engine mode): its steps, the restarts after
        falling more than 250 ms behind and the wall time they lost, the latest step end."""
        if "steps" not in gauges:
            return []
        lab = self.model_label
        return [
            "# HELP llm_sim_schedule_steps Engine steps run.",
            "# TYPE llm_sim_schedule_steps counter",
            f"llm_sim_schedule_steps_total{{{lab}}} {int(gauges['steps'])}",
            "# HELP llm_sim_schedule_restarts Times the engine fell too far behind and restarted its clock.",
            "# TYPE llm_sim_schedule_restarts counter",
            f"llm_sim_schedule_restarts_total{{{lab}}} {int(gauges['restarts'])}",
            "# HELP llm_sim_schedule_lost_seconds Wall time the engine's schedule lost to restarts.",
            "# TYPE llm_sim_schedule_lost_seconds counter",
            f"llm_sim_schedule_lost_seconds_total{{{lab}}} {gauges['lost_s']!r}",
            "# HELP llm_sim_schedule_late_max_seconds The latest a step's end was handled.",
            "# TYPE llm_sim_schedule_late_max_seconds gauge",
            f"llm_sim_schedule_late_max_seconds{{{lab}}} {gauges['late_max_s']!r}",
        ]

    def render(self) -> str:
        lab = self.model_label
        gauges = self._gauges()
        running, waiting, kv = int(gauges["running"]), int(gauges["waiting"]), gauges["kv"]
        lines = [
            "# HELP vllm:num_requests_running Number of requests in model execution batches.",
            "# TYPE vllm:num_requests_running gauge",
            f"vllm:num_requests_running{{{lab}}} {running}",
            "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.",
            "# TYPE vllm:num_requests_waiting gauge",
            f"vllm:num_requests_waiting{{{lab}}} {waiting}",
            "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.",
            "# TYPE vllm:kv_cache_usage_perc gauge",
            f"vllm:kv_cache_usage_perc{{{lab}}} {min(max(kv, 0.0), 1.0)!r}",
            "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.",
            "# TYPE vllm:prompt_tokens_total counter",
            f"vllm:prompt_tokens_total{{{lab}}} {self.prompt_tokens}",
            "# HELP vllm:generation_tokens_total Number of generation tokens processed.",
            "# TYPE vllm:generation_tokens_total counter",
            f"vllm:generation_tokens_total{{{lab}}} {self.generation_tokens}",
            "# HELP vllm:num_preemptions Cumulative number of preemptions from the engine.",
            "# TYPE vllm:num_preemptions counter",
            f"vllm:num_preemptions_total{{{lab}}} 0",
            *self._prefix_lines(gauges),
            *self._clock_lines(gauges),
            "# HELP vllm:request_success_total Count of successfully processed requests.",
            "# TYPE vllm:request_success_total counter",
        ]
        for reason in sorted(self.success):
            lines.append(
                f'vllm:request_success_total{{finished_reason="{reason}",{lab}}} {self.success[reason]}'
            )
        lines += [
            "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.",
            "# TYPE vllm:time_to_first_token_seconds histogram",
            *self.ttft.render("vllm:time_to_first_token_seconds", lab),
            "# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency in seconds.",
            "# TYPE vllm:e2e_request_latency_seconds histogram",
            *self.e2e.render("vllm:e2e_request_latency_seconds", lab),
            "# HELP llm_sim_faults_total Requests given an injected fault, by kind.",
            "# TYPE llm_sim_faults_total counter",
        ]
        for kind in sorted(self.faults):
            lines.append(f'llm_sim_faults_total{{kind="{kind}",{lab}}} {self.faults[kind]}')
        lines += self._info_lines()
        return "\n".join(lines) + "\n"
