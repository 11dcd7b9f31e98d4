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

import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gevent
from pydantic import BaseModel

from llm_locust.live import catalog as metrics
from llm_locust.live.aggregate import LATENCIES, History, LiveAggregate, history_point
from llm_locust.live.exporter import run_info
from llm_locust.live.view import RunView
from llm_locust.load.search import Verdict
from llm_locust.results.headline import headline
from llm_locust.results.summary import inconclusive_reason
from llm_locust.results.summary_model import RunSummary, StageRow

if TYPE_CHECKING:
    from llm_locust.config.slo import SloLine

__all__ = [
    "CHARTS_LINK_TEXT",
    "HISTORY_S",
    "SAMPLE_S",
    "SATURATED_NOW",
    "WEB_DIR",
    "LiveWebUI",
    "add_to_page",
    "add_web_ui",
    "chart_marks",
    "result_view",
]

log = logging.getLogger("llm_locust")
WEB_DIR = Path(__file__).resolve().parent.parent / "web"
SAMPLE_S = 2.0
HISTORY_S = 15 * 60
TAB_KEY = "llm-locust"
CHARTS_LINK_TEXT = "Charts: open /llm"
#: The "Client" row while a load process is saturated (the live gauge ``llm_locust_client_saturated``).
SATURATED_NOW = "saturated now: timings unreliable, add workers"
_LABELS = {
    **{"ttft": "TTFT", "ttft_visible": "TTFT visible", "tpot": "TPOT", "itl": "ITL", "e2e": "E2E"},
    **{"time_to_first_tool_call": "First tool call", "time_to_tool_args_complete": "Tool args complete"},
}

_TOOL_LATENCIES = ("time_to_first_tool_call", "time_to_tool_args_complete")


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

    def add(self, row: dict[str, Any]) -> None:
        """A finished request of the current test (the bus)."""
        self.aggregate.add(row)

    def on_finalized(self, summary: RunSummary, directory: Path | None) -> None:
        """A test ended: the page shows its result from now on."""
        self.last_summary = summary

    def snapshot(self) -> dict[str, Any]:
        return self.aggregate.snapshot()

    def gauges(self) -> dict[str, Any]:
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

    def sample(self) -> dict[str, Any]:
        point = history_point(self.snapshot(), self.gauges())
        self.history.append(point)
        return point

    def stats(self, since: float | None = None) -> dict[str, Any]:
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

    def table_rows(self) -> list[dict[str, Any]]:
        """Rows of the "LLM" tab: quantiles (ms) per latency, rates, totals, the chart link. While a
        test runs, over the last 30 s; once it ended, the summary's whole-run values (a window of
        a stopped load only decays to zeros), and its one completed count."""
        snap = self.snapshot()
        recent = snap["recent"]
        result = result_view(self.last_summary)
        rows = _result_rows(result) if result else []
        if not result and self.view.gauges().client_saturated:
            rows.append({"metric": "Client", "p50": "", "p95": "", "p99": "", "count": SATURATED_NOW})
        rows += _whole_run_rows(self.last_summary) if self.last_summary else _window_rows(recent)
        blank = {"p50": "", "p95": "", "p99": ""}
        if result:
            tokens, requests, scope = result["output_throughput"], result["request_throughput"], "whole run"
        else:
            tokens, requests, scope = recent["output_tokens_per_s"], recent["requests_per_s"], "last 30s"
        rows.append({"metric": f"Output tokens/s ({scope})", **blank, "count": round(tokens, 1)})
        rows.append({"metric": f"Requests/s ({scope})", **blank, "count": round(requests, 2)})
        counts = {k: "-" if v is None else v for k, v in (result or snap["totals"]).items()}
        rows.append(
            {"metric": "Completed | failed", **blank, "count": f"{counts['completed']} | {counts['failed']}"}
        )
        rows.append({"metric": CHARTS_LINK_TEXT, **blank, "count": ""})
        return rows

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


def _ms(seconds: float | None) -> float | str:
    return "" if seconds is None else round(seconds * 1000.0, 1)


