"""A predicted plan's row and table lines: marked predicted, with its interval, never measured numbers."""

from __future__ import annotations

from llm_locust.config.balance import BalancePolicy, BalanceScope
from llm_locust.config.demand import parse_demand
from llm_locust.config.plans import PlanFile
from llm_locust.load.search import Verdict
from llm_locust.results.capacity_model import DemandUnit, PredictedStep, PredictedVerdict
from llm_locust.results.predicted_plans import predicted_lines, predicted_result
from llm_locust.results.prediction_model import Prediction

FILE = PlanFile.model_validate(
    {
        "demand": {"concurrency": 6},
        "slo": "tpot_p90<=0.1s",
        "plans": [
            {"name": "A", "endpoints": ["http://127.0.0.1:8000"], "gpus": 1, "gpu_hour_cost": 2},
            {"name": "A2", "predict_from": "A", "replicas": 2, "gpus": 2, "gpu_hour_cost": 3},
        ],
    }
)
PREDICTION = Prediction(
    capacity=8.0,
    unit=DemandUnit.CONCURRENCY,
    interval=[7.0, 9.0],
    interval_source="the same search with 10 bootstrap parameter draws of the model",
    demand={"concurrency": 6},
    verdict=PredictedVerdict.MEETS,
    slo=["tpot_p90<=0.1s"],
    replicas=2,
    balance=BalancePolicy.LEAST_IN_FLIGHT,
    balance_scope=BalanceScope.USER,
    workload={"input_tokens": "fixed:16"},
    model_file="cap/A2/model.yaml",
    runs=["cap/A"],
    steps=[PredictedStep(level=4, verdict=Verdict.PASS), PredictedStep(level=8, verdict=Verdict.PASS)],
    virtual_seconds_per_step=900.0,
)


def test_the_row_is_marked_predicted_with_its_interval_and_no_measured_numbers() -> None:
    demand = parse_demand({"concurrency": 6})
    row = predicted_result(FILE.plans[1], demand, PREDICTION)
    assert row.capacity == 8.0 and row.headroom == 8.0 / 6.0 - 1.0
    assert row.dollars_per_hour == 2 * 3 and row.replicas == 2 and row.endpoints == []
    assert row.predicted is not None and row.predicted.from_ == "A" and row.predicted.interval == [7.0, 9.0]
    assert row.output_throughput is None and row.cost_per_million_at_demand is None
    # the balancer the replicas were predicted behind, in the row (capacity.json) as in predict's file
    assert (row.predicted.balance, row.predicted.balance_scope) == ("least-in-flight", "user")
    assert row.to_json()["predicted"]["balance_scope"] == "user"  # type: ignore[index,call-overload]
    assert row.verdict.startswith("PREDICTED from A (not measured): would meet 6 concurrent")
    assert "range 7 concurrent..9 concurrent" in row.verdict
    lines = predicted_lines([row])
    assert lines[0].startswith("predicted, not measured (~)")
    assert lines[2].split() == ["~A2", "A", "2", "2", "8", "7..9", "6.00"]
    assert lines[3] == "~A2: " + row.verdict
    assert predicted_lines([]) == []


def test_an_interval_that_straddles_the_demand_is_uncertain() -> None:
    demand = parse_demand({"concurrency": 6})
    row = predicted_result(
        FILE.plans[1],
        demand,
        PREDICTION.model_copy(update={"interval": [5.0, 9.0], "verdict": PredictedVerdict.UNCERTAIN}),
    )
    assert not row.meets and "may or may not meet 6 concurrent" in row.verdict


def test_the_decision_page_shows_a_predicted_plan_marked_with_its_range(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from llm_locust.report.decision import decision_from
    from llm_locust.report.decision_page import build_decision_page
    from llm_locust.results.capacity_model import CapacityReport

    row = predicted_result(FILE.plans[1], parse_demand({"concurrency": 6}), PREDICTION)
    report = {"demand": {"concurrency": 6}, "demand_text": "6 concurrent", "slo": ["tpot_p90<=0.1s"],
              "answer": "no plan meets 6 concurrent", "plans": [],
              "predicted_plans": [row.to_json()]}  # fmt: skip
    page = build_decision_page(decision_from(CapacityReport.model_validate(report), tmp_path))
    assert "Predicted plans (not measured)" in page and "A2 <b>(predicted)</b>" in page
    assert "(7 to 9)" in page and "cap/A2/model.yaml" in page
    bare = CapacityReport.model_validate({**report, "predicted_plans": []})
    assert "Predicted plans" not in build_decision_page(decision_from(bare, tmp_path))
