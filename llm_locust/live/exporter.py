"""Prometheus ``/metrics`` for a run: the master's (or local runner's) view of every request.

Why a custom collector: the counters and histograms live in a
:class:`~llm_locust.live.aggregate.LiveAggregate` that already sees every record once (workers
ship records to the master), and the gauges (users, requests in flight, workers, stage,
target rate) are facts about the run read at scrape time. A collector turns both into
samples on demand, with names, help texts and bucket edges from
:mod:`llm_locust.live.catalog`; nothing is copied into ``prometheus_client`` metric objects.

- Counters are cumulative over the process: a test restarted in the web UI keeps
  counting, so ``rate()`` never sees a reset.
- Exactly one ``llm_locust_run_info{run_id,model,target}`` series at a time.
- Served on its own port (``--prometheus-port``; a gevent WSGI server started from
  Locust's ``init``, never at import: ``--processes N`` forks after import) and, when
  the web UI runs, at ``/metrics`` on the web UI too (behind ``--web-login`` if set;
  scrapers should use the dedicated port).
- Workers never export: the master has the whole picture.
- Cardinality: no per-request, per-user or per-worker label, ever. The one label that grows
  with the deployment is ``endpoint`` (which of ``--endpoints`` served a request, as
  :func:`~llm_locust.live.catalog.endpoint_label` writes it: no credentials, no query), on
  the families of :data:`~llm_locust.live.catalog.ENDPOINT_SERIES` only (requests, prompt and
  generation tokens, the latency histograms), and only for at most
  :data:`~llm_locust.live.catalog.MAX_ENDPOINT_LABELS` (8) endpoints: one series per endpoint,
  no unlabelled one beside them, so sums are the same with or without the label. With more
  endpoints (or only ``--host``) those families have no ``endpoint`` label: one series, and
  the master logs once that the label is off.
- Each results folder gets ``metrics_final.prom`` when its test is finalized: the
  registry's text form at the end of a headless run, whose totals equal
  ``summary.json``'s ``records`` block (every record, warm-up included: the live series of
  :mod:`llm_locust.results.inclusion`; for the first test of the process; later tests add up).

Options (the run configuration's ``export`` part): ``--prometheus-port P`` (env
``LLM_LOCUST_PROMETHEUS_PORT``; unset = no dedicated server, ``0`` = an ephemeral port,
logged) and ``--prometheus-host`` (``LLM_LOCUST_PROMETHEUS_HOST``, default ``127.0.0.1``;
set ``0.0.0.0`` in a pod so Prometheus can reach it).
"""

from __future__ import annotations

import logging
import secrets
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from gevent.pywsgi import WSGIServer
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, make_wsgi_app
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from llm_locust.config.slo import SloSpec
from llm_locust.live import catalog as metrics
from llm_locust.live.aggregate import LATENCIES, EndpointTotals, LiveAggregate, Row
from llm_locust.live.view import RunView
from llm_locust.record import OK
from llm_locust.results.slo import is_good
from llm_locust.results.summary_model import RunSummary

if TYPE_CHECKING:
    from locust.web import WebUI

    from _typeshed.wsgi import StartResponse, WSGIEnvironment

__all__ = [
    "FINAL_FILE",
    "Exporter",
    "LLMCollector",
    "add_metrics_route",
    "new_run_id",
    "run_gauges",
    "run_info",
    "slo_setup",
]

log = logging.getLogger("llm_locust")
FINAL_FILE = "metrics_final.prom"


# -- what is exported ------------------------------------------------------------------


def run_gauges(view: RunView) -> dict[str, float]:
    """The run's gauges by catalog name, read now."""
    gauges = view.gauges()
    return {
        metrics.USERS.name: float(gauges.users),
        metrics.IN_FLIGHT.name: float(gauges.in_flight),
        metrics.WORKERS.name: float(gauges.workers),
        metrics.STAGE.name: float(gauges.stage),
        metrics.TARGET_REQUEST_RATE.name: float(gauges.target_rate),
        metrics.CLIENT_SATURATED.name: float(gauges.client_saturated),
        metrics.MASTER_BACKLOG_ROWS.name: float(gauges.master_backlog_rows),
        metrics.MASTER_INGEST_LAG.name: float(gauges.master_ingest_lag_s),
    }


