"""The live outputs of a run, wired at ``init``: the Prometheus exporter, the server-metrics
scraper and the web UI page, each built from small typed pieces (:mod:`llm_locust.live.view`).

On the local runner or the master (workers never export: the master has the whole picture):

- a :class:`~llm_locust.live.aggregate.LiveAggregate` subscribed to the record bus;
- the :class:`~llm_locust.live.exporter.Exporter` over it and the run's view, its own port
  with ``--prometheus-port`` (a bad one: one line and exit 2), ``/metrics`` on the web UI,
  ``metrics_final.prom`` written on ``finalized``;
- with ``--server-metrics``, a :class:`~llm_locust.live.server_metrics.ServerMetrics` whose
  samples go to the running test's results folder and whose latest values both re-export;
- with a web UI, the ``/llm`` page (:class:`~llm_locust.live.webui.LiveWebUI`), which keeps
  the last ``finalized`` summary to show the result.
"""

from __future__ import annotations

from locust.runners import Runner

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from llm_locust.config.jsontypes import JsonObject
from llm_locust.config.redact import strip_credentials
from llm_locust.config.role import Role
from llm_locust.config.stage_kind import StageKind
from llm_locust.live import catalog as metrics
from llm_locust.live.aggregate import LiveAggregate
from llm_locust.live.exporter import Exporter, add_metrics_route, slo_setup
from llm_locust.live.result_view import ChartMarks, chart_marks
from llm_locust.live.routes import add_web_ui
from llm_locust.live.server_metrics import ServerMetrics
from llm_locust.live.view import Gauges, RunInfo
from llm_locust.live.webui import LiveWebUI
from llm_locust.load.plan import LoadPlan
from llm_locust.results.saturation import LIVE_SPAN_S, client_block
from llm_locust.runtime.bus import Finalized, RecordBus
from llm_locust.runtime.context import LiveState, RunContext
from llm_locust.runtime.distributed import Inbox
from llm_locust.runtime.runners import ConfiguredRun
from llm_locust.runtime.search import SearchDriver
from llm_locust.runtime.session import TestResults

__all__ = ["NodeView", "Outputs", "ViewedFleet", "ViewedRun", "install_outputs"]

log = logging.getLogger("llm_locust")


class ViewedFleet(Protocol):
    """What the gauges read of every process (the node's fleet)."""

    @property
    def inbox(self) -> Inbox | None: ...

    def total_in_flight(self) -> int: ...

    def health_intervals(self, start: float | None = None) -> Sequence[Mapping[str, float | str]]: ...


class ViewedRun(ConfiguredRun, Protocol):
    """What the live outputs read of the node where results are kept, and where they subscribe."""

    @property
    def run_id(self) -> str: ...
    @property
    def plan(self) -> LoadPlan: ...
    @property
    def live(self) -> LiveState: ...
    @property
    def context(self) -> RunContext | None: ...
    @property
    def search(self) -> SearchDriver | None: ...
    @property
    def results(self) -> TestResults | None: ...
    @property
    def fleet(self) -> ViewedFleet: ...
    @property
    def bus(self) -> RecordBus: ...
    @property
    def finalized(self) -> Finalized: ...