def _window_rows(recent: dict[str, Any]) -> list[dict[str, Any]]:
    """The tab's latency rows while a test runs: the last 30 s of finished requests."""
    rows = []
    for name in LATENCIES:
        stats = recent["latency"][name]
        if name in _TOOL_LATENCIES and not stats["count"]:
            continue  # a run without tool calls: no rows for them
        rows.append(
            {
                "metric": f"{_LABELS[name]} (last {recent['window_s']}s, ms)",
                "p50": _ms(stats["p50"]),
                "p95": _ms(stats["p95"]),
                "p99": _ms(stats["p99"]),
                "count": stats["count"],
            }
        )
    return rows


#: The tab's rows after a test: summary name -> label (the summary's keys, ``e2el`` for E2E).
_WHOLE_RUN = {"ttft": "TTFT", "ttft_visible": "TTFT visible", "tpot": "TPOT", "itl": "ITL", "e2el": "E2E"}


def _whole_run_rows(summary: RunSummary) -> list[dict[str, Any]]:
    """The tab's latency rows once a test ended: the summary's whole-run percentiles (ms, as
    summary.json); a latency the summary has no value for shows blank, never 0."""
    rows = []
    for name, label in _WHOLE_RUN.items():
        values = [summary.ms(f"p{q}", name) for q in (50, 95, 99)]
        if name == "ttft_visible" and not summary.reasoning:
            continue  # not a reasoning model: the same as TTFT
        shown = ["" if v is None else round(float(v), 1) for v in values]
        rows.append(
            {
                "metric": f"{label} (whole run, ms)",
                "p50": shown[0],
                "p95": shown[1],
                "p99": shown[2],
                "count": "",
            }
        )
    return rows


#: SLO metric -> the live chart it is drawn on
_SLO_CHARTS = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2e": "e2e"}


def chart_marks(
    stages: Sequence[tuple[str, float]], t0: float | None, slo: Iterable[SloLine], now: float
) -> dict[str, Any]:
    """What the charts mark: each started stage's start (wall clock) and label (``stages``:
    (label, start_s) pairs of the plan that started at ``t0``), and each request-level SLO
    threshold (seconds) with the chart it belongs to."""
    started = []
    if t0 is not None:
        started = [{"label": label, "t": t0 + start_s} for label, start_s in stages if t0 + start_s <= now]
    lines = []
    for line in slo:
        if line.kind == "request" and line.metric in _SLO_CHARTS:
            lines.append(
                {"metric": _SLO_CHARTS[line.metric], "objective": line.text, "threshold": line.threshold}
            )
    return {"stages": started, "slo": lines}


def result_view(summary: RunSummary | None) -> dict[str, Any] | None:
    """What the page shows of a finished test's summary (``None`` while it runs), in
    ``summary.json``'s keys."""
    if summary is None:
        return None
    judged = headline(summary)
    return {
        "capacity": summary.capacity,
        "client_saturated": summary.client_saturated,
        "interrupted_by": summary.interrupted_by,
        "completed": summary.completed,
        "failed": summary.failed,
        "incomplete": summary.incomplete,
        "excluded": _block(summary.excluded),
        "duration": summary.duration,
        "measured_span": _block(summary.measured_span),
        "records": _block(summary.records),
        "request_throughput": summary.request_throughput,
        "output_throughput": summary.output_throughput,
        **{f"median_{name}_ms": summary.ms("median", name) for name in ("ttft", "tpot", "itl", "e2el")},
        "slo_passed": None if summary.slo is None else summary.slo.passed,  # the point estimate
        "slo_verdict": None if judged is None else str(judged[0]),  # shown to pass, or not
        "slo_reason": None if judged is None else judged[1],
        "stages": [_stage_view(stage) for stage in summary.stages or ()],
    }


def _block(block: BaseModel | None) -> dict[str, Any] | None:
    return None if block is None else block.model_dump(exclude_unset=True)


def _stage_view(stage: StageRow) -> dict[str, Any]:
    inconclusive = stage.verdict is Verdict.INCONCLUSIVE
    return {
        "label": stage.label,
        "verdict": None if stage.verdict is None else stage.verdict.value,
        "invalid_reason": stage.invalid_reason,
        "completed": stage.completed,
        "request_throughput": stage.request_throughput,
        "p95_ttft_ms": stage.ms("p95", "ttft"),
        "why": inconclusive_reason(stage.slo) if inconclusive else "",
    }