def run_info(view: RunView) -> dict[str, str]:
    info = view.info()
    return {"run_id": info.run_id, "model": info.model, "target": info.target}


class LLMCollector(Collector):
    """Counters and histograms from the aggregate, gauges from the run, at scrape time."""

    def __init__(
        self,
        aggregate: LiveAggregate,
        gauges: Callable[[], dict[str, float]],
        info: Callable[[], dict[str, str]],
        server: Callable[[], dict[str, float]] | None = None,
    ) -> None:
        self.aggregate = aggregate
        self.gauges = gauges
        self.info = info
        self.server = server

    def collect(self) -> Iterator[Metric]:
        yield from self._counters()
        yield from self._histograms()
        yield from self._gauges()

    def _parts(self) -> list[tuple[list[str], LiveAggregate | EndpointTotals]]:
        """``([endpoint label] or [], totals)`` per series: one per endpoint, or the whole run."""
        if self.aggregate.endpoints is None:
            return [([], self.aggregate)]
        return [([label], part) for label, part in sorted(self.aggregate.endpoints.items())]

    def _counters(self) -> Iterator[Metric]:
        agg = self.aggregate
        parts = self._parts()
        extra = [metrics.ENDPOINT_LABEL] if agg.endpoints is not None else []
        requests = CounterMetricFamily(
            metrics.REQUESTS.family, metrics.REQUESTS.help, labels=[*metrics.REQUESTS.labels, *extra]
        )
        for endpoint, part in parts:
            outcomes = dict(part.requests)
            outcomes.setdefault(OK, 0)  # so rate(...{outcome="ok"}) exists from the start
            for outcome, n in sorted(outcomes.items()):
                requests.add_metric([outcome, *endpoint], n)
        yield requests
        for spec, attr in (
            (metrics.PROMPT_TOKENS, "prompt_tokens"),
            (metrics.GENERATION_TOKENS, "generation_tokens"),
        ):
            family = CounterMetricFamily(spec.family, spec.help, labels=extra)
            for endpoint, part in parts:
                family.add_metric(endpoint, getattr(part, attr))
            yield family
        for spec, value in (
            (metrics.REASONING_TOKENS, agg.reasoning_tokens),
            (metrics.CACHED_PROMPT_TOKENS, agg.cached_tokens),
            (metrics.SLO_GOOD_REQUESTS, agg.slo_good_requests),
            (metrics.SLO_GOOD_GENERATION_TOKENS, agg.slo_good_generation_tokens),
        ):
            yield CounterMetricFamily(spec.family, spec.help, value=value)

    def _histograms(self) -> Iterator[Metric]:
        extra = [metrics.ENDPOINT_LABEL] if self.aggregate.endpoints is not None else []
        for name, spec in LATENCIES.items():
            family = HistogramMetricFamily(spec.name, spec.help, labels=extra)
            for endpoint, part in self._parts():
                counts = part.buckets[name]
                cumulative = counts.cumulative()
                buckets = [(floatToGoString(e), n) for e, n in zip(counts.edges, cumulative, strict=False)]
                buckets.append(("+Inf", cumulative[-1]))
                family.add_metric(endpoint, buckets, sum_value=counts.sum)
            yield family

    def _gauges(self) -> Iterator[Metric]:
        for name, value in self.gauges().items():
            spec = metrics.CATALOG_BY_NAME[name]
            yield GaugeMetricFamily(spec.name, spec.help, value=value)
        info = self.info()
        spec = metrics.RUN_INFO
        family = GaugeMetricFamily(spec.name, spec.help, labels=spec.labels)
        family.add_metric([info[label] for label in metrics.RUN_INFO.labels], 1.0)
        yield family
        for name, value in (self.server() if self.server else {}).items():
            spec = metrics.CATALOG_BY_NAME[name]
            yield GaugeMetricFamily(spec.name, spec.help, value=value)


