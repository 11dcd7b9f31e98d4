"""The Prometheus collector on a fresh registry, and a real headless run scraped live."""

from __future__ import annotations

import locust  # noqa: F401  (gevent first: the runtime view below imports Locust)

import contextlib
import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from llm_locust.config.build import build_config
from llm_locust.config.register import register
from llm_locust.config.stage_kind import StageKind
from llm_locust.live import catalog as metrics
from llm_locust.live.aggregate import LiveAggregate
from llm_locust.live.exporter import LLMCollector, run_gauges, run_info
from llm_locust.load.stages import Stage
from llm_locust.runtime.context import LiveState
from llm_locust.runtime.outputs import NodeView
from tests.dashboard import spec_for_series
from tests.locustproc import expect_exit, processes
from tests.promproc import free_port, http_get, start_locust, stop_process, write_locustfile
from tests.simproc import running_sim
from tests.unit.live.test_aggregate import failed_row, ok_row


def fake_run(role: str = "local", stage: Stage | None = None, health: tuple = ()) -> NodeView:
    """The runtime's view of a run, over a stand-in for the node (``health``: its
    load processes' health intervals)."""
    runner = SimpleNamespace(user_count=7, clients={}, state="running")
    environment = SimpleNamespace(runner=runner, host="http://127.0.0.1:9", parsed_options=None)
    ext = SimpleNamespace(
        environment=environment,
        role=role,
        context=SimpleNamespace(client=SimpleNamespace(model="m1")),
        run_config=build_config({}),
        run_id="r1",
        live=LiveState(stage=stage),
        search=None,
        fleet=SimpleNamespace(
            inbox=None, total_in_flight=lambda: 3, health_intervals=lambda start=None: list(health)
        ),
    )
    return NodeView(ext)  # type: ignore[arg-type]


def registry_for(agg: LiveAggregate, run: Any, server: Any = None) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(LLMCollector(agg, lambda: run_gauges(run), lambda: run_info(run), server))
    return registry


def test_counters_histograms_and_gauges() -> None:
    agg = LiveAggregate()
    run = fake_run()
    registry = registry_for(agg, run)
    get = registry.get_sample_value
    assert get("llm_locust_requests_total", {"outcome": "ok"}) == 0
    for ttft in (0.05, 0.1, 0.2):
        agg.add(ok_row(ttft=ttft, n=11))
    agg.add(failed_row("timeout"))
    assert get("llm_locust_requests_total", {"outcome": "ok"}) == 3
    assert get("llm_locust_requests_total", {"outcome": "timeout"}) == 1
    assert get("llm_locust_generation_tokens_total") == 33
    assert get("llm_locust_prompt_tokens_total") == 300
    assert get("llm_locust_slo_good_requests_total") == 3
    ttft = metrics.TIME_TO_FIRST_TOKEN.name
    assert get(f"{ttft}_bucket", {"le": "0.1"}) == 2
    assert get(f"{ttft}_bucket", {"le": "+Inf"}) == 3
    assert get(f"{ttft}_count") == 3 and get(f"{ttft}_sum") == pytest.approx(0.35)
    assert get(f"{metrics.INTER_TOKEN_LATENCY.name}_count") == 30
    assert get("llm_locust_users") == 7 and get("llm_locust_requests_in_flight") == 3
    assert get("llm_locust_workers") == 1 and get("llm_locust_stage") == -1
    assert get("llm_locust_target_request_rate") == 0
    assert get("llm_locust_run_info", {"run_id": "r1", "model": "m1", "target": "http://127.0.0.1:9"}) == 1
    assert get("llm_locust_server_kv_cache_usage") is None  # no server metrics configured