def _result_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The tab's first rows once a test has ended: the verdict and the capacity sentence."""
    blank = {"p50": "", "p95": "", "p99": ""}
    rows = []
    if result["slo_passed"] is not None:
        verdict = str(result.get("slo_verdict") or ("pass" if result["slo_passed"] else "fail")).upper()
        if result.get("slo_verdict") == "inconclusive":
            verdict += f" (point estimate {'PASS' if result['slo_passed'] else 'FAIL'})"
        if result.get("slo_reason"):
            verdict += f": {result['slo_reason']}"
        rows.append({"metric": "SLO", **blank, "count": verdict})
    if result.get("capacity"):
        rows.append({"metric": "Capacity", **blank, "count": result["capacity"]})
    if result.get("client_saturated"):
        rows.append({"metric": "Client", **blank, "count": result["client_saturated"]})
    return rows


def add_web_ui(web_ui: Any, ui: LiveWebUI) -> None:
    """Add ``/llm``, ``/llm/stats`` and the "LLM" tab to Locust's web UI and start sampling."""
    _add_routes(web_ui, ui)
    _add_tab(web_ui, ui)
    ui.start()


def _add_routes(web_ui: Any, ui: LiveWebUI) -> None:
    from flask import jsonify, request, send_from_directory

    def llm_page() -> Any:
        response = send_from_directory(WEB_DIR, "index.html")
        response.headers["Cache-Control"] = "no-store"
        return response

    def llm_static(name: str) -> Any:
        return send_from_directory(WEB_DIR, name)

    def llm_stats() -> Any:
        since = request.args.get("since", type=float)
        return jsonify(ui.stats(since))

    for rule, endpoint, view in (
        ("/llm", "llm_locust_page", llm_page),
        ("/llm/static/<path:name>", "llm_locust_static", llm_static),
        ("/llm/stats", "llm_locust_stats", llm_stats),
    ):
        web_ui.app.add_url_rule(rule, endpoint, web_ui.auth_required_if_enabled(view))


def _add_tab(web_ui: Any, ui: LiveWebUI) -> None:
    """An "LLM" table tab in Locust's UI, fed through ``/stats/requests``."""
    args = web_ui.template_args
    args["extended_tabs"] = [*args.get("extended_tabs", []), {"title": "LLM", "key": TAB_KEY}]
    structure = [
        {"key": "metric", "title": "Metric"},
        {"key": "p50", "title": "p50"},
        {"key": "p95", "title": "p95"},
        {"key": "p99", "title": "p99"},
        {"key": "count", "title": "Count / value"},
    ]
    args["extended_tables"] = [*args.get("extended_tables", []), {"key": TAB_KEY, "structure": structure}]

    from flask import request

    @web_ui.app.after_request
    def _extend_stats(response: Any) -> Any:
        if request.path != "/stats/requests" or response.status_code != 200:
            return response
        try:
            body = json.loads(response.get_data())
        except ValueError:
            return response
        extra = {"key": TAB_KEY, "data": ui.table_rows()}
        body["extended_stats"] = [*body.get("extended_stats", []), extra]
        response.set_data(json.dumps(body))
        return response

    # Locust's page gets ``tablink.js``, which makes the tab's chart row a link
    add_to_page(web_ui, '<script src="llm/static/tablink.js"></script>')


def add_to_page(web_ui: Any, tags: str) -> None:
    """Locust's own page (``/``) gets ``tags`` at the end of its body: after its ``templateArgs``,
    before its React bundle runs (a module script, run once the page is parsed)."""
    from flask import request

    @web_ui.app.after_request
    def _add(response: Any) -> Any:
        if request.endpoint != "locust.index" or response.status_code != 200 or response.direct_passthrough:
            return response
        html = response.get_data(as_text=True)
        if "</body>" in html and tags not in html:
            response.set_data(html.replace("</body>", tags + "</body>", 1))
        return response
