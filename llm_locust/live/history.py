"""The chart history of the ``/llm`` page: a bounded ring of compact points (rates, counts,
latency quantiles, the run's gauges), so a page opened mid-run still shows the past.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping

from llm_locust.live.aggregate import Snapshot

__all__ = ["History", "HistoryPoint", "history_point"]

#: A chart point: rates, counts, ``[p50, p95, p99]`` per latency, and the run's gauges by name.
HistoryPoint = dict[str, "float | int | str | bool | list[float | None] | None"]


def history_point(snapshot: Snapshot, gauges: Mapping[str, float | int | str | bool | None]) -> HistoryPoint:
    """One compact chart point from a snapshot and the run's gauges (latencies in seconds)."""
    recent = snapshot["recent"]
    point: HistoryPoint = {
        "t": round(snapshot["time"], 3),
        "tokens_per_s": recent["output_tokens_per_s"],
        "requests_per_s": recent["requests_per_s"],
        "errors_per_s": recent["errors_per_s"],
        "completed": snapshot["totals"]["completed"],
        "failed": snapshot["totals"]["failed"],
    }
    for name, stats in recent["latency"].items():
        point[name] = [stats["p50"], stats["p95"], stats["p99"]]
    point.update(gauges)
    return point


class History:
    """A bounded ring of chart points, so a page opened mid-run still shows the past."""

    def __init__(self, maxlen: int = 450) -> None:
        self._points: deque[HistoryPoint] = deque(maxlen=maxlen)

    def append(self, point: HistoryPoint) -> None:
        self._points.append(point)

    def clear(self) -> None:
        self._points.clear()

    def since(self, t: float | None = None) -> list[HistoryPoint]:
        """Points strictly newer than ``t`` (all of them when ``t`` is None)."""
        if t is None:
            return list(self._points)
        return [p for p in self._points if isinstance(mark := p["t"], (int, float)) and mark > t]

    def __len__(self) -> int:
        return len(self._points)

    @property
    def maxlen(self) -> int:
        return self._points.maxlen or 0
