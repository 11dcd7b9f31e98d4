"""The server's own gauges as a time series, read back from ``server_metrics.jsonl``.

The scraper (:mod:`llm_locust.live.server_metrics`) appends one ``{"t", "name", "labels",
"value"}`` line per sample of every scrape. Here each scrape becomes one point:
``{"t", "running", "waiting", "kv_cache_usage", "preemptions"}``, with the engine's names
mapped to ours (vLLM, SGLang, TGI; the current name first) and label sets combined as the
live gauges do: counts summed (data-parallel engines), the cache ratio the maximum.
``preemptions`` is the cumulative counter (vLLM's ``vllm:num_preemptions_total``). With a DCGM
exporter among the scraped URLs, a point also has ``gpu_mem``, ``gpu_mem_used``,
``gpu_mem_total`` and ``gpu_util`` (:mod:`llm_locust.results.gpu`).

Per-stage values (:func:`series_values`) feed the SLO terms on server metrics
(``kv_cache_usage_max<=95%``, ``waiting_p95<=10``, ``preemptions==0``). Pure module.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypedDict

from llm_locust.results.gpu import DCGM_NAMES, GPU_GAUGES, gpu_values

__all__ = [
    "GAUGES",
    "GAUGE_SOURCES",
    "Point",
    "ServerSample",
    "counter_increase",
    "gauge_series",
    "read_server_metrics",
    "series_values",
    "source_names",
]

#: Our gauge -> (the server's sample names, most preferred first; how label sets combine).
GAUGE_SOURCES: dict[str, tuple[tuple[str, ...], Callable[[Iterable[float]], float]]] = {
    "running": (("vllm:num_requests_running", "sglang:num_running_reqs", "tgi_batch_current_size"), sum),
    "waiting": (("vllm:num_requests_waiting", "sglang:num_queue_reqs", "tgi_queue_size"), sum),
    "kv_cache_usage": (("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"), max),
    "preemptions": (("vllm:num_preemptions_total",), sum),
}
GAUGES = ("running", "waiting", "kv_cache_usage", "gpu_mem", "gpu_util")


def source_names(gauge: str) -> tuple[str, ...]:
    """The server samples a gauge is read from (for messages)."""
    return GAUGE_SOURCES[gauge][0] if gauge in GAUGE_SOURCES else GPU_GAUGES.get(gauge, ())


class ServerSample(TypedDict, total=False):
    """One line of ``server_metrics.jsonl``: a metric's value at a scrape (``t``, Unix seconds)."""

    t: float
    name: str
    value: float
    labels: dict[str, str]


#: One scrape time's gauges by our name (``kv_cache_usage``, ``waiting``...), and ``t``.
Point = dict[str, float]


def read_server_metrics(path: str | os.PathLike[str]) -> list[ServerSample]:
    """The sample lines of a ``server_metrics.jsonl`` (``[]`` if it does not exist); a torn
    last line is skipped."""
    file = Path(path)
    if not file.exists():
        return []
    out = []
    with open(file, encoding="utf-8") as f:
        for line in f:
            if not line.endswith("\n"):
                break
            out.append(json.loads(line))
    return out


def gauge_series(samples: Iterable[ServerSample]) -> list[Point]:
    """One point per scrape time, ordered by time; a gauge the server did not expose is absent."""
    by_time: dict[float, dict[str, list[float]]] = {}
    gpus: dict[float, list[tuple[str, dict[str, str], float]]] = {}
    for s in samples:
        t = float(s["t"])
        by_time.setdefault(t, {}).setdefault(s["name"], []).append(float(s["value"]))
        if s["name"] in DCGM_NAMES:
            gpus.setdefault(t, []).append((s["name"], s.get("labels") or {}, float(s["value"])))
    out = []
    for t in sorted(by_time):
        found = by_time[t]
        point: Point = {"t": t}
        for ours, (names, combine) in GAUGE_SOURCES.items():
            name = next((n for n in names if n in found), None)
            if name is not None:
                point[ours] = float(combine(found[name]))
        point.update(gpu_values(gpus.get(t, ())))
        out.append(point)
    return out


def _within(series: Sequence[Point], start: float, end: float) -> list[Point]:
    return [p for p in series if start <= p["t"] <= end]


def series_values(series: Sequence[Point], gauge: str, start: float, end: float) -> list[float]:
    """The values of ``gauge`` over the scrapes in ``[start, end]``."""
    return [p[gauge] for p in _within(series, start, end) if p.get(gauge) is not None]


def counter_increase(series: Sequence[Point], name: str, start: float, end: float) -> float | None:
    """How much a cumulative counter rose over ``[start, end]``: from the last scrape before
    ``start`` (or the first inside) to the last inside; a reset (a restarted server) counts
    from zero."""
    points = [(p["t"], p[name]) for p in series if p.get(name) is not None]
    before = [v for t, v in points if t < start]
    inside = [v for t, v in points if start <= t <= end]
    if not inside:
        return None
    values = ([before[-1]] if before else []) + inside
    rise = 0.0
    for a, b in itertools.pairwise(values):
        rise += b - a if b >= a else b
    return rise
