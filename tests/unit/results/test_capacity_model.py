"""``capacity.json`` and ``search.json`` read through their models: older files load with defaults,
a file that is not one is one line (``rejudge``, ``report``: exit 2, no traceback)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llm_locust.commands.rejudge import main as rejudge_main
from llm_locust.results.capacity_model import CapacityFileError, DemandUnit, load_capacity
from llm_locust.results.search_model import SearchLog

STEP = {"index": 0, "label": "users=4", "level": 4.0, "verdict": "pass", "reason": "", "requests": 72,
        "request_throughput": 8.8, "output_throughput": 44.0, "goodput_rps": 8.8,
        "goodput_output_tokens_per_s": 44.0, "mean_in_flight": 3.98, "terms": []}  # fmt: skip
#: A plan of capacity.json as written before decided_by, time_scale, schema_version existed.
OLD_PLAN = {"name": "A", "endpoints": ["http://127.0.0.1:1"], "gpus": 1, "gpu_hour_cost": 2.0,
            "dollars_per_hour": 2.0, "steps": [STEP], "capacity_step": STEP, "upper_step": None,
            "capacity": 4.0, "capacity_unit": "concurrency", "demand": 6.0, "meets": False,
            "verdict": "fails 6 concurrent"}  # fmt: skip
OLD = {"demand": {"concurrency": 6}, "demand_text": "6 concurrent", "slo": ["tpot_p90<=0.095s"],
       "plans": [OLD_PLAN], "cheapest": None, "answer": "no plan meets 6 concurrent"}  # fmt: skip


def _write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "capacity.json"
    path.write_text(json.dumps(data))
    return path


def test_an_older_capacity_json_loads_with_defaults(tmp_path: Path) -> None:
    report = load_capacity(_write(tmp_path, OLD))
    plan = report.plan("A")
    assert report.schema_version == 1 and report.time_scale.speedups == {} and not report.withheld
    assert plan.decided_by == [] and not plan.decided_by_valid_steps and plan.time_scale == 1.0
    assert plan.capacity_unit is DemandUnit.CONCURRENCY and plan.capacity_step is not None
    assert plan.capacity_step.mean_in_flight == 3.98 and plan.predicted is None
    written = report.to_json()  # what was read is written back, plus the version
    assert written.pop("schema_version") == 1 and written == OLD


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"plans": [{**OLD_PLAN, "capacity_unit": "tokens"}]}, "plans.0.capacity_unit"),
        ({"plans": [{**OLD_PLAN, "steps": [{**STEP, "verdict": "maybe"}]}]}, "plans.0.steps.0.verdict"),
        ({"schema_version": 2}, "schema_version 2: this llm-locust reads 1"),
        ({"answer": None}, "answer"),
    ],
)
def test_a_file_that_is_not_a_comparison_is_one_line(
    tmp_path: Path, change: dict[str, Any], said: str
) -> None:
    path = _write(tmp_path, {**OLD, **change})
    with pytest.raises(CapacityFileError) as exc:
        load_capacity(path)
    message = str(exc.value)
    assert message.startswith(f"{path}: not a capacity comparison") and said in message
    assert "\n" not in message


def test_rejudge_of_a_bad_capacity_json_exits_2_in_one_line(tmp_path: Path, capsys: Any) -> None:
    folder = tmp_path / "cap"
    folder.mkdir()
    _write(folder, {**OLD, "plans": [{**OLD_PLAN, "gpus": "four"}]})
    with pytest.raises(SystemExit) as exc:
        rejudge_main([str(folder), "--slo", "e2e_p95<=2s", "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "capacity.json: not a capacity comparison" in err and "plans.0.gpus" in err


def test_an_older_search_json_loads_and_a_newer_one_is_refused() -> None:
    stage = {"index": 0, "kind": "users", "target": 4.0, "duration_s": 8.0, "label": "users=4"}
    step = {"index": 0, "level": 4.0, "stage": stage, "begin": 1.0, "applied": 1.0}
    old = {"format": 1, "spec": {"kind": "users", "minimum": 4.0, "precision": 0.1, "max_steps": 12,
           "max_extensions": 2}, "step_time_s": 3.0, "t0": 1.0, "steps": [step]}  # fmt: skip
    log = SearchLog.model_validate(old)
    assert log.spec.max_reruns == 1 and log.steps[0].verdict is None and log.stop_reason is None
    assert log.to_json() == {"schema_version": 1, **old}
    with pytest.raises(ValueError, match="schema_version"):
        SearchLog.model_validate({**old, "schema_version": 2})


def test_a_predicted_plan_has_its_block_and_stays_out_of_the_measured_plans(tmp_path: Path) -> None:
    predicted = {"from": "A", "interval": [7.0, 9.0], "interval_source": "10 bootstrap draws",
                 "verdict": "meets", "workload": {"prompt_tokens": 16}, "model_file": "A/model.yaml",
                 "runs": ["A"], "not_identified": [], "steps": [{"level": 8.0, "verdict": "pass"}],
                 "virtual_seconds_per_step": 60.0}  # fmt: skip
    row = {**OLD_PLAN, "name": "A2", "endpoints": [], "steps": [], "capacity_step": None, "capacity": 8.0,
           "predicted": predicted}  # fmt: skip
    report = load_capacity(_write(tmp_path, {**OLD, "predicted_plans": [row]}))
    assert [p.name for p in report.plans] == ["A"] and report.plans[0].predicted is None
    (a2,) = report.predicted_plans
    assert a2.predicted is not None and a2.predicted.from_ == "A" and a2.predicted.interval == [7.0, 9.0]
    assert report.to_json()["predicted_plans"] == [row]
    with pytest.raises(CapacityFileError, match=r"predicted_plans\.0\.predicted\.verdict"):
        load_capacity(_write(tmp_path, {**OLD, "predicted_plans": [{**row, "predicted": {**predicted,
                                                                    "verdict": "perhaps"}}]}))  # fmt: skip
