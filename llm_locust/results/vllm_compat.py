"""The ``vllm bench serve --save-result`` keys that ``summary.json`` adds to its own.

``summary.json`` already has vLLM's counts, throughputs and ``mean/median/std/pNN_*_ms``
latencies. This adds the rest of what ``vllm/benchmarks/serve.py`` writes, so tooling built
for its result files (sweep plots, dashboards) reads ours:

- ``date`` (``%Y%m%d-%H%M%S``, local time of the start), ``endpoint_type`` / ``backend``
  (``openai-chat`` or ``openai``), ``label`` (``None``), ``model_id``, ``tokenizer_id``
  (``--tokenizer`` or ``None``), ``num_prompts`` (the requests the numbers are over:
  completed + failed);
- ``request_rate`` (the open-loop target in req/s, the highest stage's for a rate ramp, else
  ``"inf"`` as vLLM writes for a closed loop), ``burstiness``, ``max_concurrency`` (a closed
  loop's user count, the highest stage's for a ramp; ``--max-concurrency`` in open loop);
- ``request_goodput`` (req/s meeting the SLO; ``None`` without ``--slo``, like vLLM without
  ``--goodput``), ``max_output_tokens_per_s`` (the most tokens that arrived in one second,
  1-s buckets from the first send, as vLLM counts them);
- with ``--save-detailed``, the per-request arrays in record order: ``input_lens``
  (prompt tokens, the server's count when known), ``output_lens``, ``ttfts``, ``itls``,
  ``latencies`` (E2E), ``start_times`` (wall clock) and ``errors`` (``""`` for a success,
  ``"<class>: <message>"`` otherwise). As in vLLM a failed request has TTFT and latency 0.0;
  ``errors`` says which ones failed. vLLM's ``generated_texts`` is not kept (we record no text).

Pure module; vLLM's units (seconds in the arrays, req/s and tok/s).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from llm_locust.config.jsontypes import JsonValue, number
from llm_locust.config.stage_kind import StageKind
from llm_locust.record import OK
from llm_locust.results.summary_blocks import ConfigBlock
from llm_locust.results.summary_model import RunSummary, StageRow
from llm_locust.results.timeline import Timeline, binned_sum

__all__ = ["DETAILED_KEYS", "READS", "max_output_tokens_per_s", "vllm_keys"]

DETAILED_KEYS = ("input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times", "errors")


def max_output_tokens_per_s(timeline: Timeline) -> float:
    """The most output tokens of the measured requests that arrived within one 1-second
    bucket (counted from the first measured send)."""
    mask = timeline.measured()
    times, weights = timeline.chunk_times(mask)
    if times.size == 0:
        return 0.0
    first = float(np.nanmin(timeline.start[mask]))
    edges = first + np.arange(int(np.ceil(times.max() - first)) + 2, dtype=float)
    return float(binned_sum(times, weights, edges).max())


#: The summary's keys :func:`vllm_keys` reads.
READS = ("completed", "failed", "slo", "stages", "config")


def vllm_keys(
    rows: Iterable[dict[str, Any]],
    summary: RunSummary,
    detailed: bool = False,
    timeline: Timeline | None = None,
) -> dict[str, Any]:
    """The missing ``vllm bench serve`` keys for ``summary`` over its measured ``rows``
    (``timeline``: of every row of the run, when already built; its measured rows count)."""
    config = summary.config
    start = config.start_time
    backend = "openai" if config.endpoint == "completions" else "openai-chat"
    out: dict[str, Any] = {
        "date": time.strftime("%Y%m%d-%H%M%S", time.localtime(start)) if start else None,
        "endpoint_type": backend,
        "backend": backend,
        "label": None,
        "model_id": config.model,
        "tokenizer_id": config.option("tokenizer") or None,
        "num_prompts": summary.completed + summary.failed,
        **_traffic(summary.stages or [], config),
        "request_goodput": None if summary.slo is None else summary.slo.goodput_rps,
        "max_output_tokens_per_s": max_output_tokens_per_s(timeline or Timeline(list(rows))),
    }
    if detailed:
        out.update(detailed_arrays(rows))
    return out


def _traffic(stages: Sequence[StageRow], config: ConfigBlock) -> dict[str, JsonValue]:
    limit = config.option("max_concurrency") or None
    rate: float | str = "inf"
    if stages and all(s.kind is StageKind.USERS for s in stages):
        limit = int(max(s.target for s in stages))
    elif stages:
        rate = max(s.target for s in stages if s.kind is StageKind.RATE)
    elif request_rate := number(config.option("request_rate")):
        rate = request_rate
    else:
        limit = config.option("num_users") or config.peak_users
    return {"request_rate": rate, "burstiness": config.option("burstiness") or 1.0, "max_concurrency": limit}


def detailed_arrays(rows: Iterable[dict[str, Any]]) -> dict[str, list[JsonValue]]:
    """vLLM's per-request arrays (``--save-detailed``), one entry per row."""
    out: dict[str, list[JsonValue]] = {key: [] for key in DETAILED_KEYS}
    for r in rows:
        good = r.get("outcome") == OK
        out["input_lens"].append(r.get("prompt_tokens") or r.get("target_input_tokens") or 0)
        out["output_lens"].append((r.get("completion_tokens") or 0) if good else 0)
        out["ttfts"].append((r.get("ttft") or 0.0) if good else 0.0)
        out["itls"].append(list(r.get("itl") or []) if good else [])
        out["latencies"].append((r.get("e2e") or 0.0) if good else 0.0)
        out["start_times"].append(r.get("start_time"))
        out["errors"].append("" if good else f"{r.get('outcome')}: {r.get('message') or ''}".rstrip(": "))
    return out
