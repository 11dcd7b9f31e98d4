"""Calibration holds on a real engine: llama.cpp's server with Gemma 3 270M on CPU (``make test-engine``).

Issue 25's check: calibrated from runs at 1 and 2 concurrent users, the model predicts the TTFT
and E2E P50 measured at 3 and 4 concurrent within 20 %. This server (``--interrupt_requests
False``) serves one request at a time and queues the rest, so the calibrator must find a batch
limit of 1 from the 2-user level; the queue then makes TTFT at 3 and 4 users two and three
service times long, which a model without the limit would miss by far.

The measured P50s are computed here from ``requests.jsonl``; the prediction is what
``llm-locust calibrate --check`` reports for the run it did not fit. Every number is printed,
for benchmarks/README.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.engineproc import running_llama
from tests.locustproc import llm_locust_cli
from tests.records import linear_percentile

pytestmark = [pytest.mark.engine]

#: Short fixed lengths; the completions endpoint (this GGUF answers the chat template with an empty
#: reply, EOS first). The stream has no usage: output in content chunks, prompt at its target.
WORKLOAD = ("--input-tokens", "120", "--output-tokens", "32", "--endpoint", "completions")
STEP = ("--step-time", "50s", "--warmup", "6s")
BOUND = 0.20


def _ramp(url: str, levels: str, folder: Path, seed: int) -> None:
    res = llm_locust_cli(
        "run", "--host", url, "--headless", "--ramp", levels, *STEP, *WORKLOAD, "--seed", str(seed),
        "--results-dir", str(folder), "--only-summary", timeout=600,
    )  # fmt: skip
    assert res.returncode in (0, 3), res.stderr[-3000:]


def _measured(folder: Path) -> dict[int, dict[str, float]]:
    """Per level: the P50 of TTFT and E2E over the successful measured requests (seconds)."""
    run = json.loads((folder / "run.json").read_text())
    level_of = {int(s["index"]): int(s["target"]) for s in run["stages"]}
    rows = [json.loads(line) for line in (folder / "requests.jsonl").read_text().splitlines() if line]
    out: dict[int, dict[str, float]] = {}
    for level in sorted(set(level_of.values())):
        ok = [
            r for r in rows
            if level_of.get(r.get("stage", -1)) == level and r["outcome"] == "ok"
            and not (r.get("warmup") or r.get("rampup") or r.get("outside"))
        ]  # fmt: skip
        assert len(ok) >= 10, (level, len(ok))
        out[level] = {
            "n": len(ok),
            "ttft_p50": linear_percentile([r["ttft"] for r in ok], 50),
            "e2e_p50": linear_percentile([r["e2e"] for r in ok], 50),
        }
    return out


def test_calibrated_at_1_and_2_users_predicts_3_and_4_within_20_percent(tmp_path: Path) -> None:
    low, high = tmp_path / "low", tmp_path / "high"
    with running_llama(log=tmp_path / "server.log") as url:
        _ramp(url, "1,2", low, seed=1)
        _ramp(url, "3,4", high, seed=2)
    model_file = tmp_path / "model.yaml"
    cal = llm_locust_cli("calibrate", str(low), "-o", str(model_file), "--check", str(high), timeout=300)
    assert cal.returncode == 0, cal.stderr
    print(cal.stdout)
    model = yaml.safe_load(model_file.read_text())
    seqs = model["parameters"]["max_num_seqs"]
    assert seqs["identified"] and seqs["value"] == 1, (seqs, model["not_identified"])
    measured = _measured(high)
    predicted = {int(row["level"]): row for row in model["check_error"]}
    assert sorted(predicted) == [3, 4]
    failures = []
    for level in (3, 4):
        for metric in ("ttft_p50", "e2e_p50"):
            want, got = measured[level][metric], predicted[level][metric]["model"]
            err = (got - want) / want
            print(f"users={level} {metric}: measured {want:.3f} s, predicted {got:.3f} s ({err:+.1%})")
            if abs(err) > BOUND:
                failures.append((level, metric, want, got))
    assert not failures, failures
    # the held-out error of the 2-user level (fitted on 1 user alone: no queue seen) and, over
    # both runs, of the 4-user level, reported
    for runs, level in (([low], "2"), ([low, high], "4")):
        held = llm_locust_cli(
            "calibrate", *map(str, runs), "-o", str(tmp_path / f"h{level}.yaml"), "--holdout", level,
            timeout=300,
        )  # fmt: skip
        assert held.returncode == 0, held.stderr
        print(held.stdout.split("held-out level", 1)[-1])
