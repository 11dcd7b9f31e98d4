"""Live aggregates over finished requests, for the Prometheus exporter and the web UI.

The results folder gets every record, but a scrape or a page refresh must not re-read
it: :class:`LiveAggregate` folds each record in once (``add(row)``, registered as one of
the run's consumers) and answers from fixed-size state:

- exact counters (requests by outcome, prompt/generation tokens, SLO-good requests and
  tokens) that only ever grow, so a Prometheus ``rate()`` across a test restarted in
  the web UI stays right;
- exact Prometheus ``le`` buckets per latency (:class:`FixedBucketCounts`) over the
  catalog's edges plus each SLO threshold, so ``X_bucket{le="<threshold>"}`` counts
  exactly the requests that met it;
- :class:`LogHistogram` quantiles over the whole process and over a sliding window
  (a ring of one-second slots), the numbers a person watching a run wants.

Per endpoint (``endpoints``: the run's ``--endpoints``, at most
:data:`~llm_locust.live.catalog.MAX_ENDPOINT_LABELS` of them): requests by outcome, prompt and
generation tokens and the ``le`` buckets again, per endpoint (:class:`EndpointTotals`, keyed by
:func:`~llm_locust.live.catalog.endpoint_label`), for the exporter's ``endpoint`` label; a
record of no listed endpoint goes under ``""`` (Prometheus' "no label"). More endpoints, or
none: no per-endpoint totals at all.

Token and request totals follow :func:`llm_locust.results.summary.summarize` (successful
records only; prompt tokens fall back to the workload's target:
:func:`llm_locust.record.input_tokens_of`), so at the end of a run the exported totals equal
``summary.json``'s. Memory does not depend on the number of
requests. :class:`History` keeps a bounded ring of snapshots for charts.

Pure module: numpy only, no Locust, no network.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import TypedDict, TypeGuard

import numpy as np
from numpy.typing import NDArray

from llm_locust.live import catalog as metrics
from llm_locust.record import CANCELLED, INCOMPLETE, NOT_FAILED, OK, input_tokens_of
from llm_locust.results.bucket_counts import FixedBucketCounts
from llm_locust.results.histogram import LogHistogram
from llm_locust.results.inclusion import Coverage, row_covers

__all__ = [
    "LATENCIES",
    "QUANTILES",
    "EndpointTotals",
    "LatencyStats",
    "LiveAggregate",
    "Recent",
    "Row",
    "Snapshot",
    "Totals",
    "Window",
]

#: Each latency (its record field, :data:`llm_locust.record.LATENCIES`) -> its catalog metric.
LATENCIES: dict[str, metrics.MetricSpec] = {
    "ttft": metrics.TIME_TO_FIRST_TOKEN,
    "ttft_visible": metrics.TIME_TO_FIRST_VISIBLE_TOKEN,
    "tpot": metrics.TIME_PER_OUTPUT_TOKEN,
    "itl": metrics.INTER_TOKEN_LATENCY,
    "e2e": metrics.E2E_LATENCY,
    "time_to_first_tool_call": metrics.TIME_TO_FIRST_TOOL_CALL,  # issue 28: tool calls
    "time_to_tool_args_complete": metrics.TIME_TO_TOOL_ARGS_COMPLETE,
}
QUANTILES = (0.5, 0.95, 0.99)
# Window slots use 1 % relative error: half the memory of the default layout, plenty
# for a chart (30 slots x 4 latencies x ~1,000 int64 = ~1 MB in all).
_WINDOW_LAYOUT = (1e-4, 3600.0, 0.01)

#: A finished request as its ``requests.jsonl`` row (values read and checked one by one).
Row = Mapping[str, object]


class LatencyStats(TypedDict):
    """One latency's count, mean and quantiles (seconds; ``None`` without a value)."""

    count: int
    mean: float | None
    p50: float | None
    p95: float | None
    p99: float | None


class Recent(TypedDict):
    """Rates, errors and latency quantiles over the sliding window."""

    window_s: int
    span_s: float
    requests_per_s: float
    errors_per_s: float
    output_tokens_per_s: float
    errors: dict[str, int]
    latency: dict[str, LatencyStats]


class Totals(TypedDict):
    """The whole test's counts by outcome and its token totals."""

    requests: dict[str, int]
    completed: int
    failed: int
    incomplete: int
    cancelled: int
    prompt_tokens: int
    generation_tokens: int
    reasoning_tokens: int
    cached_tokens: int
    slo_good_requests: int
    slo_good_generation_tokens: int


class Snapshot(TypedDict):
    """:meth:`LiveAggregate.snapshot`: everything at once, as plain JSON-able types."""

    time: float
    totals: Totals
    errors: dict[str, int]
    latency: dict[str, LatencyStats]
    recent: Recent