# -- the exporter ----------------------------------------------------------------------


class Exporter:
    """A registry of its own over one run, its optional HTTP server and its final dump."""

    def __init__(
        self,
        view: RunView,
        aggregate: LiveAggregate,
        host: str = "127.0.0.1",
        server: Callable[[], Mapping[str, float]] | None = None,
    ) -> None:
        self.view = view
        self.aggregate = aggregate
        self.host = host
        self.port: int | None = None
        self.server_values = server  # the target's own gauges (ServerMetrics.latest), if scraped
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(
            LLMCollector(aggregate, lambda: run_gauges(view), lambda: run_info(view), self._server_values)
        )
        self._server: WSGIServer | None = None

    def _server_values(self) -> dict[str, float]:
        return dict(self.server_values()) if self.server_values is not None else {}

    def render(self) -> bytes:
        return generate_latest(self.registry)

    # -- HTTP --
    def start(self, port: int) -> int:
        """Serve ``/metrics`` on ``host:port`` (0 = ephemeral); returns the bound port."""
        if self._server is not None:
            return self.port or 0
        metrics_app = make_wsgi_app(self.registry)

        def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
            if environ.get("PATH_INFO", "/") not in ("/", "/metrics"):
                start_response("404 Not Found", [("Content-Type", "text/plain")])
                return [b"not found: try /metrics\n"]
            return metrics_app(environ, start_response)

        self._server = WSGIServer((self.host, port), app, log=None, error_log=log)
        self._server.start()  # binds now, serves from a greenlet
        self.port = int(self._server.server_port or port)  # bound by start(): never None here
        log.info("llm-locust: Prometheus metrics on http://%s:%d/metrics", self.host, self.port)
        return self.port

    def start_or_exit(self, port: int) -> None:
        """:meth:`start`; a port that cannot be bound is one line on stderr and exit code 2."""
        try:
            self.start(int(port))
        except OSError as exc:
            sys.stderr.write(f"llm-locust: error: --prometheus-port {port}: {exc.strerror or exc}\n")
            sys.stderr.flush()
            raise SystemExit(2) from None

    def stop(self) -> None:
        """Stop serving; safe to call more than once."""
        server, self._server = self._server, None
        if server is not None:
            server.stop(timeout=1)

    # -- final dump --
    def write_final(self, directory: str | Path) -> Path:
        path = Path(directory) / FINAL_FILE
        tmp = path.with_suffix(".prom.tmp")
        tmp.write_bytes(self.render())
        tmp.replace(path)
        return path

    def on_finalized(self, summary: RunSummary, directory: Path | None) -> Path | None:
        """A test's summary is written: ``metrics_final.prom`` beside it (with a results folder)."""
        if directory is None:
            return None
        try:
            return self.write_final(directory)
        except OSError as exc:
            log.warning("llm-locust: could not write %s: %s", FINAL_FILE, exc)
            return None


# -- wiring ----------------------------------------------------------------------------


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(2)


def slo_setup(spec: SloSpec | None) -> tuple[Callable[[Row], bool] | None, dict[str, list[float]]]:
    """The per-request SLO predicate (on a row) and bucket thresholds of the run's SLO, if any."""
    if spec is None:
        return None, {}
    thresholds: dict[str, list[float]] = {}
    for line in spec:
        if line.metric in LATENCIES and not line.intended:
            thresholds.setdefault(line.metric, []).append(line.threshold)
    return (lambda row: is_good(row, spec)), thresholds


def add_metrics_route(web_ui: WebUI, exporter: Exporter) -> None:
    """``/metrics`` on Locust's web UI too (behind ``--web-login`` if set)."""
    from flask import Response

    def llm_locust_metrics() -> Response:
        return Response(exporter.render(), mimetype=CONTENT_TYPE_LATEST)

    assert web_ui.app is not None  # built with Locust's web UI, before this runs
    web_ui.app.add_url_rule(
        "/metrics", "llm_locust_metrics", web_ui.auth_required_if_enabled(llm_locust_metrics)
    )
