"""The summary's time-series blocks as typed models: the ``windows`` (one row per ``--window``
seconds, :mod:`llm_locust.results.windows`) and the soak verdict ``drift``
(:mod:`llm_locust.results.drift`), the run's and each stage row's.

Models of :mod:`llm_locust.results.summary_model` (which says why pydantic); each keeps the keys
it does not name (``extra="allow"``), so a file written before or after reads back whole.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from llm_locust.config.jsontypes import number
from llm_locust.results.summary_blocks import Block

__all__ = ["DriftBlock", "DriftSeries", "DriftVerdict", "WindowRow"]


class DriftVerdict(StrEnum):
    """Does a series (or the run) trend over the run? (:mod:`llm_locust.results.drift`)"""

    DRIFTING = "drifting"
    INCONCLUSIVE = "inconclusive"
    STABLE = "stable"
    INSUFFICIENT = "insufficient"

    @property
    def judged(self) -> bool:
        """Was there enough to judge (drifting, stable or inconclusive)?"""
        return self is not DriftVerdict.INSUFFICIENT


class DriftSeries(Block):
    """One series' trend: Sen's slope per ``per_s`` seconds, its 95 % interval, the verdict."""

    verdict: DriftVerdict = DriftVerdict.INSUFFICIENT
    slope: float | None = None
    lower: float | None = None
    upper: float | None = None
    windows: int | None = None
    effective_windows: float | None = None
    median: float | None = None
    change_over_run: float | None = None
    material_slope: float | None = None
    unit: str | None = None
    text: str = ""


class DriftBlock(Block):
    """The soak verdict of a run or a stage: the worst of its series (of its stages, for a
    run of several), said in one line."""

    verdict: DriftVerdict = DriftVerdict.INSUFFICIENT
    text: str = ""
    window_s: float | None = None
    per_s: float | None = None
    series: dict[str, DriftSeries] = Field(default_factory=dict)
    stages: list[DriftBlock] | None = None  # a run of several stages: each stage's own


class WindowRow(Block):
    """One time window of the run (``[start_s, end_s)`` from the test's start): the requests
    that ended in it by outcome, their latency percentiles (ms), tokens per second, the mean in
    flight, and with ``--server-metrics`` the server's gauges (``<gauge>_mean``/``_max``) and
    ``preemptions``, kept as extra keys after the others (the order ``windows.csv`` writes)."""

    requests: dict[str, int] = Field(default_factory=dict)
    completed: int = 0
    failed: int = 0
    error_rate: float | None = None
    p50_ttft_ms: float | None = None
    p95_ttft_ms: float | None = None
    p99_ttft_ms: float | None = None
    p50_tpot_ms: float | None = None
    p95_tpot_ms: float | None = None
    p99_tpot_ms: float | None = None
    p50_e2el_ms: float | None = None
    p95_e2el_ms: float | None = None
    p99_e2el_ms: float | None = None
    index: int = 0
    start_s: float = 0.0
    end_s: float = 0.0
    output_tokens_per_s: float = 0.0
    in_flight: float = 0.0

    @property
    def mid_s(self) -> float:
        """The window's middle (seconds from the test's start)."""
        return (self.start_s + self.end_s) / 2

    def number(self, key: str) -> float | None:
        """The value of series ``key`` (a field such as ``p95_ttft_ms`` or ``in_flight``, or a
        server gauge such as ``kv_cache_usage_mean``); ``None``: none in this window."""
        value = getattr(self, key) if key in type(self).model_fields else (self.model_extra or {}).get(key)
        return number(value)
