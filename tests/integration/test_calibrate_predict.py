"""Measure, calibrate, predict, check: a ramp against the engine simulator, ``llm-locust calibrate``
(with and without a held-out level), and ``llm-locust predict`` checked against what the ramp measured.

The simulator's parameters are not given to the calibrator. Fitted without the 8-user level, the
model predicts its E2E P50 within 25 %. The SLO is set between the E2E P95
the ramp measured at 8 and at 16 users (computed here from the records), so the measured capacity
lies in [8, 16); the prediction must land there too.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.locustproc import llm_locust_cli
from tests.simproc import running_sim

pytestmark = [pytest.mark.slow, pytest.mark.host_timing]  # the measured ramp's latencies

SIM = (
    "--max-num-seqs",
    "64",
    "--decode-base-ms",
    "20",
    "--decode-ms-per-seq",
    "1.5",
    "--prefill-ms-per-token",
    "0.1",
)


def _e2e_p95(run: Path, stage: int) -> float:
    rows = [json.loads(line) for line in (run / "requests.jsonl").read_text().splitlines()]
    e2e = [r["e2e"] for r in rows if r["stage"] == stage and r["outcome"] == "ok" and not r["warmup"]]
    return float(np.percentile(e2e, 95))


def test_calibrate_then_predict_agrees_with_the_measured_ramp(tmp_path: Path) -> None:
    run = tmp_path / "ramp"
    with running_sim(*SIM) as url:
        res = llm_locust_cli(
            "run", "--host", url, "--headless", "--ramp", "2,4,8,16", "--step-time", "10s", "--warmup", "2s",
            "--input-tokens", "uniform:100,2000", "--output-tokens", "uniform:20,60", "--seed", "3",
            "--results-dir", str(run), "--only-summary", timeout=180,
        )  # fmt: skip
    assert res.returncode in (0, 3), res.stderr[-2000:]
    held = llm_locust_cli(
        "calibrate", str(run), "-o", str(tmp_path / "h.yaml"), "--holdout", "8", timeout=180
    )
    assert held.returncode == 0, held.stderr
    errors = yaml.safe_load((tmp_path / "h.yaml").read_text())["holdout_error"][0]
    assert errors["level"] == 8
    assert abs(errors["e2e_p50"]["error_pct"]) <= 25, errors
    cal = llm_locust_cli("calibrate", str(run), "-o", str(tmp_path / "m.yaml"), timeout=180)
    assert cal.returncode == 0 and "residuals per level" in cal.stdout, cal.stderr
    at8, at16 = _e2e_p95(run, 2), _e2e_p95(run, 3)
    assert at8 < at16
    slo = f"e2e_p95<={(at8 + at16) / 2:.3f}s"
    pred = llm_locust_cli(
        "predict", str(tmp_path / "m.yaml"), "--slo", slo, "--demand", "8",
        "--input-tokens", "uniform:100,2000", "--output-tokens", "uniform:20,60", "--draws", "3",
        "-o", str(tmp_path / "p.json"), timeout=180,
    )  # fmt: skip
    assert pred.returncode in (0, 3), pred.stderr
    assert pred.stdout.startswith("PREDICTION (not a measurement)") and str(run) in pred.stdout
    result = json.loads((tmp_path / "p.json").read_text())
    assert 8 <= result["capacity"] < 16, (slo, result)
