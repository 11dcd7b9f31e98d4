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
- Each results folder gets ``metrics_final.prom`` when its test is finalized: the
  registry's text form at the end of a headless run, whose totals equal
  ``summary.json``'s (for the first test of the process; later tests add up).

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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gevent
from gevent.pywsgi import WSGIServer
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, make_wsgi_app
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from llm_locust.config.slo import SloSpec
from llm_locust.live import catalog as metrics
from llm_locust.live.aggregate import LATENCIES, LiveAggregate

__all__ = [
    "FINAL_FILE",
    "Exporter",
    "LLMCollector",
    "exporter_for",
    "install_exporter",
    "run_gauges",
    "slo_setup",
]

log = logging.getLogger("llm_locust")
FINAL_FILE = "metrics_final.prom"
_EXPORTERS: dict[int, Exporter] = {}


# -- what is exported ------------------------------------------------------------------


def run_gauges(run: Any) -> dict[str, float]:
    """The run's gauges by catalog name, read now."""
    runner = getattr(run.environment, "runner", None)
    stage = getattr(run, "current_stage", None)
    return {
        metrics.USERS.name: float(getattr(runner, "user_count", 0) or 0),
        metrics.IN_FLIGHT.name: float(run.total_in_flight()),
        metrics.WORKERS.name: float(_workers(run, runner)),
        metrics.STAGE.name: float(stage.index if stage is not None else -1),
        metrics.TARGET_REQUEST_RATE.name: float(getattr(run, "target_rate", None) or 0.0),
    }


def _workers(run: Any, runner: Any) -> int:
    if run.role != "master":
        return 1
    clients = getattr(runner, "clients", None)
    if clients is None:
        return 0
    return sum(1 for c in clients.values() if c.state != "missing")


def run_info(run: Any) -> dict[str, str]:
    config = getattr(run, "config", None)
    model = getattr(config, "model", None)
    if model is None and getattr(run, "run_config", None) is not None:
        model = run.run_config.request.model
    return {
        "run_id": str(getattr(run, "run_id", "") or ""),
        "model": str(model or ""),
        "target": str(getattr(run.environment, "host", None) or ""),
    }


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

    def _counters(self) -> Iterator[Metric]:
        agg = self.aggregate
        requests = CounterMetricFamily(
            metrics.REQUESTS.family, metrics.REQUESTS.help, labels=metrics.REQUESTS.labels
        )
        outcomes = dict(agg.requests)
        outcomes.setdefault("ok", 0)  # so rate(...{outcome="ok"}) exists from the start
        for outcome, n in sorted(outcomes.items()):
            requests.add_metric([outcome], n)
        yield requests
        for spec, value in (
            (metrics.PROMPT_TOKENS, agg.prompt_tokens),
            (metrics.GENERATION_TOKENS, agg.generation_tokens),
            (metrics.SLO_GOOD_REQUESTS, agg.slo_good_requests),
            (metrics.SLO_GOOD_GENERATION_TOKENS, agg.slo_good_generation_tokens),
        ):
            yield CounterMetricFamily(spec.family, spec.help, value=value)

    def _histograms(self) -> Iterator[Metric]:
        for name, (_, spec) in LATENCIES.items():
            counts = self.aggregate.buckets[name]
            cumulative = counts.cumulative()
            buckets = [(floatToGoString(edge), n) for edge, n in zip(counts.edges, cumulative, strict=False)]
            buckets.append(("+Inf", cumulative[-1]))
            yield HistogramMetricFamily(spec.name, spec.help, buckets=buckets, sum_value=counts.sum)

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

    def __init__(self, run: Any, aggregate: LiveAggregate, host: str = "127.0.0.1") -> None:
        self.run = run
        self.aggregate = aggregate
        self.host = host
        self.port: int | None = None
        self.server_metrics: Any = None  # a ServerMetrics, set by install_server_metrics
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(
            LLMCollector(aggregate, lambda: run_gauges(run), lambda: run_info(run), self._server_values)
        )
        self._server: WSGIServer | None = None
        self._dumped: Any = None  # the ResultsWriter last dumped for

    def _server_values(self) -> dict[str, float]:
        return self.server_metrics.latest() if self.server_metrics is not None else {}

    def render(self) -> bytes:
        return generate_latest(self.registry)

    # -- HTTP --
    def start(self, port: int) -> int:
        """Serve ``/metrics`` on ``host:port`` (0 = ephemeral); returns the bound port."""
        if self._server is not None:
            return self.port or 0
        metrics_app = make_wsgi_app(self.registry)

        def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
            if environ.get("PATH_INFO", "/") not in ("/", "/metrics"):
                start_response("404 Not Found", [("Content-Type", "text/plain")])
                return [b"not found: try /metrics\n"]
            return metrics_app(environ, start_response)

        self._server = WSGIServer((self.host, port), app, log=None, error_log=log)
        self._server.start()  # binds now, serves from a greenlet
        self.port = int(self._server.server_port)
        log.info("llm-locust: Prometheus metrics on http://%s:%d/metrics", self.host, self.port)
        return self.port

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

    def finalized(self) -> bool:
        """The current test's summary is written (the run dropped its finalizer)."""
        writer = getattr(self.run, "writer", None)
        return writer is not None and getattr(self.run, "finalizer", None) is None

    def dump_if_finalized(self) -> Path | None:
        """Write ``metrics_final.prom`` once per results folder, after its summary."""
        writer = getattr(self.run, "writer", None)
        if not self.finalized() or writer is self._dumped or getattr(writer, "directory", None) is None:
            return None
        self._dumped = writer
        try:
            return self.write_final(writer.directory)
        except OSError as exc:
            log.warning("llm-locust: could not write %s: %s", FINAL_FILE, exc)
            return None

    def _await_final(self, timeout: float = 300.0) -> None:
        """On the master the summary waits for the workers' last records: poll for it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.finalized():
                self.dump_if_finalized()
                return
            gevent.sleep(0.2)


# -- wiring ----------------------------------------------------------------------------


def exporter_for(run: Any) -> Exporter | None:
    return _EXPORTERS.get(id(run))


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(2)


def slo_setup(spec: SloSpec | None) -> tuple[Callable[[Any], bool] | None, dict[str, list[float]]]:
    """The per-request SLO predicate and bucket thresholds of the run's SLO, if it has one."""
    if spec is None:
        return None, {}
    from llm_locust.record import RequestRecord
    from llm_locust.results import slo

    thresholds: dict[str, list[float]] = {}
    for line in spec:
        if line.metric in LATENCIES and not line.intended:
            thresholds.setdefault(line.metric, []).append(line.threshold)
    return (lambda row: slo.is_good(RequestRecord.from_json(row), spec)), thresholds


