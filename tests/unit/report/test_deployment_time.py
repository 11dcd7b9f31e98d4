"""A plan folder's report in deployment time (issue 22 build §5): a run whose target ran 10x faster
than its deployment (--target-speedup 10, set by llm-locust capacity) is drawn as the deployment
would show it, with a note on the page; its files stay the measured wall clock."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from llm_locust.report import charts
from llm_locust.report.build import build_report
from llm_locust.report.data import load_run
from llm_locust.results.confidence import quantile_interval
from tests.unit.report.test_report import _folder, _rows


def _sped_up(folder: Path, k: float) -> Path:
    summary = json.loads((folder / "summary.json").read_text())
    summary["config"]["options"]["target_speedup"] = k
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def test_a_sped_up_run_is_drawn_in_deployment_time_with_a_note(tmp_path: Path) -> None:
    wall = load_run(_folder(tmp_path, "wall"))
    folder = _sped_up(_folder(tmp_path, "deployment"), 10.0)
    before = (folder / "summary.json").read_text(), (folder / "requests.jsonl").read_text()
    run = load_run(folder)
    assert ((folder / "summary.json").read_text(), (folder / "requests.jsonl").read_text()) == before
    for measured, shown in zip(wall.model.to_json()["stages"], run.model.to_json()["stages"], strict=True):
        assert shown["p95_ttft_ms"] == pytest.approx(measured["p95_ttft_ms"] * 10)
        assert shown["p99_e2el_ms"] == pytest.approx(measured["p99_e2el_ms"] * 10)
        assert shown["request_throughput"] == pytest.approx(measured["request_throughput"] / 10)
        assert shown["output_throughput"] == pytest.approx(measured["output_throughput"] / 10)
        assert shown["completed"] == measured["completed"]  # counts have no time in them
        ttft = next(o for o in shown["slo"]["objectives"] if o["name"] == "ttft_p95")
        assert ttft["threshold"] == pytest.approx(1.3) and ttft["objective"] == "ttft_p95<=1.3s"
    assert run.t_end - run.t0 == pytest.approx((wall.t_end - wall.t0) * 10)
    assert run.window_s == pytest.approx(wall.window_s * 10)
    # the chart: P95 per stage and its interval, from the records x 10 (computed here)
    option = charts.latency_vs_load([run], "ttft")
    p95 = next(s for s in option["series"] if s["name"] == "P95")
    assert p95["data"] == [
        pytest.approx(s["p95_ttft_ms"] * 10, abs=1e-3) for s in wall.model.to_json()["stages"]
    ]
    stage1 = np.array([r["ttft"] for r in _rows(1.0, 1) if r["stage"] == 1 and r["ttft"] is not None])
    lo, hi = quantile_interval(stage1 * 10, 0.95)
    bars = next(s for s in option["series"] if s["name"] == "P95 95 % CI")
    assert bars["data"][1][1:3] == [pytest.approx(lo * 1000, abs=1e-3), pytest.approx(hi * 1000, abs=1e-3)]
    assert p95["markLine"]["data"] == [{"yAxis": pytest.approx(1300.0), "name": "ttft_p95<=1.3s"}]
    page = build_report([run])
    assert "<strong>Deployment time.</strong> Measured deployment against a target 10x faster" in page
    assert "Deployment time." not in build_report([wall])
