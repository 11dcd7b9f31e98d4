"""A real Prometheus scrapes a real headless run; its queries agree with summary.json."""

from __future__ import annotations

import bisect
import json
import math
from pathlib import Path

import pytest

from llm_locust.live import catalog as metrics
from tests.dashboard import dashboard_expressions
from tests.dcgm_exporter import running_dcgm
from tests.promproc import (
    free_port,
    prometheus_binary,
    run_to_end,
    running_prometheus,
    write_locustfile,
)
from tests.simproc import running_sim

pytestmark = [
    pytest.mark.skipif(prometheus_binary() is None, reason="prometheus not on PATH (make system-deps)"),
]


def _rows(results: Path) -> list[dict]:
    return [json.loads(line) for line in (results / "requests.jsonl").read_text().splitlines()]


def _bucket_around(value_s: float) -> tuple[float, float]:
    """The TTFT bucket [lower, upper] holding ``value_s``."""
    edges = metrics.TIME_TO_FIRST_TOKEN_BUCKETS
    i = bisect.bisect_left(edges, value_s)
    return (edges[i - 1] if i else 0.0), edges[i]


@pytest.mark.slow
def test_prometheus_queries_match_the_summary(tmp_path: Path) -> None:
    port = free_port()
    results = tmp_path / "r"
    sim_args = ("--ttft-ms", "100", "--tpot-ms", "10", "--output-tokens", "50")
    with (
        running_sim(*sim_args) as url,
        running_dcgm([(40960, 40960, 30)]) as dcgm,  # the GPU panel's series too
        running_prometheus(tmp_path / "prom", [f"127.0.0.1:{port}"]) as prom,
    ):
        run_to_end(
            write_locustfile(tmp_path),
            url,
            "--headless",
            *("-u", "6", "-r", "6", "-t", "20s"),
            *("--results-dir", str(results), "--prometheus-port", str(port)),
            *("--server-metrics", f"{url}/metrics,{dcgm}", "--server-metrics-interval", "1"),
            log_path=tmp_path / "locust.log",
            timeout=60,
        )
        summary = json.loads((results / "summary.json").read_text())
        config = summary["config"]
        at = config["stop_time"] - 3.0  # steady state, a full rate window after the start
        assert at - config["start_time"] >= 12

        rate = prom.value("sum(rate(llm_locust_generation_tokens_total[10s]))", at)
        assert rate == pytest.approx(summary["output_throughput"], rel=0.2)

        # the bucket counts Prometheus scraped at ``at`` are those of the records that had ended
        # by then: per bucket, the same counts from requests.jsonl (ended by the last scrape,
        # at most a scrape interval before ``at``) bound them from both sides
        scraped = {
            float(r["metric"]["le"]): float(r["value"][1])
            for r in prom.query("sum by (le) (llm_locust_time_to_first_token_seconds_bucket)", at)
        }
        # the histogram holds the latencies the one rule counts (issue 22): the successful
        # requests the client did not stall inside (a busy machine stalls a few)
        ok = [r for r in _rows(results) if r["outcome"] == "ok" and not r.get("client_stall_s")]
        for le, count in scraped.items():
            by_end = [r["start_time"] + r["e2e"] for r in ok if r["ttft"] <= le]
            before = sum(end <= at - 1.5 for end in by_end)
            assert before <= count <= sum(end <= at + 0.5 for end in by_end), (le, count, before)
        assert scraped[math.inf] > 0.7 * len(ok)
        # histogram_quantile interpolates inside the bucket that holds the true median
        median = prom.value(
            "histogram_quantile(0.5, sum by (le) (rate(llm_locust_time_to_first_token_seconds_bucket[15s])))",
            at,
        )
        lower, upper = _bucket_around(summary["median_ttft_ms"] / 1000)
        assert lower <= median <= upper, (median, summary["median_ttft_ms"])
        print(f"rate {rate:.1f} vs {summary['output_throughput']:.1f}; median {median} in [{lower}, {upper}]")

        empty = [
            expr
            for expr in dashboard_expressions(rate_interval="10s", run_id=".*")
            if not prom.query(expr, at)
        ]
        assert not empty, empty
        assert prom.value("max(llm_locust_run_info)", at) == 1
        assert prom.value("count(llm_locust_run_info)", at) == 1
    assert (results / "server_metrics.jsonl").stat().st_size > 0
    names = {json.loads(line)["name"] for line in (results / "server_metrics.jsonl").open()}
    assert {"vllm:num_requests_running", "vllm:kv_cache_usage_perc", "DCGM_FI_DEV_FB_USED"} <= names