def install_exporter(run: Any) -> Exporter | None:
    """Create (once) the run's exporter; ``None`` on workers. Call from Locust's ``init``.

    Registers the aggregate as a consumer of every record, sets ``run.run_id`` if empty,
    starts the dedicated server if ``--prometheus-port`` is given, adds ``/metrics`` to
    the web UI when there is one, and hooks the final dump and shutdown.
    """
    if run.role == "worker":
        return None
    existing = exporter_for(run)
    if existing is not None:
        return existing
    config = run.run_config
    if not run.run_id:
        run.run_id = new_run_id()
    good, thresholds = slo_setup(config.slo)
    aggregate = LiveAggregate(slo_good=good, thresholds=thresholds)
    exporter = Exporter(run, aggregate, host=config.export.prometheus_host)
    _EXPORTERS[id(run)] = exporter
    run.consumers.append(aggregate.add)
    port = config.export.prometheus_port
    if port is not None:
        try:
            exporter.start(int(port))
        except OSError as exc:
            sys.stderr.write(f"llm-locust: error: --prometheus-port {port}: {exc.strerror or exc}\n")
            sys.stderr.flush()
            raise SystemExit(2) from None
    _add_web_route(run, exporter)
    _hook_events(run, exporter)
    return exporter


def _add_web_route(run: Any, exporter: Exporter) -> None:
    web_ui = getattr(run.environment, "web_ui", None)
    if web_ui is None:
        return
    from flask import Response

    def llm_locust_metrics() -> Response:
        return Response(exporter.render(), mimetype=CONTENT_TYPE_LATEST)

    web_ui.app.add_url_rule(
        "/metrics", "llm_locust_metrics", web_ui.auth_required_if_enabled(llm_locust_metrics)
    )


def _hook_events(run: Any, exporter: Exporter) -> None:
    events = run.environment.events

    def on_test_stop(**_: Any) -> None:
        # Runs after the run's own listener: a local run is finalized already.
        if exporter.dump_if_finalized() is None:
            gevent.spawn(exporter._await_final)

    def on_quitting(**_: Any) -> None:
        exporter.dump_if_finalized()
        exporter.stop()

    events.test_stop.add_listener(on_test_stop)
    events.quitting.add_listener(on_quitting)
