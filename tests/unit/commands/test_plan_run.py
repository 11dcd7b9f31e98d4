"""The per-plan ``done:`` progress line says the capacity as the table and the verdict do."""

from __future__ import annotations

from pathlib import Path

from llm_locust.commands.capacity.plan_run import _capacity_text
from llm_locust.config.plans import PlanFile, load_plan_file
from llm_locust.results.capacity_model import PlanResult

PLANS = """
demand: {concurrency: 50}
slo: "e2e_p95<=30s"
plans:
  - {name: A, endpoints: ["http://127.0.0.1:9"], gpus: 4, gpu_hour_cost: 2.5}
"""


def _file(tmp_path: Path) -> PlanFile:
    path = tmp_path / "plans.yaml"
    path.write_text(PLANS)
    return load_plan_file(path)


def test_a_settled_capacity_is_said_as_its_bracket(tmp_path: Path) -> None:
    # a search stopped at the settled precision: 24 passed, 28 was not shown to pass
    result = PlanResult.model_construct(capacity=24.0, capacity_below=28.0)
    text = _capacity_text(_file(tmp_path), {}, result)
    assert text == "capacity 24 to under 28 concurrent"


def test_a_capacity_to_the_precision_is_one_number(tmp_path: Path) -> None:
    result = PlanResult.model_construct(capacity=53.0, capacity_below=None)
    assert _capacity_text(_file(tmp_path), {}, result) == "capacity 53 concurrent"
