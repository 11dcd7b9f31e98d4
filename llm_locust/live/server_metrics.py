"""The target server's own ``/metrics``, scraped during a run.

Client-side latencies say *that* a server slows down; its queue length and KV-cache
usage say *why*. With ``--server-metrics URL[,URL...]`` (e.g. vLLM's
``http://127.0.0.1:8000/metrics`` and an NVIDIA DCGM exporter's ``http://gpu-node:9400/metrics``)
the master or local runner scrapes every URL every ``--server-metrics-interval`` seconds
(default 5) in a greenlet, one scrape time for all of them, and:

- keeps the latest running / waiting / KV-cache values, which the exporter re-exports
  as ``llm_locust_server_*`` gauges (so one Grafana dashboard needs only our job);
- appends the key samples to ``server_metrics.jsonl`` in the results folder while a
  test runs, one ``{"t", "name", "labels", "value"}`` line per sample.

Engines and their names (current name first): vLLM ``vllm:num_requests_running``,
``vllm:num_requests_waiting``, ``vllm:kv_cache_usage_perc`` (older
``vllm:gpu_cache_usage_perc``); SGLang ``sglang:num_running_reqs``,
``sglang:num_queue_reqs``, ``sglang:token_usage``; TGI ``tgi_batch_current_size``,
``tgi_queue_size``. Counts are summed over label sets (data-parallel engines), the
cache ratio is the maximum. DCGM's ``DCGM_FI_DEV_FB_USED`` / ``_FB_FREE`` / ``_GPU_UTIL`` become
GPU memory usage, memory used and utilisation (:mod:`llm_locust.results.gpu`).

A failed scrape of one URL is logged once per URL and kind (``connect``, ``timeout``,
``http_NNN``, ``parse``), counted in :attr:`ServerMetrics.failures`, and never stops the run
(the other URLs' samples are kept). Values
older than three intervals are dropped rather than re-exported stale.
"""

from __future__ import annotations

import json
import logging
import math
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, TypedDict

import gevent
from prometheus_client.parser import text_string_to_metric_families

from llm_locust.live import catalog as metrics
from llm_locust.live.view import ResultsFolder
from llm_locust.results.gpu import DCGM_NAMES, gpu_values
from llm_locust.results.server_series import GAUGE_SOURCES

__all__ = [
    "JSONL_FILE",
    "RECORDED",
    "SERVER_GAUGES",
    "ServerMetrics",
    "split_urls",
]

log = logging.getLogger("llm_locust")
JSONL_FILE = "server_metrics.jsonl"
MAX_BYTES = 16 * 1024 * 1024

#: Our gauge -> (server sample names, most preferred first; how to combine label sets): the one
#: table of :mod:`llm_locust.results.server_series`, which reads the recorded samples back.
SERVER_GAUGES: dict[str, tuple[tuple[str, ...], Callable[[Iterable[float]], float]]] = {
    metrics.SERVER_NUM_REQUESTS_RUNNING.name: GAUGE_SOURCES["running"],
    metrics.SERVER_NUM_REQUESTS_WAITING.name: GAUGE_SOURCES["waiting"],
    metrics.SERVER_KV_CACHE_USAGE.name: GAUGE_SOURCES["kv_cache_usage"],
}
#: Our GPU gauges (from a DCGM exporter) -> the catalog's re-exported names.
GPU_EXPORTED = {
    "gpu_mem": metrics.SERVER_GPU_MEMORY_USAGE.name,
    "gpu_mem_used": metrics.SERVER_GPU_MEMORY_USED.name,
    "gpu_util": metrics.SERVER_GPU_UTILIZATION.name,
}
#: Server samples written to ``server_metrics.jsonl`` (the gauges above plus token counters).
RECORDED = frozenset(
    {name for names, _ in SERVER_GAUGES.values() for name in names}
    | {
        "vllm:prompt_tokens_total",
        "vllm:generation_tokens_total",
        "vllm:num_preemptions_total",
        "vllm:request_success_total",
        "vllm:prefix_cache_queries_total",
        "vllm:prefix_cache_hits_total",
        "sglang:prompt_tokens_total",
        "sglang:generation_tokens_total",
        "sglang:cache_hit_rate",
        "tgi_request_count",
        "tgi_request_success",
        *DCGM_NAMES,
    }
)


def split_urls(text: str) -> list[str]:
    """``--server-metrics``: one URL or several, comma-separated."""
    return [u.strip() for u in text.split(",") if u.strip()]


class Sample(TypedDict):
    """One recorded sample of a scrape (a line of ``server_metrics.jsonl``)."""

    t: float  # wall clock, s
    name: str
    labels: dict[str, str]
    value: float


