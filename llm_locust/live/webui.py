"""LLM charts in Locust's web UI: a page of our own at ``/llm`` plus an "LLM" tab.

Locust's UI charts requests per second and response times; an LLM run needs TTFT,
TPOT, ITL and E2E quantiles, output tokens per second and the stage being run. Locust
lets an extension add *tables* as tabs (``extended_tabs`` / ``extended_tables``, filled
from ``/stats/requests``'s ``extended_stats``) but not charts, so there are two parts:

- an "LLM" tab in Locust's own UI: a table of the current quantiles and rates, with a
  row linking to the chart page (Locust renders tab cells as text, so a small script
  injected into Locust's page, ``web/tablink.js``, makes that cell a link);
- ``/llm``: a static page (``llm_locust/web/``, charts by the vendored Apache ECharts that
  ``report.html`` uses too, no CDN) polling ``/llm/stats`` every 2 s; it marks stage starts
  and SLO thresholds (``marks`` in ``/llm/stats``). Once a test has ended, ``/llm/stats`` carries its
  ``result`` (from ``summary.json``): the SLO verdict, the capacity sentence, each stage's
  verdict, and the whole run's totals, which the page's tiles then show instead of the
  trailing 30 s window (the load has stopped, so a window rate would only decay to 0).
  A capacity search (``--search``) adds ``search``: a row per judged step (level, req/s, TTFT
  and E2E P95, success, verdict, the SLO term that decided it, runs-on and extensions) as the
  search decides them, the step running, and the answer as it forms (highest pass, lowest
  fail, why it stopped); the page's probe table shows them.

The server keeps the chart history (:class:`~llm_locust.live.aggregate.History`: 15 min at 2 s
resolution), so a page opened mid-run shows what happened before; the page asks only
for points newer than its last one. On the master of a distributed run the aggregate
sees every worker's records. Every route honours ``--web-login``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypedDict

import gevent

from llm_locust.config.jsontypes import JsonObject
from llm_locust.live import catalog as metrics
from llm_locust.live.aggregate import LiveAggregate, Row, Snapshot
from llm_locust.live.exporter import run_info
from llm_locust.live.gap_counts import GapCounts
from llm_locust.live.history import History, HistoryPoint, history_point
from llm_locust.live.result_view import ChartMarks, ResultView, result_view
from llm_locust.live.tab import TabRow, table_rows
from llm_locust.live.view import RunView
from llm_locust.results.summary_model import RunSummary

__all__ = ["HISTORY_S", "SAMPLE_S", "LiveWebUI", "Stats"]

log = logging.getLogger("llm_locust")
SAMPLE_S = 2.0
HISTORY_S = 15 * 60


class Stats(TypedDict):
    """The ``/llm/stats`` body."""

    run: dict[str, float | str | bool | int | None]
    snapshot: Snapshot
    history: list[HistoryPoint]
    sample_s: float
    result: ResultView | None
    marks: ChartMarks
    search: JsonObject | None


class LiveWebUI:
    """The chart page's data: the live aggregate, the run's gauges, a history ring, the last result."""

    def __init__(
        self,
        view: RunView,
        aggregate: LiveAggregate,
        server: Callable[[], Mapping[str, float]] | None = None,
        sample_s: float = SAMPLE_S,
        fresh: Callable[[], LiveAggregate] | None = None,
    ) -> None:
        self.view = view
        self.aggregate = aggregate  # this test's records (fed by add)
        self.fresh = fresh  # a new, empty aggregate for each test
        self.server = server  # the target's own gauges (ServerMetrics.latest), if scraped
        self.sample_s = sample_s
        self.history = History(maxlen=int(HISTORY_S / sample_s))
        self.last_summary: RunSummary | None = None
        self.test = 0  # tests started: the page starts its series anew when this changes
        self._greenlet: gevent.Greenlet | None = None

    def on_test_start(self) -> None:
        """A test starts: the previous one's verdict, totals, latencies, errors and chart series
        are not its own (the exporter's aggregate, whose counters must only grow, keeps them)."""
        self.test += 1
        self.last_summary = None
        self.history.clear()
        if self.fresh is not None:
            self.aggregate = self.fresh()

    def add(self, row: Row) -> None:
        """A finished request of the current test (the bus)."""
        self.aggregate.add(row)

    def add_counts(self, counts: GapCounts) -> None:
        """A worker's batch of the current test's ITL gaps, counted (the bus)."""
        self.aggregate.add_counts(counts)

    def on_finalized(self, summary: RunSummary, directory: Path | None) -> None:
        """A test ended: the page shows its result from now on."""
        self.last_summary = summary

    def snapshot(self) -> Snapshot:
        return self.aggregate.snapshot()

    def gauges(self) -> dict[str, float | str | bool | None]:
        raw = self.view.gauges()
        server = self.server() if self.server is not None else {}
        return {
            "users": float(raw.users),
            "in_flight": float(raw.in_flight),
            "workers": float(raw.workers),
            "stage": float(raw.stage),
            "stage_label": raw.stage_label,
            "target_rate": float(raw.target_rate),
            "client_saturated": bool(raw.client_saturated),
            "server_running": server.get(metrics.SERVER_NUM_REQUESTS_RUNNING.name),
            "server_waiting": server.get(metrics.SERVER_NUM_REQUESTS_WAITING.name),
            "server_kv_cache": server.get(metrics.SERVER_KV_CACHE_USAGE.name),
        }

    def sample(self) -> HistoryPoint:
        point = history_point(self.snapshot(), self.gauges())
        self.history.append(point)
        return point

    def stats(self, since: float | None = None) -> Stats:
        """The ``/llm/stats`` body: run facts, the live snapshot, history newer than ``since``."""
        return {
            "run": {
                **run_info(self.view),
                "role": self.view.role,
                "state": self.view.state(),
                "test": self.test,
                **self.gauges(),
            },
            "snapshot": self.snapshot(),
            "history": self.history.since(since),
            "sample_s": self.sample_s,
            "result": result_view(self.last_summary),
            "marks": self.view.marks(),
            "search": self.view.search(),
        }

    def table_rows(self) -> list[TabRow]:
        """Rows of the "LLM" tab (:func:`llm_locust.live.tab.table_rows`)."""
        return table_rows(self.snapshot(), self.last_summary, self.view.gauges().client_saturated)

    def start(self) -> None:
        if self._greenlet is None:
            self._greenlet = gevent.spawn(self._loop)

    def _loop(self) -> None:
        while True:
            try:
                self.sample()
            except Exception:  # a chart point must never take the master down
                log.exception("llm-locust: web UI sample failed")
            gevent.sleep(self.sample_s)

    def stop(self) -> None:
        greenlet, self._greenlet = self._greenlet, None
        if greenlet is not None:
            greenlet.kill(block=False)
