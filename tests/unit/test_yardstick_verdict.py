"""benchmarks/yardstick.py's verdict counts the client's saturated seconds by the product's own rule
(issue 29 §1: "no second flagged saturated"), from the health file a run writes."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def yardstick() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))  # the script imports bench_common as its neighbour
    try:
        spec = importlib.util.spec_from_file_location("yardstick_under_test", BENCHMARKS / "yardstick.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclasses look their module up
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCHMARKS))


def _interval(start: float, cpu: float, lag_p90_s: float = 0.001) -> dict[str, float]:
    return {
        "start": start,
        "end": start + 1.0,
        "cpu": cpu,
        "lag_mean_s": 0.001,
        "lag_p90_s": lag_p90_s,
        "lag_max_s": 0.004,
    }


def _health(tmp_path: Path, rows: list[dict[str, float]]) -> Path:
    path = tmp_path / "health.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_saturated_seconds_by_the_products_rule(yardstick: ModuleType, tmp_path: Path) -> None:
    rows = [
        _interval(100.0, 0.5),
        _interval(101.0, 0.92),  # a whole core: saturated
        _interval(102.0, 0.5, lag_p90_s=0.012),  # a late loop: saturated
        _interval(103.0, 0.89),
        _interval(110.0, 0.99),  # outside the window
    ]
    window = yardstick.health_window(_health(tmp_path, rows), 100.0, 105.0)
    assert window["saturated_s"] == 2.0
    assert window["health_s"] == 4.0


def test_one_saturated_second_fails_the_verdict(yardstick: ModuleType) -> None:
    args = argparse.Namespace(itl_ms=10.0)
    ref = {"ttft_p50_ms": 100.5, "itl_p99_ms": 16.0, "cpu_pct": 60.0, "tok_s": 66000.0}
    ours = {
        "ttft_p50_ms": 100.3,
        "itl_p99_ms": 15.0,
        "tpot_ms": 10.0,
        "open_streams": 698.0,
        "cpu_pct": 70.0,
        "tok_s": 65800.0,
        "saturated_s": 0.0,
    }
    assert yardstick.verdict(args, 700, ref, ours)["meets_target"]
    failed = yardstick.verdict(args, 700, ref, {**ours, "saturated_s": 1.0})
    assert not failed["meets_target"]
    assert [k for k, ok in failed["passed"].items() if not ok] == ["saturated"]
    # no health file (a client that wrote none): not a pass
    assert not yardstick.verdict(args, 700, ref, {**ours, "saturated_s": None})["meets_target"]
