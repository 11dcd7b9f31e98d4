"""A prediction, typed: what ``llm-locust predict`` prints and writes (``-o``), and what a
``predict_from:`` plan's row of ``capacity.json`` is built from
(:func:`llm_locust.results.predicted_plans.predicted_result`).

Built once by :func:`llm_locust.commands.predict.predict` and read as a model from there on: the
capacity in the demand's unit, its interval over the model's parameter draws and where that
came from, the demand's verdict, the replicas and the balancer they stood behind, the workload,
the model file and the runs it was calibrated on, and each step of the search in virtual time.
Written with the keys ``predict -o`` has always written, plus ``not_identified`` (the model's
parameters the calibration could not pin down).

Pure module: no Locust, no network.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, JsonValue

from llm_locust.config.balance import BalancePolicy, BalanceScope
from llm_locust.results.capacity_model import DemandUnit, PredictedStep, PredictedVerdict
from llm_locust.results.search_model import Model

__all__ = ["Prediction"]


class Prediction(Model):
    """One prediction (see the module docstring); every time in deployment seconds."""

    kind: Literal["prediction"] = "prediction"
    capacity: float
    unit: DemandUnit  # users (thinking users), else concurrency
    interval: list[float]
    interval_source: str
    demand: dict[str, JsonValue]
    verdict: PredictedVerdict
    slo: list[str]
    replicas: int
    balance: BalancePolicy
    balance_scope: BalanceScope
    workload: dict[str, JsonValue] = Field(default_factory=dict)
    think_time: str | None = None
    model_file: str | None = None
    runs: list[str] = Field(default_factory=list)
    not_identified: list[str] = Field(default_factory=list)
    steps: list[PredictedStep] = Field(default_factory=list)
    virtual_seconds_per_step: float
    requests_per_precise_step: int | None = None

    def json_text(self) -> str:
        """The ``-o`` file's text: every key, in this order."""
        return self.model_dump_json(indent=1) + "\n"