def test_every_exported_name_is_in_the_catalog_and_run_info_is_single() -> None:
    agg = LiveAggregate()
    agg.add(ok_row())
    run = fake_run(role="master", stage=Stage(index=2, kind=StageKind.RATE, target=4.0, duration_s=5.0))
    run.ext.environment.runner.clients = {
        "a": SimpleNamespace(state="running"),
        "b": SimpleNamespace(state="missing"),
    }
    server = lambda: {metrics.SERVER_KV_CACHE_USAGE.name: 0.5}  # noqa: E731
    registry = registry_for(agg, run, server)
    text = generate_latest(registry).decode()
    names = set()
    info = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            names.add(sample.name)
            assert spec_for_series(sample.name) is not None, sample.name
            if sample.name == metrics.RUN_INFO.name:
                info.append(sample)
    assert len(info) == 1
    run.ext.context.client.model = "m2"  # resolved later: still one series, with the new label
    info = [s for f in registry.collect() for s in f.samples if s.name == metrics.RUN_INFO.name]
    assert len(info) == 1 and info[0].labels["model"] == "m2"
    get = registry.get_sample_value
    assert get("llm_locust_workers") == 1 and get("llm_locust_stage") == 2
    assert get("llm_locust_target_request_rate") == 4.0
    assert get("llm_locust_server_kv_cache_usage") == 0.5
    assert get("llm_locust_client_saturated") == 0
    expected = {n for spec in metrics.CATALOG for n in spec.series_names} - {
        metrics.SERVER_NUM_REQUESTS_RUNNING.name,
        metrics.SERVER_NUM_REQUESTS_WAITING.name,
        metrics.SERVER_GPU_MEMORY_USAGE.name,  # re-exported only from a DCGM exporter's scrape
        metrics.SERVER_GPU_MEMORY_USED.name,
        metrics.SERVER_GPU_UTILIZATION.name,
    }
    assert expected <= names


def test_counters_never_decrease_across_a_test_restart() -> None:
    agg = LiveAggregate()
    run = fake_run()
    registry = registry_for(agg, run)
    seen = []
    for _test in range(2):  # a second test in the web UI: the run resets, the aggregate does not
        run.ext.run_id = f"r{_test}"
        for _ in range(5):
            agg.add(ok_row())
            seen.append(
                (
                    registry.get_sample_value("llm_locust_requests_total", {"outcome": "ok"}),
                    registry.get_sample_value("llm_locust_generation_tokens_total"),
                    registry.get_sample_value("llm_locust_time_to_first_token_seconds_count"),
                )
            )
    assert seen == sorted(seen) and seen[-1] == (10, 100, 10)


def test_options_register_once() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    register(parser, ("export",), environ={})
    register(parser, ("export",), environ={})  # a second registration on one parser is a no-op
    options = build_config(vars(parser.parse_args(["--prometheus-port", "0"]))).export
    assert options.prometheus_port == 0 and options.prometheus_host == "127.0.0.1"
    assert build_config(vars(parser.parse_args([]))).export.prometheus_port is None


# -- a real run ----------------------------------------------------------------------


