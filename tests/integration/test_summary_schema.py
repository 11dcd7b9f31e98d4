"""Real runs' ``summary.json`` against the checked-in JSON Schema (``docs/schemas/summary.v1.json``).

Real headless runs against the bundled simulator, a few seconds each: a ramp with a warm-up, an
SLO and ``--percentiles``; an open-loop run with tools and a shared prefix (the traffic blocks,
the open-loop keys); a short capacity search (the stage rows as steps, the ``search`` and
``demand`` blocks). Each file validates with the ``jsonschema`` library against the checked-in
schema (not the one generated now: what users download), carries ``schema_version`` 1, was
written through its model (no "does not match its schema" warning), and reads back through the
model with the same numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from llm_locust.results.summary_model import RunSummary
from tests.locustproc import LocustResult, expect_exit, run_locust
from tests.simproc import running_sim

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "schemas" / "summary.v1.json"
SCHEMA = json.loads(SCHEMA_FILE.read_text())
SIM = ("--ttft-ms", "30", "--tpot-ms", "10", "--output-tokens", "8")
LIGHT = ("--prompt-tokens", "16", "--max-tokens", "8")


def _checked(res: LocustResult) -> dict:
    expect_exit(res, res.returncode)
    assert "does not match its schema" not in res.stdout + res.stderr
    summary = res.summary
    jsonschema.validate(summary, SCHEMA)
    assert summary["schema_version"] == 1
    model = RunSummary.model_validate(summary)
    assert model.to_json() == summary  # read back: the same keys, the same numbers
    assert model.ms("p95", "ttft") == summary["p95_ttft_ms"]
    for stage, row in zip(model.stages or [], summary.get("stages") or [], strict=True):
        assert stage.ms("p95", "e2el") == row["p95_e2el_ms"] and stage.completed == row["completed"]
    return summary


@pytest.mark.slow
def test_a_ramp_with_an_slo_and_extra_percentiles_validates(tmp_path: Path) -> None:
    with running_sim(*SIM) as url:
        res = run_locust(url, *LIGHT, "--ramp", "2,3", "--step-time", "3s", "--warmup", "1s",
                         "--slo", "ttft_p95<2s", "--percentiles", "50,99.9",
                         results_dir=tmp_path / "r", users=None, run_time=None)  # fmt: skip
    expect_exit(res, 0)
    summary = _checked(res)
    assert "p99.9_ttft_ms" in summary and len(summary["stages"]) == 2
    bad = {**summary, "stages": [{**summary["stages"][0], "p95_ttft_ms": "fast"}]}
    with pytest.raises(jsonschema.ValidationError):  # the stage rows' latency keys are checked too
        jsonschema.validate(bad, SCHEMA)


@pytest.mark.slow
def test_an_open_loop_run_with_tools_and_a_shared_prefix_validates(tmp_path: Path) -> None:
    with running_sim(*SIM) as url:
        res = run_locust(url, *LIGHT, "--request-rate", "6", "--tools", "builtin", "--shared-prefix-fraction",
                         "0.5", "--endpoint", "chat", results_dir=tmp_path / "r", users=None,
                         run_time="4s")  # fmt: skip
    expect_exit(res, 0)
    summary = _checked(res)
    assert summary["p99_send_lag_ms"] is not None and "p99_ttft_intended_ms" in summary


@pytest.mark.slow
def test_a_short_capacity_search_validates(tmp_path: Path) -> None:
    with running_sim(*SIM) as url:
        res = run_locust(url, *LIGHT, "--search", "users", "--search-min", "1", "--search-max", "2",
                         "--search-max-steps", "2", "--slo", "ttft_p95<2s", "--step-time", "3s",
                         "--demand", "users=2", results_dir=tmp_path / "r", users=None, run_time=None,
                         timeout=180)  # fmt: skip
    summary = _checked(res)
    assert summary["search"] and summary["stages"]