class NodeView:
    """The node as the live outputs read it (:class:`~llm_locust.live.view.RunView`); read only."""

    def __init__(self, ext: ViewedRun) -> None:
        self.ext = ext
        self.role = ext.role

    def gauges(self) -> Gauges:
        ext = self.ext
        runner = ext.environment.runner
        stage = ext.live.stage
        rate = stage.target if stage is not None and stage.kind is StageKind.RATE else 0.0
        return Gauges(
            users=int(getattr(runner, "user_count", 0) or 0),
            in_flight=ext.fleet.total_in_flight(),
            workers=self._workers(runner),
            stage=stage.index if stage is not None else -1,
            stage_label=stage.label if stage is not None else "",
            target_rate=rate,
            client_saturated=self._client_saturated(),
            **self._ingest(),
        )

    def _ingest(self) -> dict[str, float]:
        inbox = self.ext.fleet.inbox  # a master's
        if inbox is None:
            return {}
        return {"master_backlog_rows": inbox.ingest.rows_behind, "master_ingest_lag_s": inbox.ingest.lag_s}

    def _client_saturated(self) -> bool:
        now = time.time()
        start = now - LIVE_SPAN_S
        return client_block(self.ext.fleet.health_intervals(start), start, now)["saturated"]

    def _workers(self, runner: Runner | None) -> int:
        if self.role != Role.MASTER:
            return 1
        clients = getattr(runner, "clients", None)
        return 0 if clients is None else sum(1 for c in clients.values() if c.state != "missing")

    def info(self) -> RunInfo:
        ext = self.ext
        client = ext.context.client if ext.context is not None else None
        model = getattr(client, "model", None) or ext.run_config.request.model
        target = strip_credentials(str(ext.environment.host or ""))
        return RunInfo(run_id=ext.run_id, model=str(model or ""), target=target)

    def state(self) -> str:
        return str(getattr(self.ext.environment.runner, "state", ""))

    def marks(self) -> ChartMarks:
        """The started stages of the plan and the request-level SLO lines, for the charts."""
        ext = self.ext
        context = ext.context
        t0 = context.t0 if context is not None and context.t0 is not None else ext.live.pending_t0
        stages = [(s.label, s.start_s) for s in ext.plan.stages or ()]
        return chart_marks(stages, t0 if stages else None, ext.run_config.slo or (), time.time())

    def search(self) -> JsonObject | None:
        search = self.ext.search
        return None if search is None else search.live()

    def results_folder(self) -> Path | None:
        """The running test's results folder (server metrics go there)."""
        results = self.ext.results
        if results is None or results.summary is not None:
            return None  # no test yet, or its summary is written
        return results.writer.directory


@dataclass
class Outputs:
    """What :func:`install_outputs` made (``None`` where not asked for)."""

    aggregate: LiveAggregate
    exporter: Exporter
    server_metrics: ServerMetrics | None = None
    web: LiveWebUI | None = None


def install_outputs(ext: ViewedRun) -> Outputs:
    """The live outputs of the node's run (the master's, the local runner's); call from ``init``."""
    config = ext.run_config
    view = NodeView(ext)
    good, thresholds = slo_setup(config.slo)
    endpoints = config.request.endpoints

    def fresh() -> LiveAggregate:
        return LiveAggregate(slo_good=good, thresholds=thresholds, endpoints=endpoints)

    aggregate = fresh()
    if endpoints and aggregate.endpoints is None:
        log.info(
            "llm-locust: %d endpoints, more than %d: the exported series carry no endpoint label "
            "(the summary's replicas block breaks every endpoint down)",
            len(endpoints),
            metrics.MAX_ENDPOINT_LABELS,
        )
    ext.bus.subscribe(aggregate.add)
    ext.bus.subscribe_gaps(aggregate.add_counts)
    scraper = _server_metrics(ext, view)
    latest = scraper.latest if scraper is not None else None
    exporter = Exporter(view, aggregate, host=config.export.prometheus_host, server=latest)
    if config.export.prometheus_port is not None:
        exporter.start_or_exit(config.export.prometheus_port)
    ext.finalized.subscribe(exporter.on_finalized)
    events = ext.environment.events
    events.quitting.add_listener(lambda **_: exporter.stop())
    outputs = Outputs(aggregate, exporter, scraper)
    web_ui = getattr(ext.environment, "web_ui", None)
    if web_ui is not None:
        add_metrics_route(web_ui, exporter)
        outputs.web = LiveWebUI(view, fresh(), server=latest, fresh=fresh)  # the page: each test its own
        ext.bus.subscribe(outputs.web.add)
        ext.bus.subscribe_gaps(outputs.web.add_counts)
        ext.finalized.subscribe(outputs.web.on_finalized)
        events.test_start.add_listener(lambda **_: outputs.web.on_test_start() if outputs.web else None)
        add_web_ui(web_ui, outputs.web)
        events.quitting.add_listener(lambda **_: outputs.web.stop() if outputs.web else None)
    return outputs


def _server_metrics(ext: ViewedRun, view: NodeView) -> ServerMetrics | None:
    export = ext.run_config.export
    if not export.server_metrics:
        return None
    url, interval = export.server_metrics, export.server_metrics_interval
    scraper = ServerMetrics(url, interval, directory=view.results_folder)
    scraper.start()
    ext.environment.events.quitting.add_listener(lambda **_: scraper.stop())
    log.info("llm-locust: scraping server metrics from %s every %gs", url, interval)
    return scraper
