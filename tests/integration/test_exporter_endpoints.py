"""The exporter labels by endpoint when the endpoints are few (``MAX_ENDPOINT_LABELS``), never above.

In process: a fresh registry over a :class:`LiveAggregate` fed rows of two replicas (and of nine).
Real: a headless run over two simulator replicas scraped by a real Prometheus, whose per-endpoint
request counts match ``requests.jsonl``; and a run over nine replicas whose ``/metrics`` have no
``endpoint`` label and whose log says so once.
"""

from __future__ import annotations

import locust  # noqa: F401  (gevent first: the runtime view imports Locust)

import json
from collections import Counter
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from llm_locust.live import catalog as metrics
from llm_locust.live.aggregate import LiveAggregate
from tests.integration.test_exporter import fake_run, parse, registry_for, value
from tests.promproc import (
    free_port,
    prometheus_binary,
    run_to_end,
    running_prometheus,
    write_locustfile,
)
from tests.simproc import running_sim
from tests.unit.live.test_aggregate import failed_row, ok_row

TTFT = metrics.TIME_TO_FIRST_TOKEN.name


def _labels(text: str, name: str) -> set[str]:
    """The ``endpoint`` values of the samples of ``name`` (``""``: none)."""
    return {dict(labels).get("endpoint", "") for (n, labels) in parse(text) if n == name}


def test_two_endpoints_get_a_series_each_and_their_sums_are_the_totals() -> None:
    urls = ["http://u:secret@10.0.0.1:8000/v1?key=k", "http://10.0.0.2:8000"]
    agg = LiveAggregate(endpoints=urls)
    rows = [ok_row(0.1, replica=urls[0]), ok_row(0.3, replica=urls[1]), ok_row(0.2, replica=urls[1])]
    for row in [*rows, {**failed_row(), "replica": urls[0]}]:
        agg.add(row)
    text = generate_latest(registry_for(agg, fake_run())).decode()
    samples = parse(text)
    first, second = "http://10.0.0.1:8000/v1", "http://10.0.0.2:8000"  # no credentials, no query
    assert "secret" not in text and "key=k" not in text
    assert value(samples, "llm_locust_requests_total", outcome="ok", endpoint=first) == 1
    assert value(samples, "llm_locust_requests_total", outcome="ok", endpoint=second) == 2
    assert value(samples, "llm_locust_requests_total", outcome="http_5xx", endpoint=first) == 1
    assert value(samples, f"{TTFT}_count", endpoint=second) == 2
    assert value(samples, f"{TTFT}_bucket", endpoint=second, le="0.25") == 1
    assert value(samples, "llm_locust_generation_tokens_total", endpoint=first) == 10
    for name in metrics.ENDPOINT_SERIES:  # every labelled family, and no unlabelled series beside
        series = {n for n in metrics.CATALOG_BY_NAME[name].series_names}
        assert {e for (n, labels) in samples if n in series for e in [dict(labels).get("endpoint")]} == {
            first,
            second,
        }, name
    assert sum(v for (n, _), v in samples.items() if n == f"{TTFT}_count") == agg.buckets["ttft"].count
    assert value(samples, "llm_locust_slo_good_requests_total") == 3  # not labelled


def test_more_than_the_limit_means_no_endpoint_label() -> None:
    urls = [f"http://10.0.0.{i}:8000" for i in range(1, metrics.MAX_ENDPOINT_LABELS + 2)]
    agg = LiveAggregate(endpoints=urls)
    for url in urls:
        agg.add(ok_row(replica=url))
    assert agg.endpoints is None
    text = generate_latest(registry_for(agg, fake_run())).decode()
    assert _labels(text, "llm_locust_requests_total") == {""} and "endpoint=" not in text
    assert value(parse(text), "llm_locust_requests_total", outcome="ok") == len(urls)


def _run(tmp_path: Path, url: str, port: int, users: int, seconds: str) -> tuple[Path, str]:
    results = tmp_path / "r"
    log = run_to_end(
        write_locustfile(tmp_path),
        url.split(",")[0],
        "--headless",
        *("-u", str(users), "-r", str(users), "-t", seconds, "--endpoints", url),
        *("--results-dir", str(results), "--prometheus-port", str(port)),
        log_path=tmp_path / "locust.log",
        timeout=90,
    )
    return results, log


@pytest.mark.slow
@pytest.mark.skipif(prometheus_binary() is None, reason="prometheus not on PATH (make system-deps)")
def test_prometheus_sees_each_endpoints_requests_as_in_requests_jsonl(tmp_path: Path) -> None:
    port = free_port()
    with (
        running_sim("--ttft-ms", "50", "--tpot-ms", "5", "--output-tokens", "20", "--replicas", "2") as url,
        running_prometheus(tmp_path / "prom", [f"127.0.0.1:{port}"]) as prom,
    ):
        results, _ = _run(tmp_path, url, port, 4, "12s")
        summary = json.loads((results / "summary.json").read_text())
        at = summary["config"]["stop_time"] - 1.0
        scraped = {
            r["metric"]["endpoint"]: float(r["value"][1])
            for r in prom.query('sum by (endpoint) (llm_locust_requests_total{outcome="ok"})', at)
        }
        by_endpoint = f"sum by (le, endpoint) (rate({TTFT}_bucket[5s]))"
        ttft = prom.query(f"histogram_quantile(0.95, {by_endpoint})", at)
    rows = [json.loads(line) for line in (results / "requests.jsonl").open()]
    ok = [r for r in rows if r["outcome"] == "ok"]
    assert set(scraped) == set(url.split(",")), scraped
    for endpoint, count in scraped.items():  # the records of that endpoint ended by the scrape
        ends = [r["start_time"] + r["e2e"] for r in ok if r["replica"] == endpoint]
        assert sum(e <= at - 1.5 for e in ends) <= count <= sum(e <= at + 0.5 for e in ends), endpoint
        assert count > 0.3 * len(ok)
    assert {r["metric"]["endpoint"] for r in ttft} == set(url.split(","))
    final = parse((results / "metrics_final.prom").read_text())  # the totals, exactly
    for endpoint, n in Counter(r["replica"] for r in ok).items():
        assert value(final, "llm_locust_requests_total", outcome="ok", endpoint=endpoint) == n


@pytest.mark.slow
def test_nine_endpoints_export_one_series_and_say_so_once(tmp_path: Path) -> None:
    replicas = str(metrics.MAX_ENDPOINT_LABELS + 1)
    with running_sim(
        "--ttft-ms", "5", "--tpot-ms", "1", "--output-tokens", "4", "--replicas", replicas
    ) as url:
        results, log = _run(tmp_path, url, free_port(), 3, "3s")
    text = (results / "metrics_final.prom").read_text()
    assert "endpoint=" not in text
    rows = [json.loads(line) for line in (results / "requests.jsonl").open()]
    ok = sum(r["outcome"] == "ok" for r in rows)
    assert value(parse(text), "llm_locust_requests_total", outcome="ok") == ok > 0
    assert len({r["replica"] for r in rows}) > 1
    assert log.count("the exported series carry no endpoint label") == 1, log[-2000:]
