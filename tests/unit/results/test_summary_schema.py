"""The typed run summary and its published JSON Schema (issue 22 item 2, issue 23 item 2).

- the checked-in ``docs/schemas/<kind>.v<N>.json`` is what the models generate now (a model
  changed without regenerating the file, or without raising the version, fails here);
- a summary built by the run's own function goes through :class:`RunSummary` and comes back
  with exactly its keys (the vLLM ones, ``--percentiles`` ones included), plus ``schema_version``;
- an old ``summary.json`` (no ``schema_version``) still loads, its numbers read through the model;
- a file whose numbers are not numbers fails the schema and the model.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import ValidationError

from llm_locust.results.columns import Columns
from llm_locust.results.finalize import RunFacts, build_summary
from llm_locust.results.schemas import REGISTRY, FileKind, schema_of
from llm_locust.results.summary_model import RunSummary
from llm_locust.results.writer import write_summary
from tests.records import linear_percentile
from tests.unit.results.test_percentiles_option import _rows

REPO = Path(__file__).resolve().parents[3]
SCHEMAS = REPO / "docs" / "schemas"


def _summary(n: int = 400, qs: tuple[float, ...] = (50, 99.9)) -> dict[str, Any]:
    rows = _rows(n)
    facts = RunFacts(start_time=1000.0, stop_time=1000.0 + n * 0.01 + 1.0, percentiles=qs)
    return build_summary(Columns.from_rows(rows), facts)


def _plain(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` as it reads back from disk."""
    loaded: dict[str, Any] = json.loads(json.dumps(data, default=str))
    return loaded


@pytest.mark.parametrize("kind", list(REGISTRY))
def test_the_checked_in_schema_is_what_the_models_generate(kind: FileKind) -> None:
    entry = REGISTRY[kind]
    path = SCHEMAS / f"{kind.value}.v{entry.version}.json"
    assert path.is_file(), f"{path} missing: run `llm-locust schema --write`"
    assert json.loads(path.read_text()) == schema_of(kind), (
        f"{path.name} differs from the models: regenerate it (`llm-locust schema --write`), and raise "
        "the version if a key went away or changed type or meaning (docs/results.md)"
    )
    jsonschema.Draft202012Validator.check_schema(schema_of(kind))


def test_the_command_prints_the_checked_in_schema() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "llm_locust.results.schemas", "summary"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    ).stdout
    assert json.loads(out) == json.loads((SCHEMAS / "summary.v1.json").read_text())


def test_a_built_summary_keeps_its_keys_through_the_model(tmp_path: Path) -> None:
    built = _plain(_summary())
    model = RunSummary.of(built)
    assert model.to_json() == {"schema_version": 1, **built}
    # the latencies are read through the model: computed again here from the rows
    ttft = [r["ttft"] * 1000 for r in _rows(400)]
    assert model.ttft is not None and model.ttft.p(95) == pytest.approx(linear_percentile(ttft, 95))
    assert model.ms("p99.9", "ttft") == pytest.approx(linear_percentile(ttft, 99.9))
    assert model.ms("mean", "ttft") == pytest.approx(sum(ttft) / len(ttft))
    assert model.completed == 400
    # written through the model: the file has the version and validates against the schema
    assert write_summary(tmp_path / "summary.json", built) == model
    written = json.loads((tmp_path / "summary.json").read_text())
    assert written["schema_version"] == 1 and written["p99.9_ttft_ms"] == built["p99.9_ttft_ms"]
    jsonschema.validate(written, schema_of(FileKind.SUMMARY))


def test_an_old_summary_without_a_version_still_loads() -> None:
    """A summary.json written before the schema had a version: the keys it has, and no others."""
    old = {
        "completed": 3,
        "failed": 1,
        "duration": 2.0,
        "request_throughput": 1.5,
        "mean_ttft_ms": 12.5,
        "median_ttft_ms": 11.0,
        "p95_ttft_ms": 20.0,
        "p99_ttft_ms": 21.0,
        "p95_e2el_ms": 900.0,
        "errors": {"http_500": 1},
        "stages": [
            {
                "index": 0,
                "kind": "users",
                "target": 2,
                "label": "users=2",
                "completed": 3,
                "failed": 1,
                "request_throughput": 1.5,
                "output_throughput": 3.0,
                "p95_ttft_ms": 20.0,
                "verdict": "pass",
            }
        ],
        "something_new_then": {"kept": True},
    }
    model = RunSummary.model_validate(old)
    assert model.schema_version is None
    assert model.ttft is not None and model.ttft.p(95) == 20.0 and model.ttft.mean == 12.5
    assert model.e2el is not None and model.e2el.p(95) == 900.0 and model.e2el.mean is None
    assert model.tpot is None and model.latency("tpot").p(95) is None
    assert model.stages is not None and model.stages[0].ms("p95", "ttft") == 20.0
    assert model.stages[0].verdict == "pass"
    assert model.to_json() == old  # nothing lost, nothing added
    jsonschema.validate(old, schema_of(FileKind.SUMMARY))