def parse(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
    }


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.mark.slow
@pytest.mark.parametrize("workers", [0, 2], ids=["local", "master-2-workers"])
def test_headless_run_exports_live_and_final_totals_equal_the_summary(tmp_path: Path, workers: int) -> None:
    port = free_port()
    results = tmp_path / "r"
    with running_sim(
        "--ttft-ms", "20", "--tpot-ms", "5", "--output-tokens", "20", "--error-rate", "0.05"
    ) as url:
        proc = start_locust(
            write_locustfile(tmp_path),
            url,
            "--headless",
            "-u",
            "4",
            "-r",
            "4",
            "-t",
            "6s",
            "--results-dir",
            str(results),
            "--prometheus-port",
            str(port),
            *(processes(workers) if workers else ()),
            log_path=tmp_path / "locust.log",
        )
        scrapes = []
        try:
            deadline = time.monotonic() + 40
            while proc.poll() is None and time.monotonic() < deadline:
                with contextlib.suppress(OSError):
                    scrapes.append(parse(http_get(f"http://127.0.0.1:{port}/metrics", timeout=2)))
                time.sleep(0.5)
        finally:
            stop_process(proc)
    log = (tmp_path / "locust.log").read_text()
    expect_exit(proc, 1, log)  # 1: some requests failed (injected errors)
    assert f"Prometheus metrics on http://127.0.0.1:{port}/metrics" in log
    assert len(scrapes) >= 5, log[-3000:]
    ok = [value(s, "llm_locust_requests_total", outcome="ok") for s in scrapes]
    tokens = [value(s, "llm_locust_generation_tokens_total") for s in scrapes]
    assert ok == sorted(ok) and tokens == sorted(tokens) and ok[-1] > 0
    assert max(value(s, "llm_locust_users") for s in scrapes) == 4
    assert max(value(s, "llm_locust_workers") for s in scrapes) == (workers or 1)
    assert max(value(s, "llm_locust_requests_in_flight") for s in scrapes) > 0
    for s in scrapes:
        assert sum(1 for name, _ in s if name == "llm_locust_run_info") == 1

    summary = json.loads((results / "summary.json").read_text())
    final = parse((results / "metrics_final.prom").read_text())
    assert value(final, "llm_locust_requests_total", outcome="ok") == summary["completed"]
    failed = {dict(lb)["outcome"]: v for (n, lb), v in final.items() if n == "llm_locust_requests_total"}
    failed.pop("ok")
    # in flight when the load stopped: neither a success nor a failure, counted on its own
    assert failed.pop("incomplete", 0) == summary["incomplete"]
    assert failed == summary["errors"] and sum(failed.values()) == summary["failed"] > 0
    assert value(final, "llm_locust_generation_tokens_total") == summary["total_output_tokens"]
    assert value(final, "llm_locust_prompt_tokens_total") == summary["total_input_tokens"]
    ttft = metrics.TIME_TO_FIRST_TOKEN.name
    timed = summary["completed"] - summary["client_stalled"]  # latencies the client did not stall inside
    assert value(final, f"{ttft}_count") == timed
    assert value(final, f"{ttft}_sum") * 1000 / timed == pytest.approx(summary["mean_ttft_ms"], rel=1e-6)
    assert ok[-1] <= summary["completed"] and tokens[-1] <= summary["total_output_tokens"]


# -- server metrics --------------------------------------------------------------------

VLLM_TEXT = """# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 2.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 1.0
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.25
vllm:gpu_cache_usage_perc{engine="1",model_name="m"} 0.5
# TYPE vllm:generation_tokens counter
vllm:generation_tokens_total{model_name="m"} 1234.0
# TYPE vllm:unrelated gauge
vllm:unrelated 9.0
"""
SGLANG_TEXT = """# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m"} 4
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="m"} 6
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="m"} 0.75
"""


def test_server_metrics_parse_engines_and_go_stale() -> None:
    from llm_locust.live.server_metrics import ServerMetrics

    clock = [100.0]
    scraper = ServerMetrics("http://127.0.0.1:9/metrics", interval=1.0, clock=lambda: clock[0])
    rows = scraper.ingest(VLLM_TEXT)
    assert scraper.latest() == {
        metrics.SERVER_NUM_REQUESTS_RUNNING.name: 5.0,  # summed over engines
        metrics.SERVER_NUM_REQUESTS_WAITING.name: 1.0,
        metrics.SERVER_KV_CACHE_USAGE.name: 0.5,  # the fullest engine (older vLLM name)
    }
    assert {r["name"] for r in rows} == {
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:gpu_cache_usage_perc",
        "vllm:generation_tokens_total",
    }
    assert rows[0]["labels"] == {"engine": "0", "model_name": "m"} and rows[0]["t"] == 100.0
    scraper.ingest(SGLANG_TEXT)
    assert scraper.latest()[metrics.SERVER_NUM_REQUESTS_WAITING.name] == 6
    assert scraper.latest()[metrics.SERVER_KV_CACHE_USAGE.name] == 0.75
    clock[0] += 10  # three intervals without a good scrape: nothing re-exported
    assert scraper.latest() == {}


def test_server_metrics_scrape_the_simulator_and_record_jsonl(tmp_path: Path) -> None:
    from llm_locust.live.server_metrics import JSONL_FILE, ServerMetrics

    with running_sim("--ttft-ms", "5") as url:
        scraper = ServerMetrics(f"{url}/metrics", interval=1.0, directory=lambda: tmp_path)
        assert scraper.scrape_once() and scraper.scrape_once()
    scraper.stop()
    assert set(scraper.latest()) == {
        metrics.SERVER_NUM_REQUESTS_RUNNING.name,
        metrics.SERVER_NUM_REQUESTS_WAITING.name,
        metrics.SERVER_KV_CACHE_USAGE.name,
    }
    lines = [json.loads(x) for x in (tmp_path / JSONL_FILE).read_text().splitlines()]
    assert {x["name"] for x in lines} >= {"vllm:num_requests_running", "vllm:kv_cache_usage_perc"}
    assert len({x["t"] for x in lines}) == 2


