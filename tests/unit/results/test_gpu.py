"""GPU gauges from DCGM's metric names; several --server-metrics URLs; SLO terms on them."""

from __future__ import annotations

import pytest

from llm_locust.config.slo_terms import parse_series_term
from llm_locust.live import catalog as metrics
from llm_locust.live.server_metrics import ServerMetrics, split_urls
from llm_locust.results.gpu import gpu_values
from llm_locust.results.server_series import gauge_series
from tests.dcgm_exporter import dcgm_text

VLLM = '# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{engine="0"} 0.25\n'


def _samples(gpus: list[tuple[float, float, float]]) -> list[tuple[str, dict[str, str], float]]:
    scraper = ServerMetrics("http://127.0.0.1:9/metrics")
    return [(r["name"], r["labels"], r["value"]) for r in scraper.ingest(dcgm_text(gpus), now=1.0)]


def test_the_fullest_gpu_and_the_sums() -> None:
    values = gpu_values(_samples([(40960, 40960, 30), (77824, 4096, 80), (0, 81920, 0)]))
    assert values["gpu_mem"] == pytest.approx(0.95)
    assert values["gpu_mem_used"] == (40960 + 77824) * 2**20
    assert values["gpu_mem_total"] == 3 * 81920 * 2**20
    assert values["gpu_util"] == pytest.approx(0.8)
    assert gpu_values([]) == {}


def test_a_gpu_without_both_memory_values_is_left_out() -> None:
    samples = [
        s for s in _samples([(10, 10, 5), (30, 10, 5)]) if not (s[0].endswith("FREE") and s[1]["gpu"] == "1")
    ]
    assert gpu_values(samples)["gpu_mem"] == pytest.approx(0.5)


def test_one_scrape_of_several_urls_is_one_point() -> None:
    scraper = ServerMetrics("http://a/metrics, http://b/metrics", clock=lambda: 5.0)
    assert scraper.urls == ["http://a/metrics", "http://b/metrics"] and split_urls("x,,y ,") == ["x", "y"]
    rows = scraper.ingest([VLLM, dcgm_text([(60, 20, 50)])])
    assert scraper.latest() == {
        metrics.SERVER_KV_CACHE_USAGE.name: 0.25,
        metrics.SERVER_GPU_MEMORY_USAGE.name: 0.75,
        metrics.SERVER_GPU_MEMORY_USED.name: 60 * 2**20,
        metrics.SERVER_GPU_UTILIZATION.name: 0.5,
    }
    (point,) = gauge_series(rows)
    assert point["kv_cache_usage"] == 0.25 and point["gpu_mem"] == 0.75 and point["gpu_util"] == 0.5


def test_a_failing_url_keeps_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    scraper = ServerMetrics("http://engine/metrics,http://dcgm/metrics")

    def fetch(url: str | None = None) -> str:
        if "dcgm" in (url or ""):
            raise OSError("connection refused")
        return VLLM

    monkeypatch.setattr(scraper, "fetch", fetch)
    assert scraper.scrape_once() is False  # one of the two failed
    assert scraper.failures == {"connect": 1}
    assert scraper.latest() == {metrics.SERVER_KV_CACHE_USAGE.name: 0.25}


@pytest.mark.parametrize(
    ("name", "value", "threshold"),
    [("gpu_mem_max", "95%", 0.95), ("gpu_util_mean", "0.9", 0.9), ("gpu_mem_p99", "90", 0.9)],
)
def test_slo_terms_on_gpu_gauges(name: str, value: str, threshold: float) -> None:
    term = parse_series_term(name, "<=", value)
    assert term is not None and term.kind == "server" and term.threshold == pytest.approx(threshold)
    assert term.metric == name.rsplit("_", 1)[0]