@pytest.mark.parametrize(
    ("key", "value"),
    [("p95_ttft_ms", "fast"), ("p99.9_e2el_ms", [1]), ("completed", "many"), ("stages", {"a": 1})],
)
def test_a_summary_whose_numbers_are_not_numbers_fails(key: str, value: Any) -> None:
    bad = {**_plain(_summary()), key: value}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema_of(FileKind.SUMMARY))
    with pytest.raises(ValidationError):
        RunSummary.model_validate(bad)


def test_a_latency_with_no_data_keeps_its_null_keys() -> None:
    built = _plain(_summary())
    built.update({"mean_tpot_ms": None, "p99_tpot_ms": None})
    model = RunSummary.model_validate(built)
    assert model.tpot is not None and model.tpot.p(99) is None and model.tpot.mean is None
    out = model.to_json()
    assert "p99_tpot_ms" in out and out["p99_tpot_ms"] is None
    assert not any(isinstance(v, float) and math.isnan(v) for v in out.values())


def test_windows_drift_and_config_read_as_attributes_and_an_older_file_round_trips() -> None:
    """``windows``, ``drift`` and ``config`` are typed blocks (issue 22 item 2): a file as runs
    wrote them before (server gauges and unknown keys in a window, a per-stage drift, a config
    key the model does not name) loads, its values read as attributes, and writes back the same."""
    window = {
        "requests": {"ok": 3, "timeout": 1}, "completed": 3, "failed": 1, "error_rate": 0.25,
        "p50_ttft_ms": 10.0, "p95_ttft_ms": 20.0, "p99_ttft_ms": None, "index": 0, "start_s": 0.0,
        "end_s": 5.0, "output_tokens_per_s": 12.5, "in_flight": 1.5, "kv_cache_usage_mean": 0.4,
        "preemptions": 2.0, "from_a_newer_version": "kept",
    }  # fmt: skip
    stage_drift = {"verdict": "stable", "text": "stable: P95 TTFT +0.1 ms per 10 min", "window_s": 5.0,
                   "per_s": 600.0, "series": {"ttft_p95": {"verdict": "stable", "slope": 0.1, "unit": "ms",
                                                           "text": "P95 TTFT +0.1 ms"}}}  # fmt: skip
    data = {
        "completed": 3,
        "window_s": 5.0,
        "windows": [window],
        "drift": {"verdict": "stable", "text": "stable (per stage) users=1: ...", "stages": [stage_drift]},
        "config": {"start_time": 1000.0, "peak_users": 4, "options": {"prompt_salt": "abc"}, "gpus": 2,
                   "workers_missing": ["w2"], "an_old_key": {"x": 1}},
    }  # fmt: skip
    model = RunSummary.model_validate(data)
    assert model.windows is not None and model.drift is not None
    (row,) = model.windows
    assert row.requests == {"ok": 3, "timeout": 1} and row.p95_ttft_ms == 20.0 and row.mid_s == 2.5
    assert row.number("kv_cache_usage_mean") == 0.4 and row.number("preemptions") == 2.0
    assert row.number("p99_ttft_ms") is None and row.number("from_a_newer_version") is None
    assert model.drift.verdict.judged and model.drift.stages is not None
    assert model.drift.stages[0].series["ttft_p95"].slope == 0.1
    assert model.config.start_time == 1000.0 and model.config.peak_users == 4 and model.config.gpus == 2
    assert model.config.option("prompt_salt") == "abc" and model.config.workers_missing == ["w2"]
    assert model.to_json() == data  # every key kept, none added
    with pytest.raises(ValidationError):  # a verdict the drift does not know is refused
        RunSummary.model_validate({**data, "drift": {"verdict": "wobbly"}})
