"""The decision page's model and charts from a hand-made capacity folder (report.decision*)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llm_locust.report.cli import main
from llm_locust.report.decision import DecisionError, Verdict, load_decision
from llm_locust.report.decision_charts import capacity_chart, latency_chart
from llm_locust.report.decision_page import build_decision_page


def _step(index: int, level: float, verdict: str, in_flight: float, ttft: float | None, **extra: Any) -> dict:
    success = {"objective": "success>=99%", "name": "success", "op": ">=", "threshold": 0.99}
    terms = [success | {"value": 1.0, "interval": [0.99, 1.0], "verdict": "pass"}]
    if ttft is not None:
        line = {"objective": "ttft_p95<=5s", "name": "ttft_p95", "op": "<=", "threshold": 5.0}
        line |= {"value": ttft, "interval": [ttft * 0.9, ttft * 1.1]}
        terms.append(line | {"verdict": "fail" if ttft > 5.0 else "pass"})
    return {
        "index": index,
        "label": f"users={level:g}",
        "level": level,
        "verdict": verdict,
        "reason": "" if verdict == "pass" else f"why {index}",
        "mean_in_flight": in_flight,
        "request_throughput": in_flight / 10,
        "output_throughput": in_flight * 20,
        "median_tpot_ms": 50.0,
        "p95_ttft_ms": 123.0,
        "p95_e2el_ms": 2000.0,
        "terms": terms,
        "a_key_of_a_later_version": {"x": 1},
        **extra,
    }


def _folder(tmp_path: Path) -> Path:
    steps = [
        _step(0, 32, "fail", 31.0, 6.0),
        _step(1, 16, "pass", 15.5, 1.0),
        _step(2, 24, "invalid", 20.0, None),
        _step(3, 28, "fail", 25.0, 4.0),  # failed by another line: its TTFT P95 passes
    ]
    plan = {
        "name": "A",
        "endpoints": ["http://127.0.0.1:1"],
        "replicas": 1,
        "gpus": 4,
        "gpus_per_replica": 4,
        "gpu_hour_cost": 2.5,
        "dollars_per_hour": 10.0,
        "time_scale": 10.0,
        "search": {"stop": "the boundary is bracketed"},
        "steps": steps,
        "capacity_step": steps[1],
        "upper_step": steps[0],
        "capacity": 15.5,
        "capacity_unit": "concurrency",
        "demand": 50.0,
        "headroom": 15.5 / 50 - 1,
        "meets": False,
        "verdict": "fails 50 concurrent",
        "folder": "/nowhere/A",
        "salt": {"deployment_s": 12},
    }
    report = {
        "demand": {"concurrency": 50},
        "demand_text": "50 concurrent",
        "slo": ["ttft_p95<=5s"],
        "plans": [plan],
        "cheapest": None,
        "answer": "no plan meets 50 concurrent",
        "scaling": [],
        "not_measured": {},
        "new_top_level_key": 1,
    }
    (tmp_path / "capacity.json").write_text(json.dumps(report))
    (tmp_path / "A").mkdir()
    stages = [{"index": 2, "label": "users=24", "p95_ttft_ms": 150.0, "p95_e2el_ms": 2500.0}]
    (tmp_path / "A" / "summary.json").write_text(json.dumps({"stages": stages}))
    return tmp_path


def test_model_reads_capacity_json_tolerantly_sorted_by_level_with_sources(tmp_path: Path) -> None:
    d = load_decision(_folder(tmp_path))
    (plan,) = d.plans
    assert [s.step.level for s in plan.steps] == [16, 24, 28, 32]  # search order was 32, 16, 24, 28
    assert plan.folder == str(tmp_path / "A")  # moved folder: found beside capacity.json
    assert plan.result.capacity == 15.5 and plan.upper == 31.0 and plan.upper_verdict is Verdict.FAIL
    low, mid, _, high = plan.steps
    assert low.ttft is not None and (low.ttft.p95_s, low.ttft.low_s, low.ttft.high_s) == (1.0, 0.9, 1.1)
    # no ttft_p95 line: the summary's stage P95 (wall clock 150 ms) x the time scale 10, no interval
    assert mid.ttft is not None and mid.ttft.p95_s == pytest.approx(1.5) and mid.ttft.low_s is None
    assert mid.step.verdict is Verdict.INVALID and mid.source == "A/summary.json stage 2 (users=24)"
    assert high.cost_per_million == pytest.approx(10.0 / (31.0 * 20 * 3600 / 1e6))
    assert d.time_scales == [10.0]


def test_charts_sort_by_level_keep_invalid_apart_and_draw_thresholds(tmp_path: Path) -> None:
    d = load_decision(_folder(tmp_path))
    option = latency_chart(d, d.plans[0], "ttft")
    assert option is not None
    line = option["series"][0]
    assert [p["value"] for p in line["data"]] == [[15.5, 1.0], [25.0, 4.0], [31.0, 6.0]]
    # each point in the colour and shape of the TTFT line's own verdict at that step
    assert [p["symbol"] for p in line["data"]] == ["circle", "circle", "triangle"]
    assert line["data"][1]["name"] == "users=28 (step fail, this line pass)"
    marks = {m.get("yAxis") or m.get("xAxis"): m["name"] for m in line["markLine"]["data"]}
    assert (
        marks[5.0].startswith("SLO") and marks[15.5].startswith("capacity") and marks[50].startswith("demand")
    )
    invalid = next(s for s in option["series"] if s["name"].startswith("invalid"))
    assert [p["value"] for p in invalid["data"]] == [[20.0, 1.5]]
    cap = capacity_chart(d)
    assert cap is not None and cap["series"][1]["data"] == [[0, 15.5, 31.0, 0]]
    # the demand (50) is above every bar (15.5) and bracket (31): the axis still reaches it, or
    # ECharts leaves its line undrawn; the grey bar (short of the demand) has a legend entry
    assert cap["yAxis"]["min"] == 0 and cap["yAxis"]["max"] >= 50 * 1.05
    assert cap["series"][0]["data"][0]["itemStyle"]["color"] == "#90a4ae"
    short = [s["itemStyle"]["color"] for s in cap["series"] if s["name"] == "capacity short of the demand"]
    assert short == ["#90a4ae"]


def test_page_says_the_answer_and_the_time_scale(tmp_path: Path) -> None:
    page = build_decision_page(load_decision(_folder(tmp_path)))
    assert "No plan meets 50 concurrent" in page and "Simulated at 10x real time" in page
    assert "why 2" in page and "why 0" in page  # the invalid step and the failure, explained


def test_report_cli_writes_capacity_html_and_a_bad_file_is_one_line(tmp_path: Path, capsys: Any) -> None:
    folder = _folder(tmp_path)
    assert main([str(folder)]) == 0 and (folder / "capacity.html").exists()
    (folder / "capacity.json").write_text(
        json.dumps({"demand": {"concurrency": 5}, "plans": [{"name": "x"}]})
    )
    with pytest.raises(SystemExit) as exc:
        main([str(folder)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and "capacity.json: not a capacity comparison" in err
    with pytest.raises(DecisionError):
        load_decision(folder)


def test_a_withheld_answer_is_said_as_such_and_levels_are_the_load_when_searched_by_level(
    tmp_path: Path,
) -> None:
    folder = _folder(tmp_path)
    report = json.loads((folder / "capacity.json").read_text())
    plan = report["plans"][0]
    plan |= {"by_level": True, "withheld": "answer withheld: users=24 was invalid 2 times", "meets": False}
    plan["decided_by"] = [
        {"role": "capacity", "index": 1, "label": "users=16", "level": 16.0, "verdict": "pass", "valid": True}
    ]
    report |= {"withheld": True, "answer": "answer withheld: A (as cheap or cheaper) could not be measured"}
    (folder / "capacity.json").write_text(json.dumps(report))
    d = load_decision(folder)
    assert [s.load for s in d.plans[0].steps] == [16, 24, 28, 32]  # the levels, not the means in flight
    assert d.plans[0].upper == 32 and d.withheld
    page = build_decision_page(d)
    assert "Answer withheld: A (as cheap or cheaper)" in page and "No plan meets" not in page
    assert '<span class="badge withheld">withheld</span>' in page
    assert "users=16 (capacity) (decides: capacity)" in page