class ServerMetrics:
    """Scrapes one URL; keeps the latest key values; records samples while a test runs."""

    def __init__(
        self,
        url: str | Sequence[str],
        interval: float = 5.0,
        directory: ResultsFolder | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if interval <= 0:
            raise ValueError("--server-metrics-interval must be > 0")
        self.urls = split_urls(url) if isinstance(url, str) else list(url)
        self.url = ", ".join(self.urls)
        self.interval = float(interval)
        self.directory = directory  # the running test's results folder, where the samples go
        self.scrapes = 0
        self.failures: Counter[str] = Counter()
        self.values: dict[str, float] = {}
        self.updated: float | None = None
        self._clock = clock
        self._logged: set[tuple[str | None, str]] = set()
        self._greenlet: gevent.Greenlet | None = None
        self._file: IO[str] | None = None
        self._file_dir: Path | None = None

    # -- parsing (pure) --
    def ingest(self, text: str | Sequence[str], now: float | None = None) -> list[Sample]:
        """Parse one scrape's expositions (one per URL); update the latest values; return the
        recorded samples."""
        now = self._clock() if now is None else now
        found: dict[str, list[float]] = {}
        rows: list[Sample] = []
        for exposition in [text] if isinstance(text, str) else text:
            for family in text_string_to_metric_families(exposition):
                for sample in family.samples:
                    if sample.name not in RECORDED or not math.isfinite(sample.value):
                        continue
                    found.setdefault(sample.name, []).append(sample.value)
                    rows.append(
                        {
                            "t": round(now, 3),
                            "name": sample.name,
                            "labels": sample.labels,
                            "value": sample.value,
                        }
                    )
        values: dict[str, float] = {}
        for ours, (names, combine) in SERVER_GAUGES.items():
            name = next((n for n in names if n in found), None)
            if name is not None:
                values[ours] = float(combine(found[name]))
        gpu = gpu_values((r["name"], r["labels"], r["value"]) for r in rows if r["name"] in DCGM_NAMES)
        values.update({GPU_EXPORTED[k]: v for k, v in gpu.items() if k in GPU_EXPORTED})
        self.values, self.updated = values, now
        return rows

    def latest(self) -> dict[str, float]:
        """Our gauge name -> value, or nothing once the last good scrape is stale."""
        if self.updated is None or self._clock() - self.updated > 3 * self.interval:
            return {}
        return dict(self.values)

    # -- scraping --
    def fetch(self, url: str | None = None) -> str:
        timeout = min(max(self.interval, 1.0), 10.0)
        with urllib.request.urlopen(url or self.urls[0], timeout=timeout) as response:
            return response.read(MAX_BYTES).decode("utf-8", errors="replace")

    def scrape_once(self) -> bool:
        """One scrape of every URL; ``False`` if any failed (logged once per URL and kind,
        counted); the samples of the others are kept."""
        self.scrapes += 1
        texts = []
        for url in self.urls:
            text = self._fetch_checked(url)
            if text is not None:
                texts.append(text)
        if not texts:
            return False
        try:
            rows = self.ingest(texts)
        except Exception as exc:  # any parser error means a bad exposition
            self._failed("parse", exc, self.url)
            return False
        self._record(rows)
        return len(texts) == len(self.urls)

    def _fetch_checked(self, url: str) -> str | None:
        try:
            text = self.fetch(url)
        except urllib.error.HTTPError as exc:
            self._failed(f"http_{exc.code}", exc, url)
            return None
        except TimeoutError as exc:
            self._failed("timeout", exc, url)
            return None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", None)
            kind = "timeout" if isinstance(reason, TimeoutError) else "connect"
            self._failed(kind, exc, url)
            return None
        try:
            list(text_string_to_metric_families(text))  # a bad exposition spoils only its own URL
        except Exception as exc:
            self._failed("parse", exc, url)
            return None
        return text

    def _failed(self, kind: str, exc: BaseException, url: str | None = None) -> None:
        self.failures[kind] += 1
        if (url, kind) not in self._logged:
            self._logged.add((url, kind))
            log.warning("llm-locust: --server-metrics %s: scrape failed (%s): %s", url or self.url, kind, exc)
        return None

    # -- recording --
    def _sink(self) -> IO[str] | None:
        directory = self.directory() if self.directory is not None else None
        if directory is None:
            return None  # no results folder, or no test running
        if self._file is None or self._file_dir != Path(directory):
            self.close()
            self._file_dir = Path(directory)
            self._file = open(self._file_dir / JSONL_FILE, "w", encoding="utf-8")  # noqa: SIM115
        return self._file

    def _record(self, rows: list[Sample]) -> None:
        try:
            sink = self._sink()
            if sink is not None and rows:
                sink.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows))
                sink.flush()
        except OSError as exc:
            self._failed("write", exc)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        self._file = None

    # -- lifecycle --
    def start(self) -> None:
        if self._greenlet is None:
            self._greenlet = gevent.spawn(self._loop)

    def _loop(self) -> None:
        while True:
            self.scrape_once()
            gevent.sleep(self.interval)

    def stop(self) -> None:
        """Stop scraping and close the file; safe to call more than once."""
        greenlet, self._greenlet = self._greenlet, None
        if greenlet is not None:
            greenlet.kill(block=False)
        self.close()
