"""The live side of the client's health: the exporter's gauge and the web UI's "Client" row
(issue 15 §2), from the run's view and from the summary of a finished test."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llm_locust.live.aggregate import LiveAggregate
from llm_locust.live.exporter import run_gauges
from llm_locust.live.tab import SATURATED_NOW
from llm_locust.live.view import Gauges, RunInfo
from llm_locust.live.webui import LiveWebUI
from llm_locust.results.summary_model import RunSummary

MESSAGE = "client saturated from users=48: this process used a whole core (up to 97 %): add workers"


@dataclass
class View:
    """A run view (:class:`~llm_locust.live.view.RunView`) with the gauges it is given."""

    now: Gauges = field(default_factory=Gauges)
    role: str = "local"

    def gauges(self) -> Gauges:
        return self.now

    def info(self) -> RunInfo:
        return RunInfo(run_id="r1")

    def state(self) -> str:
        return "running"

    def marks(self) -> dict[str, Any]:
        return {}

    def search(self) -> dict[str, Any] | None:
        return None


def client_rows(ui: LiveWebUI) -> list[Any]:
    return [row["count"] for row in ui.table_rows() if row["metric"] == "Client"]


def test_the_gauge_and_the_row_follow_the_client_now() -> None:
    view = View()
    ui = LiveWebUI(view, LiveAggregate())  # type: ignore[arg-type]
    assert run_gauges(view)["llm_locust_client_saturated"] == 0.0  # type: ignore[arg-type]
    assert client_rows(ui) == [] and ui.stats()["run"]["client_saturated"] is False
    view.now = Gauges(client_saturated=True)
    assert run_gauges(view)["llm_locust_client_saturated"] == 1.0  # type: ignore[arg-type]
    assert client_rows(ui) == [SATURATED_NOW] and ui.stats()["run"]["client_saturated"] is True


def test_a_finished_test_shows_its_own_sentence() -> None:
    ui = LiveWebUI(View(Gauges(client_saturated=True)), LiveAggregate())  # type: ignore[arg-type]
    stage = {"label": "users=48", "verdict": "invalid", "invalid_reason": f"client saturated (w1): {MESSAGE}"}
    summary = {"client_saturated": MESSAGE, "capacity": "no stage met the SLO", "stages": [stage]}
    ui.on_finalized(RunSummary.of({**summary, "output_throughput": 0.0, "request_throughput": 0.0}), None)
    assert client_rows(ui) == [MESSAGE]  # the result's, not the live gauge's
    (shown,) = ui.stats()["result"]["stages"]
    assert shown["verdict"] == "invalid" and shown["invalid_reason"].startswith("client saturated")
