"""A ``predict_from`` plan predicted from a measured plan's folder (records of the engine on a virtual
clock, so the test does not depend on the host's timing).

The engine's decode step is ``10 + 20 x running`` ms (prefill 0.01 ms per token): TPOT at n
sequences is about 10 + 20 n ms, so ``tpot_p90<=0.095s`` holds up to 4 sequences per replica,
and two replicas with each user kept on one (``balance_scope: user``) hold 8 users (9 puts 5 on
one replica: most of its requests, over 10 % of all, at 110 ms). The prediction of the
two-replica plan, calibrated on one replica's levels, must say 8 (within one user) and mark
itself predicted. Picked in turn for every request (round robin per request, a run's default),
a user's requests move between the replicas and one of them often holds 5 or more while the
other holds 3: the prediction must then be what the true engine shows on one virtual clock
(:func:`~llm_locust.sim.virtual.fleet_loop`), below 8.

Each prediction is a search in virtual time per bootstrap draw of the model (``DRAWS``, 10, plus
the point): 22 searches, 22 s of CPU, and 161 s in a ``make test`` at load 9 beside three other
workers (the parallel part's second-longest test). Two draws still give an interval that the
point must lie in, and the one-replica check asks for the point only: 4 searches.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from llm_locust.commands.capacity import predicted
from llm_locust.commands.capacity.predicted import predict_plan
from llm_locust.config.plans import PlanFile
from llm_locust.results.predicted_plans import predicted_result
from llm_locust.sim.engine import EngineConfig
from llm_locust.sim.virtual import closed_loop, fleet_loop

TRUE = EngineConfig(max_num_seqs=64, kv_cache_tokens=10**7, decode_base=0.010, decode_per_seq=0.020,
                    decode_per_ctx_token=0.0, prefill_per_token=1e-5)  # fmt: skip


def _measured_folder(folder: Path, levels: list[int]) -> None:
    folder.mkdir(parents=True)
    stages, rows, t0 = [], [], 0.0
    for index, users in enumerate(levels):
        stages.append({"index": index, "kind": "users", "target": users})
        rng = np.random.default_rng(index)  # lengths that vary, as a workload's do: users not in lockstep
        for o in closed_loop(
            TRUE, users, lambda rng=rng: (16, int(rng.integers(10, 31))), 200.0, warmup=20.0
        ):
            rows.append(
                {"start_time": t0 + o.sent, "ttft": o.ttft, "e2e": o.e2e, "prompt_tokens": o.prompt_tokens,
                 "completion_tokens": o.output_tokens, "outcome": "ok", "stage": index, "warmup": False}
            )  # fmt: skip
        t0 += 300.0
    (folder / "run.json").write_text(json.dumps({"stages": stages}))
    (folder / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _plan_file(search: dict[str, str]) -> PlanFile:
    """A measured at one replica, A2 predicted from it on two, with ``search`` settings."""
    return PlanFile.model_validate(
        {
            "demand": {"concurrency": 6},
            "slo": "tpot_p90<=0.095s",
            "workload": {"input_tokens": 16, "output_tokens": "uniform:10,30"},
            "search": search,
            "plans": [
                {"name": "A", "endpoints": ["http://127.0.0.1:8000"], "gpus": 1, "gpu_hour_cost": 2},
                {"name": "A2", "predict_from": "A", "replicas": 2, "gpus": 2, "gpu_hour_cost": 2},
            ],
        }
    )


def test_a_two_replica_plan_is_predicted_from_the_one_replica_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _measured_folder(tmp_path / "A", [2, 4, 5, 8])
    monkeypatch.setattr(predicted, "DRAWS", 2)
    file = _plan_file({"balance_scope": "user"})
    prediction = predict_plan(file, file.plans[1], tmp_path)
    assert prediction.kind == "prediction" and prediction.replicas == 2
    assert (prediction.balance, prediction.balance_scope) == ("round-robin", "user")  # the file's search
    assert prediction.runs == [str(tmp_path / "A")]
    assert abs(prediction.capacity - 8) <= 1, prediction
    low, high = prediction.interval
    assert low <= prediction.capacity <= high
    assert (tmp_path / "A2" / "model.yaml").is_file()
    row = predicted_result(file.plans[1], file.demand, prediction)
    assert row.predicted is not None and row.predicted.from_ == "A" and row.meets == (low >= 6)
    # one replica, from the same model: 4 (the search's levels are whole users); its point only
    monkeypatch.setattr(predicted, "DRAWS", 0)
    one = PlanFile.model_validate(
        {**file.model_dump(mode="json"), "slo": "tpot_p90<=0.095s", "demand": {"concurrency": 6},
         "plans": [file.plans[0].model_dump(), {**file.plans[1].model_dump(), "replicas": 1, "gpus": 1}]}
    )  # fmt: skip
    assert abs(predict_plan(one, one.plans[1], tmp_path).capacity - 4) <= 1


def _true_capacity_round_robin(top: int = 10) -> int:
    """The highest users (from 2) at which TRUE behind round robin per request keeps TPOT P90
    under 95 ms: a long run of the true engine on one virtual clock, computed here."""
    best = 0
    for users in range(2, top + 1):
        outs = fleet_loop(
            TRUE, users,
            lambda r: (lambda g: lambda: (16, int(g.integers(10, 31))))(np.random.default_rng(100 + r)),
            2, 3000.0, 100.0, follow=True,
        )  # fmt: skip
        tpot = [(o.e2e - o.ttft) / (o.output_tokens - 1) for o in outs]
        if np.percentile(tpot, 90) > 0.095:
            break
        best = users
    return best


def test_round_robin_per_request_is_predicted_as_it_spreads_the_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _measured_folder(tmp_path / "A", [2, 4, 5, 8])
    monkeypatch.setattr(predicted, "DRAWS", 0)
    file = _plan_file({})
    prediction = predict_plan(file, file.plans[1], tmp_path)
    assert (prediction.balance, prediction.balance_scope) == ("round-robin", "request")
    truth = _true_capacity_round_robin()
    assert truth < 8 and abs(prediction.capacity - truth) <= 1, (prediction.capacity, truth)
