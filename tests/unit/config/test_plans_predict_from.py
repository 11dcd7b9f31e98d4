"""Plan files with ``predict_from:`` plans: what they may say, and the one line when they may not."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_locust.config.plans import PlanFileError, load_plan_file

HEAD = """
demand: {concurrency: 6}
slo: "tpot_p90<=0.1s"
workload: {input_tokens: 100, output_tokens: 50}
plans:
  - {name: A, endpoints: [http://127.0.0.1:8000, http://127.0.0.1:8001], gpus: 2, gpu_hour_cost: 2}
"""


def _load(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "plans.yaml"
    path.write_text(text)
    return load_plan_file(path)


def test_a_predicted_plan_takes_its_measured_plans_replicas_unless_it_says(tmp_path: Path) -> None:
    file = _load(
        tmp_path,
        HEAD
        + "  - {name: B, predict_from: A, gpus: 2, gpu_hour_cost: 2}\n"
        + "  - {name: C, predict_from: A, replicas: 4, gpus: 4, gpu_hour_cost: 2,"
        + " workload: {input_tokens: 200}}\n",
    )
    a, b, c = file.plans
    assert (a.predicted, a.replicas, a.gpus_per_replica) == (False, 2, 1)
    assert (b.predicted, b.predict_from, b.replicas, b.endpoints) == (True, "A", 2, ())
    assert (c.replicas, c.gpus_per_replica) == (4, 1)
    assert c.workload is not None and c.workload.input_tokens == "200"


@pytest.mark.parametrize(
    ("plan", "words"),
    [
        ("{name: B, predict_from: Z, gpus: 2, gpu_hour_cost: 2}", "'Z' is not a measured plan"),
        ("{name: B, predict_from: A, endpoints: [http://127.0.0.1:9000], gpus: 1, gpu_hour_cost: 2}",
         "predicted, not measured: no endpoints"),
        ("{name: B, gpus: 2, gpu_hour_cost: 2}", "endpoints: missing"),
        ("{name: B, endpoints: [http://127.0.0.1:9000], gpus: 1, gpu_hour_cost: 2, workload: {seed: 1}}",
         "only a plan with predict_from has a workload"),
        ("{name: B, predict_from: A, replicas: 3, gpus: 4, gpu_hour_cost: 2}", "do not split evenly over 3"),
        ("{name: B, predict_from: A, gpus: 2, gpu_hour_cost: 2, workload: {tokens: 3}}", "unknown key"),
    ],
)  # fmt: skip
def test_a_wrong_predicted_plan_is_one_line_naming_it(tmp_path: Path, plan: str, words: str) -> None:
    with pytest.raises(PlanFileError) as exc:
        _load(tmp_path, HEAD + f"  - {plan}\n")
    message = str(exc.value)
    assert words in message and "\n" not in message, message


def test_a_predicted_plan_of_a_predicted_plan_or_a_rate_search_is_refused(tmp_path: Path) -> None:
    chain = HEAD + "  - {name: B, predict_from: A, gpus: 2, gpu_hour_cost: 2}\n"
    with pytest.raises(PlanFileError, match="'B' is not a measured plan"):
        _load(tmp_path, chain + "  - {name: C, predict_from: B, gpus: 2, gpu_hour_cost: 2}\n")
    rate = chain.replace("plans:", "search: {kind: rate}\nplans:").replace("concurrency: 6", "rate: 5")
    with pytest.raises(PlanFileError, match=r"predict_from needs search\.kind users"):
        _load(tmp_path, rate)