def _finite(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _count(value: object) -> int:
    """A row's token count (``None`` or missing: 0)."""
    return int(value) if isinstance(value, (int, float, str)) and value != "" else 0


def _gaps(value: object) -> NDArray[np.float64]:
    """A record's ITL list as an array of its finite values (one conversion, no Python loop)."""
    try:
        arr = np.asarray(value or (), dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):  # a malformed row: keep what is a number
        values = value if isinstance(value, Iterable) else ()
        arr = np.asarray([v for v in values if _finite(v)], dtype=np.float64)
    return arr if np.isfinite(arr).all() else arr[np.isfinite(arr)]


class _Slot:
    """What finished within one wall-clock second."""

    __slots__ = ("errors", "hists", "ok", "second", "tokens")

    def __init__(self) -> None:
        self.second = -1
        self.hists = {name: LogHistogram(*_WINDOW_LAYOUT) for name in LATENCIES}
        self.ok = 0
        self.tokens = 0
        self.errors: Counter[str] = Counter()

    def reset(self, second: int) -> None:
        self.second = second
        for hist in self.hists.values():
            hist.clear()
        self.ok = self.tokens = 0
        self.errors.clear()


class Window:
    """A ring of ``seconds`` one-second slots: the last ``seconds`` seconds, reused forever."""

    def __init__(self, seconds: int = 30) -> None:
        if seconds < 2:
            raise ValueError("window must be at least 2 seconds")
        self.seconds = int(seconds)
        self._slots = [_Slot() for _ in range(self.seconds)]

    def slot(self, now: float) -> _Slot:
        second = math.floor(now)
        slot = self._slots[second % self.seconds]
        if slot.second != second:
            slot.reset(second)
        return slot

    def live(self, now: float) -> list[_Slot]:
        second = math.floor(now)
        return [s for s in self._slots if second - self.seconds < s.second <= second]

    def span(self, now: float, since: float | None) -> float:
        """Seconds the window covers now (shorter while the aggregate is younger)."""
        full = self.seconds - 1 + (now - math.floor(now))
        if since is not None:
            full = min(full, now - since)
        return max(full, 1.0)

    @property
    def size(self) -> int:
        return len(self._slots)


class EndpointTotals:
    """One endpoint's requests by outcome, tokens and latency buckets."""

    __slots__ = ("buckets", "generation_tokens", "prompt_tokens", "requests")

    def __init__(self, edges: Mapping[str, tuple[float, ...]]) -> None:
        self.requests: Counter[str] = Counter()
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.buckets = {name: FixedBucketCounts(e) for name, e in edges.items()}


class LiveAggregate:
    """Running totals and histograms over every record added; see the module docstring.

    ``slo_good(row)`` decides whether a successful request met the SLO; without one
    every successful request counts as good (no threshold to miss), so goodput equals
    throughput. ``thresholds`` maps a latency name (``ttft``, ``tpot``, ``itl``,
    ``e2e``) to SLO thresholds in seconds that become exact bucket edges.
    """

    def __init__(
        self,
        slo_good: Callable[[Row], bool] | None = None,
        thresholds: Mapping[str, Iterable[float]] | None = None,
        window_s: int = 30,
        clock: Callable[[], float] = time.time,
        endpoints: Iterable[str] | None = None,
    ) -> None:
        thresholds = thresholds or {}
        unknown = set(thresholds) - set(LATENCIES)
        if unknown:
            raise ValueError(f"thresholds for unknown latencies: {sorted(unknown)}")
        self.slo_good = slo_good
        self.requests: Counter[str] = Counter()
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.reasoning_tokens = 0
        self.cached_tokens = 0
        self.slo_good_requests = 0
        self.slo_good_generation_tokens = 0
        self.buckets = {
            name: FixedBucketCounts(
                metrics.buckets_with_thresholds(spec.buckets or (), thresholds.get(name, ()))
            )
            for name, spec in LATENCIES.items()
        }
        self.overall = {name: LogHistogram() for name in LATENCIES}
        labels = {url: metrics.endpoint_label(url) for url in endpoints or ()}
        few = 0 < len(set(labels.values())) <= metrics.MAX_ENDPOINT_LABELS
        self._endpoint_of = labels if few else {}
        edges = {name: counts.edges for name, counts in self.buckets.items()}
        #: per endpoint label (``None``: too many endpoints, or none given)
        self.endpoints: dict[str, EndpointTotals] | None = (
            {label: EndpointTotals(edges) for label in labels.values()} if few else None
        )
        self._edges = edges
        self.window = Window(window_s)
        self.first_time: float | None = None
        self.last_time: float | None = None
        self._clock = clock

    # -- folding records in -------------------------------------------------------
    def add(self, row: Row) -> None:
        """Fold one finished request (its JSONL form) into every total."""
        now = self._clock()
        if self.first_time is None:
            self.first_time = now
        self.last_time = now
        slot = self.window.slot(now)
        outcome = str(row.get("outcome") or "unknown")
        self.requests[outcome] += 1
        part = self._endpoint(row) if self.endpoints is not None else None
        if part is not None:
            part.requests[outcome] += 1
        if outcome in (INCOMPLETE, CANCELLED):  # stopped, or abandoned on purpose: not a failure
            return
        if outcome != OK:
            slot.errors[outcome] += 1
            return
        tokens = _count(row.get("completion_tokens"))
        slot.ok += 1
        slot.tokens += tokens
        prompt = input_tokens_of(row)
        self.prompt_tokens += prompt
        self.generation_tokens += tokens
        if part is not None:
            part.prompt_tokens += prompt
            part.generation_tokens += tokens
        self.reasoning_tokens += _count(row.get("reasoning_tokens"))
        self.cached_tokens += _count(row.get("cached_tokens"))
        # a request the client itself stalled inside counts, its latencies do not (the one rule:
        # llm_locust.results.inclusion; the live view is a series, its warm-up included)
        for name in LATENCIES if row_covers(Coverage.SERIES_LATENCY, row) else ():
            value = row.get(name)
            if name == "itl":  # many values: vectorized (add and add_many agree bit for bit)
                gaps = _gaps(value)
                if gaps.size:
                    self.buckets[name].add_many(gaps)
                    self.overall[name].add_many(gaps)
                    slot.hists[name].add_many(gaps)
                    if part is not None:
                        part.buckets[name].add_many(gaps)
            elif _finite(value):  # one value: bisect, not numpy's fixed cost (~10 µs a call)
                self.buckets[name].add(value)
                self.overall[name].add(value)
                slot.hists[name].add(value)
                if part is not None:
                    part.buckets[name].add(value)
        if self.slo_good is None or self.slo_good(row):
            self.slo_good_requests += 1
            self.slo_good_generation_tokens += tokens

    def _endpoint(self, row: Row) -> EndpointTotals:
        """The totals of the endpoint that served ``row`` (``""``: none of the listed ones)."""
        assert self.endpoints is not None
        url = row.get("replica")
        label = self._endpoint_of.get(url, "") if isinstance(url, str) else ""
        part = self.endpoints.get(label)
        if part is None:
            part = self.endpoints[label] = EndpointTotals(self._edges)
        return part

    # -- reading ------------------------------------------------------------------
    @property
    def completed(self) -> int:
        return self.requests.get(OK, 0)

    @property
    def failed(self) -> int:
        return sum(n for outcome, n in self.requests.items() if outcome not in NOT_FAILED)

    @property
    def incomplete(self) -> int:
        return self.requests.get(INCOMPLETE, 0)

    def errors(self) -> dict[str, int]:
        return dict(sorted((k, v) for k, v in self.requests.items() if k not in NOT_FAILED))

    def recent_histograms(self, now: float | None = None) -> dict[str, LogHistogram]:
        """Each latency's histogram over the sliding window."""
        now = self._clock() if now is None else now
        out = {name: LogHistogram(*_WINDOW_LAYOUT) for name in LATENCIES}
        for slot in self.window.live(now):
            for name, hist in slot.hists.items():
                if hist:
                    out[name].merge(hist)
        return out

    def recent(self, now: float | None = None) -> Recent:
        """Rates, errors and latency quantiles over the sliding window."""
        now = self._clock() if now is None else now
        slots = self.window.live(now)
        span = self.window.span(now, self.first_time)
        errors: Counter[str] = Counter()
        for slot in slots:
            errors.update(slot.errors)
        return {
            "window_s": self.window.seconds,
            "span_s": span,
            "requests_per_s": sum(s.ok for s in slots) / span,
            "errors_per_s": sum(errors.values()) / span,
            "output_tokens_per_s": sum(s.tokens for s in slots) / span,
            "errors": dict(sorted(errors.items())),
            "latency": {name: _stats(h) for name, h in self.recent_histograms(now).items()},
        }

    def snapshot(self, now: float | None = None) -> Snapshot:
        """Everything at once, as plain JSON-able types (seconds, counts, per-second rates)."""
        now = self._clock() if now is None else now
        return {
            "time": now,
            "totals": {
                "requests": dict(sorted(self.requests.items())),
                "completed": self.completed,
                "failed": self.failed,
                "incomplete": self.incomplete,
                "cancelled": self.requests.get(CANCELLED, 0),
                "prompt_tokens": self.prompt_tokens,
                "generation_tokens": self.generation_tokens,
                "reasoning_tokens": self.reasoning_tokens,
                "cached_tokens": self.cached_tokens,
                "slo_good_requests": self.slo_good_requests,
                "slo_good_generation_tokens": self.slo_good_generation_tokens,
            },
            "errors": self.errors(),
            "latency": {name: _stats(h) for name, h in self.overall.items()},
            "recent": self.recent(now),
        }


def _stats(hist: LogHistogram) -> LatencyStats:
    p50, p95, p99 = hist.quantiles(QUANTILES)
    return {"count": hist.count, "mean": hist.mean, "p50": p50, "p95": p95, "p99": p99}