def test_server_metrics_failures_are_counted_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    from llm_locust.live.server_metrics import ServerMetrics

    scraper = ServerMetrics(f"http://127.0.0.1:{free_port()}/metrics", interval=1.0)
    with caplog.at_level("WARNING", logger="llm_locust"):
        assert not scraper.scrape_once() and not scraper.scrape_once()
    assert scraper.failures == {"connect": 2}
    assert len([r for r in caplog.records if "scrape failed" in r.message]) == 1
    scraper.fetch = lambda url=None: "this is { not prometheus"  # type: ignore[method-assign]
    assert not scraper.scrape_once()
    assert scraper.failures == {"connect": 2, "parse": 1}


def test_slo_option_gives_a_predicate_and_exact_edges() -> None:
    from llm_locust.live.exporter import slo_setup

    assert slo_setup(build_config({}).slo) == (None, {})
    good, thresholds = slo_setup(build_config({"slo": "success>=99%,ttft_p95<=300ms,e2e_p99<=2s"}).slo)
    assert thresholds == {"ttft": [0.3], "e2e": [2.0]}
    assert good is not None
    row = ok_row(ttft=0.2) | {"request_id": "a"}
    assert good(row) and not good(row | {"ttft": 0.31})
    agg = LiveAggregate(slo_good=good, thresholds=thresholds)
    agg.add(row)
    assert 0.3 in agg.buckets["ttft"].edges and agg.slo_good_requests == 1


def test_busy_port_is_one_line_and_exit_2(tmp_path: Path) -> None:
    import socket
    import subprocess

    from tests.locustproc import BIN, REPO, env, expect_exit

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        cmd = [str(BIN / "locust"), "-f", str(write_locustfile(tmp_path)), "--host", "http://127.0.0.1:9"]
        cmd += ["--headless", "-t", "1s", "--prometheus-port", str(port)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env(), cwd=str(REPO))
    expect_exit(proc, 2)
    assert f"--prometheus-port {port}" in proc.stderr and "Traceback" not in proc.stderr


def test_the_client_saturated_gauge_reads_the_last_seconds_of_health() -> None:
    now = time.time()

    def interval(age: float, cpu: float) -> dict:
        return {"start": now - age - 1, "end": now - age, "cpu": cpu, "lag_p90_s": 0.001, "worker": "w1"}

    busy = tuple(interval(age, 0.97) for age in range(10))
    calm = tuple(interval(age, 0.3) for age in range(10))
    long_ago = tuple(interval(age, 0.97) for age in range(20, 30))
    for health, saturated in ((busy, 1), (calm, 0), (calm + long_ago, 0)):
        registry = registry_for(LiveAggregate(), fake_run(health=health))
        assert registry.get_sample_value("llm_locust_client_saturated") == saturated


def test_the_master_gauges_read_its_ingest_watch() -> None:
    from llm_locust.runtime.distributed import Inbox

    run = fake_run(role="master")
    registry = registry_for(LiveAggregate(), run)
    assert registry.get_sample_value("llm_locust_master_backlog_rows") == 0  # no inbox: local
    inbox = Inbox(lambda row: None)
    run.ext.fleet.inbox = inbox  # type: ignore[attr-defined]
    for t in range(20):  # 100 rows a second; from t = 10 each batch applied 0.5 s later than the last
        inbox.ingest.observe("w1", 1000.0 + t, 100, 1000.0 + t + 0.5 * max(0, t - 10))
    lag = registry.get_sample_value("llm_locust_master_ingest_lag_seconds")
    assert lag == pytest.approx(4.5)
    assert registry.get_sample_value("llm_locust_master_backlog_rows") == pytest.approx(100 * 4.5)
