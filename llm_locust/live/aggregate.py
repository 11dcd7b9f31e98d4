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
  (a ring of one-second slots), the numbers a person watching a run wants. A value goes into
  its second's slot only (one fill, not two); the whole run's histograms are the seconds gone
  by, merged as each ends, plus the current one, at the same 0.5 % layout.

A master's workers count their rows' ITL gaps themselves (:mod:`llm_locust.live.gap_counts`)
and ship each row's gaps as JSON text (:class:`~llm_locust.record.RawJson`): :meth:`LiveAggregate.add`
leaves such a row's gaps to :meth:`LiveAggregate.add_counts`, which merges the batch's counts.

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

from llm_locust.live import catalog as metrics
from llm_locust.live.gap_counts import GapCounts, gaps_of, latencies_counted
from llm_locust.live.slots import Slot, Window
from llm_locust.record import CANCELLED, INCOMPLETE, NOT_FAILED, OK, RawJson, input_tokens_of
from llm_locust.results.bucket_counts import FixedBucketCounts
from llm_locust.results.histogram import LogHistogram

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
        self._past = {name: LogHistogram() for name in LATENCIES}  # the seconds gone by
        self._current: Slot | None = None  # the second values go into, not yet in _past
        labels = {url: metrics.endpoint_label(url) for url in endpoints or ()}
        few = 0 < len(set(labels.values())) <= metrics.MAX_ENDPOINT_LABELS
        self._endpoint_of = labels if few else {}
        edges = {name: counts.edges for name, counts in self.buckets.items()}
        #: per endpoint label (``None``: too many endpoints, or none given)
        self.endpoints: dict[str, EndpointTotals] | None = (
            {label: EndpointTotals(edges) for label in labels.values()} if few else None
        )
        self._edges = edges
        self.window = Window(window_s, LATENCIES)
        self.first_time: float | None = None
        self.last_time: float | None = None
        self._clock = clock

    # -- folding records in -------------------------------------------------------
    def _slot(self) -> Slot:
        """The current second's slot; a second that ended goes into the run's histograms first. The
        seconds never go back (a clock stepped back keeps the last second)."""
        now = self._clock()
        if self.first_time is None:
            self.first_time = now
        self.last_time = now
        current = self._current
        second = math.floor(now)
        if current is not None:
            if second <= current.second:
                return current
            for name, hist in current.hists.items():
                if hist:
                    self._past[name].merge(hist)
        self._current = slot = self.window.slot(second)
        return slot

    @property
    def overall(self) -> dict[str, LogHistogram]:
        """Each latency's histogram over the whole run (a copy: the seconds gone by and this one)."""
        current = self._current
        return {
            name: hist.copy().merge(current.hists[name]) if current is not None else hist.copy()
            for name, hist in self._past.items()
        }

    def add_counts(self, counts: GapCounts) -> None:
        """A worker's batch of ITL gaps, counted (its rows' gaps came as :class:`RawJson`); the edges
        must be this aggregate's ITL edges (``ValueError``)."""
        if counts.edges != self.buckets["itl"].edges:
            raise ValueError("gap counts over other le edges than the aggregate's")
        slot = self._slot()
        if counts.log:
            slot.hists["itl"].merge(counts.log)
        for replica, le in counts.le.items():
            self.buckets["itl"].merge(le)
            if self.endpoints is not None:
                self._endpoint(replica).buckets["itl"].merge(le)

    def add(self, row: Row) -> None:
        """Fold one finished request (its JSONL form) into every total."""
        slot = self._slot()
        outcome = str(row.get("outcome") or "unknown")
        self.requests[outcome] += 1
        part = self._endpoint(row.get("replica")) if self.endpoints is not None else None
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
        for name in LATENCIES if latencies_counted(row) else ():
            value = row.get(name)
            if name == "itl":  # many values: vectorized (add and add_many agree bit for bit)
                if isinstance(value, RawJson):  # counted by its worker: add_counts
                    continue
                gaps = gaps_of(value)
                if gaps.size:
                    self.buckets[name].add_many(gaps)
                    slot.hists[name].add_many(gaps)
                    if part is not None:
                        part.buckets[name].add_many(gaps)
            elif _finite(value):  # one value: bisect, not numpy's fixed cost (~10 µs a call)
                self.buckets[name].add(value)
                slot.hists[name].add(value)
                if part is not None:
                    part.buckets[name].add(value)
        if self.slo_good is None or self.slo_good(row):
            self.slo_good_requests += 1
            self.slo_good_generation_tokens += tokens

    def _endpoint(self, url: object) -> EndpointTotals:
        """The totals of the endpoint at ``url`` (a row's replica; ``""``: none of the listed ones)."""
        assert self.endpoints is not None
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
        out = {name: LogHistogram() for name in LATENCIES}
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
