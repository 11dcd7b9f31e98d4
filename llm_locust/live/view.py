"""What the live outputs read of a run: small typed views, not the run object.

The Prometheus exporter, the web UI page and the server-metrics scraper depend on these
Protocols; the runtime implements them (:mod:`llm_locust.runtime.outputs`). So a live
output can be built and tested on its own (a plain object with these methods), and the
runtime can change its state without breaking them.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from llm_locust.config.jsontypes import JsonObject
from llm_locust.config.role import Role

if TYPE_CHECKING:
    from llm_locust.live.result_view import ChartMarks

__all__ = ["Gauges", "ResultsFolder", "RunInfo", "RunView"]


@dataclass(frozen=True)
class Gauges:
    """The run's gauges, read now."""

    users: int = 0
    in_flight: int = 0
    workers: int = 1
    stage: int = -1  # the index of the stage running, -1 without one
    stage_label: str = ""
    target_rate: float = 0.0  # req/s the current stage aims for (0 in closed loop)
    client_saturated: bool = False  # a load process saturated over the last seconds (results.saturation)
    master_backlog_rows: float = 0.0  # rows sent by the workers, not yet applied (runtime.ingest)
    master_ingest_lag_s: float = 0.0


@dataclass(frozen=True)
class RunInfo:
    """What identifies the run (``llm_locust_run_info``'s labels)."""

    run_id: str = ""
    model: str = ""
    target: str = ""


class RunView(Protocol):
    """The run, as the exporter and the web UI see it."""

    role: Role

    def gauges(self) -> Gauges: ...

    def info(self) -> RunInfo: ...

    def state(self) -> str:
        """The runner's state (``running``, ``stopped``, ...)."""
        ...

    def marks(self) -> ChartMarks:
        """What the charts mark (:func:`llm_locust.live.result_view.chart_marks`)."""
        ...

    def search(self) -> JsonObject | None:
        """The capacity search as it goes (``None``: no search): its judged steps as table rows
        (:func:`llm_locust.results.search_result.probe_row`), the step running, and its answer as it
        forms (final once it stopped)."""
        ...


class ResultsFolder(Protocol):
    """Where the running test writes its results (``None``: no folder, or no test running)."""

    def __call__(self) -> Path | None: ...
