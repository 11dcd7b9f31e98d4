"""The report's chart options carry the run's own numbers (report.charts, timecharts, tables, cli)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from llm_locust.record import RequestRecord
from llm_locust.report import charts, timecharts
from llm_locust.report.build import build_report, write_report
from llm_locust.report.cli import main
from llm_locust.report.compare import cache_warning, compare_table
from llm_locust.report.data import load_run
from llm_locust.results.analysis import analyse
from llm_locust.results.confidence import quantile_interval
from llm_locust.results.slo import evaluate, parse_slo
from llm_locust.results.summary import summarize

T0 = 1_800_000_000.0
SLO = "ttft_p95<=130ms,e2e_p99<=2s"


def _rows(scale: float, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for stage, (count, ttft) in enumerate(((40, 0.05), (400, 0.12))):
        for i in range(count):
            t = rng.uniform(0.8, 1.2) * ttft * scale
            start = T0 + stage * 60 + i * (60 / count)
            rows.append(
                {
                    "request_id": f"{stage}-{i}",
                    "start_time": start,
                    "outcome": "ok" if i % 50 else "http_5xx",
                    "message": "" if i % 50 else "engine overloaded",
                    "ttft": t if i % 50 else None,
                    "tpot": 0.01 * scale if i % 50 else None,
                    "e2e": t + 0.09 * scale if i % 50 else 0.01,
                    "itl": [0.01 * scale] * 9 if i % 50 else [],
                    "prompt_tokens": 100 if i % 50 else None,
                    "completion_tokens": 10 if i % 50 else None,
                    "target_input_tokens": 100,
                    "target_output_tokens": 10,
                    "stage": stage,
                    "warmup": False,
                }
            )
    return rows


def _folder(tmp: Path, name: str, scale: float = 1.0, seed: int = 1) -> Path:
    rows = _rows(scale, seed)
    spec = parse_slo(SLO)
    summary = summarize(rows, 120.0)
    stages = []
    for index, users in enumerate((2, 16)):
        own = [r for r in rows if r["stage"] == index]
        entry = {"index": index, "kind": "users", "target": users, "label": f"users={users}"}
        entry.update(summarize(own, 60.0))
        entry["window"] = {"start": T0 + index * 60, "end": T0 + (index + 1) * 60}
        records = [RequestRecord.from_json(r) for r in own]
        entry["slo"] = evaluate(spec, records, 60.0).to_json()
        stages.append(entry)
    summary["stages"] = stages
    summary["slo"] = evaluate(spec, [RequestRecord.from_json(r) for r in rows], 120.0).to_json()
    summary["config"] = {"model": "m", "start_time": T0, "stop_time": T0 + 120, "options": {}}
    folder = tmp / name
    folder.mkdir()
    analyse(summary, rows, rows, folder, spec, window_s=10.0)
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_latency_chart_holds_the_stage_percentiles_and_their_intervals(tmp_path: Path) -> None:
    run = load_run(_folder(tmp_path, "a"))
    option = charts.latency_vs_load([run], "ttft")
    assert option["xAxis"]["data"] == ["users=2", "users=16"]
    p95 = next(s for s in option["series"] if s["name"] == "P95")
    assert p95["data"] == [pytest.approx(s["p95_ttft_ms"], abs=1e-3) for s in run.model.to_json()["stages"]]
    bars = next(s for s in option["series"] if s["name"] == "P95 95 % CI")
    values = [
        np.array([r["ttft"] for r in _rows(1.0, 1) if r["stage"] == i and r["ttft"] is not None])
        for i in (0, 1)
    ]
    lo1, hi1 = quantile_interval(values[1], 0.95)
    assert bars["data"][1] == [1, pytest.approx(lo1 * 1000, abs=1e-3), pytest.approx(hi1 * 1000, abs=1e-3), 0]
    assert bars["data"][0][3] == 2  # 39 successes cannot bound a P95 from above: flagged open
    assert p95["markLine"]["data"] == [{"yAxis": 130.0, "name": "ttft_p95<=130ms"}]
    # the first stage is inconclusive (too few requests), the second fails (P95 TTFT ~ 142 ms)
    bands = {s["name"]: s["data"] for s in option["series"] if s["type"] == "bar"}
    assert [run.model.to_json()["stages"][0]["verdict"], run.model.to_json()["stages"][1]["verdict"]] == [
        "inconclusive",
        "fail",
    ]
    top = max(max(v for v in s["data"] if v is not None) for s in option["series"] if s["type"] == "line")
    assert bands["inconclusive stage"][1] is None and bands["inconclusive stage"][0] >= top
    assert bands["fail stage"][0] is None and bands["fail stage"][1] >= top


def test_time_charts_hold_the_windows(tmp_path: Path) -> None:
    run = load_run(_folder(tmp_path, "a"))
    tokens = timecharts.tokens_over_time([run])
    assert [v for _, v in tokens["series"][0]["data"]] == [
        pytest.approx(w.output_tokens_per_s, abs=1e-3) for w in run.windows
    ]
    total = sum(w.output_tokens_per_s * (w.end_s - w.start_s) for w in run.windows)
    assert total == pytest.approx(sum(r["completion_tokens"] or 0 for r in _rows(1.0, 1)), rel=1e-6)
    lines = tokens["series"][0]["markLine"]["data"]
    assert [line["xAxis"] for line in lines] == [0.0, 60.0] and lines[1]["name"] == "users=16"
    errors = timecharts.errors_over_time([run])
    assert sum(v for _, v in errors["series"][0]["data"]) == 9 and errors["series"][0]["name"] == "http_5xx"
    assert timecharts.server_over_time([run]) is None  # no server metrics in this folder


def test_cdf_lengths_and_pareto(tmp_path: Path) -> None:
    run = load_run(_folder(tmp_path, "a"))
    cdf = charts.cdf_chart([run], "e2el")["series"][0]["data"]
    e2e = np.array([r["e2e"] for r in _rows(1.0, 1) if r["outcome"] == "ok"]) * 1000
    assert cdf[0][0] == pytest.approx(e2e.min(), abs=1e-3) and cdf[-1] == [
        pytest.approx(e2e.max(), abs=1e-3),
        1.0,
    ]
    assert charts.lengths_chart([run], "output")["series"][0]["data"][0] == [10.0, 10.0]
    assert charts.pareto_chart([run]) is None  # GPUs unknown
    with_gpus = load_run(run.directory, gpus=4)
    pareto = charts.pareto_chart([with_gpus])["series"][0]["data"]
    assert pareto[1][:2] == [
        pytest.approx(100.0),
        pytest.approx(run.model.to_json()["stages"][1]["output_throughput"] / 4, abs=1e-3),
    ]


def test_page_is_self_contained_and_compare_shows_differences(tmp_path: Path) -> None:
    fast, slow = load_run(_folder(tmp_path, "fast")), load_run(_folder(tmp_path, "slow", scale=2.0))
    page = build_report([slow, fast], compare=True)
    assert "<script src" not in page and "http://" not in page.split("<script>")[0]
    assert page.count("<script") == 3  # ECharts, the options, the page script: all inline
    assert "fast (B) against slow (A)" in page
    table = compare_table(slow, fast)
    assert "TTFT p95 (ms)" in table and "-50.0%" in table  # twice as fast
    assert "B lower" in table and "95 % interval of B − A" in table  # and shown to be


def test_cli_writes_the_report_and_refuses_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _folder(tmp_path, "a")
    assert main([str(folder)]) == 0 and (folder / "report.html").stat().st_size > 1_000_000
    assert "wrote" in capsys.readouterr().out
    for argv, needle in (
        ([str(tmp_path / "missing")], "not a directory"),
        ([str(tmp_path)], "no summary.json"),
        ([str(folder), "--window", "soon"], "--window"),
        ([str(folder), "--gpus", "0"], "--gpus"),
        ([str(folder), "--compare", str(folder), str(folder)], "not both"),
        ([], "no results folder"),
    ):
        with pytest.raises(SystemExit) as info:
            main(argv)
        err = capsys.readouterr().err
        assert info.value.code == 2 and needle in err and len(err.strip().splitlines()) == 1, (argv, err)
    out = write_report([folder, folder], tmp_path / "two.html")
    assert "a (2)" in out.read_text()  # two runs of the same name stay apart


def _with_cache(folder: Path, share: float | None, salt: str) -> Path:
    summary = json.loads((folder / "summary.json").read_text())
    if share is not None:
        summary["prefix_cache"] = {"token_hit_ratio": share, "cached_tokens": 1000 * share}
    summary["config"]["options"]["prompt_salt"] = salt
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def test_compare_warns_when_the_prefix_cache_served_the_runs_differently(tmp_path: Path) -> None:
    cold = load_run(_with_cache(_folder(tmp_path, "cold"), 0.0, "x"))
    warm = load_run(_with_cache(_folder(tmp_path, "warm"), 0.69, "x"))
    near = load_run(_with_cache(_folder(tmp_path, "near"), 0.049, "y"))
    blind = load_run(_with_cache(_folder(tmp_path, "blind"), None, "z"))
    text = cache_warning(cold, warm)
    assert text is not None and "0.0% of A's" in text and "69.0% of B's" in text and "+69.0 points" in text
    assert "--prompt-salt x" in text  # the same salt: B sent A's prompts again
    assert cache_warning(cold, near) is None  # 4.9 points: within 5
    assert "--prompt-salt" not in (cache_warning(near, warm) or "--prompt-salt")  # salts differ
    assert cache_warning(cold, blind) is None  # B's server reported nothing: no claim
    page = build_report([cold, warm], compare=True)
    assert '<p class="warn"><strong>Warning:</strong> the prefix cache served 0.0%' in page
    assert "the prefix cache served" not in build_report([cold, near], compare=True)
