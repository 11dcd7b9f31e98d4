"""summary.json carries every key ``vllm bench serve --save-result`` writes (results.vllm_compat)."""

from __future__ import annotations

import json

import pytest

from llm_locust.results.analysis import analyse
from llm_locust.results.summary import summarize

#: The keys of vLLM's result file, read from ``vllm/benchmarks/serve.py`` (``main_async``'s
#: ``result_json`` and ``benchmark``'s ``result``, vllm-project/vllm at 009e6d4a), for a
#: generation benchmark with the default percentile metrics plus e2el, percentiles 50/90/95/99.
VLLM_KEYS = [
    "date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts",
    "request_rate", "burstiness", "max_concurrency",
    "duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
    "request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
    "max_output_tokens_per_s", "max_concurrent_requests",
    *[f"{s}_{m}_ms" for m in ("ttft", "tpot", "itl", "e2el") for s in ("mean", "median", "std")],
    *[f"p{p}_{m}_ms" for m in ("ttft", "tpot", "itl", "e2el") for p in (50, 90, 95, 99)],
]  # fmt: skip
#: Written only with ``--save-detailed`` (vLLM drops these without it; its generated_texts we do not keep).
VLLM_DETAILED_KEYS = ["input_lens", "output_lens", "ttfts", "itls", "errors", "start_times", "latencies"]

T0 = 1_700_000_000.0


def _rows() -> list[dict]:
    rows = []
    for i in range(20):
        rows.append(
            {
                "start_time": T0 + i * 0.5,
                "outcome": "ok",
                "message": "",
                "ttft": 0.1,
                "tpot": 0.01,
                "e2e": 0.19,
                "itl": [0.01] * 9,
                "prompt_tokens": 100,
                "completion_tokens": 10,
                "target_input_tokens": 100,
            }
        )
    rows.append({"start_time": T0 + 3.0, "outcome": "http_5xx", "message": "boom", "ttft": None, "e2e": 0.05})
    return rows


def _summary(detailed: bool) -> dict:
    rows = _rows()
    summary = summarize(rows, 10.0)
    summary["config"] = {
        "model": "m",
        "endpoint": "chat",
        "start_time": T0,
        "stop_time": T0 + 10.0,
        "options": {"num_users": 4},
    }
    # the file round trip: what tooling loads is JSON
    return json.loads(json.dumps(analyse(summary, rows, rows, detailed=detailed)))


def test_summary_has_every_vllm_key() -> None:
    summary = _summary(detailed=False)
    missing = [k for k in VLLM_KEYS if k not in summary]
    assert not missing
    assert not [k for k in VLLM_DETAILED_KEYS if k in summary and k != "errors"]
    assert summary["errors"] == {"http_5xx": 1} == summary["errors_by_class"]
    assert summary["num_prompts"] == 21 and summary["model_id"] == "m"
    assert summary["backend"] == summary["endpoint_type"] == "openai-chat"
    assert summary["request_rate"] == "inf" and summary["max_concurrency"] == 4
    assert summary["request_goodput"] is None  # no --slo, as vLLM without --goodput
    assert len(summary["date"]) == len("20231114-221320")


def test_detailed_arrays_have_vllm_shapes() -> None:
    summary = _summary(detailed=True)
    assert not [k for k in VLLM_KEYS + VLLM_DETAILED_KEYS if k not in summary]
    assert all(len(summary[k]) == 21 for k in VLLM_DETAILED_KEYS)
    assert summary["errors"][-1] == "http_5xx: boom" and summary["errors"][0] == ""
    assert summary["ttfts"][-1] == 0.0 and summary["itls"][0] == pytest.approx([0.01] * 9)
    assert summary["output_lens"][:2] == [10, 10] and summary["input_lens"][0] == 100
    assert summary["errors_by_class"] == {"http_5xx": 1}


def test_max_output_tokens_per_s_counts_tokens_per_second() -> None:
    # requests start every 0.5 s and deliver their 10 tokens within 0.19 s: 20 tokens per second
    assert _summary(detailed=False)["max_output_tokens_per_s"] == pytest.approx(20.0)
