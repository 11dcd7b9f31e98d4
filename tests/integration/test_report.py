"""report.html from real runs, opened by real headless Chromium from file:// with no network.

Checks the page itself (every chart rendered by ECharts with data, no script error, no
request leaving the file), that a run writes its report at the end, that a short stage's P99
is inconclusive while a long one's is decided, and that ``--compare`` of a fast and a slow
simulator shows the fast one ahead on every latency chart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.browser import NetworkTrap, chromium_binary, dump_dom, echarts_state, screenshot
from tests.locustproc import REPO, expect_exit, llm_locust_cli, run_locust
from tests.simproc import running_sim
from tests.unit.report.test_traffic import _modern_folder

ARTIFACTS = REPO / "test-artifacts"
SLO = "success>=90%,ttft_p99<=5s,e2e_p95<=10s,kv_cache_usage_max<=100%,waiting_max<=1000"

pytestmark = pytest.mark.skipif(chromium_binary() is None, reason="needs Debian's chromium")


def _ramp(url: str, results: Path, *extra: str, ramp: str = "2,24", code: int = 0) -> Any:
    res = run_locust(
        url,
        "--ramp",
        ramp,
        "--step-time",
        "10s",
        "--prompt-tokens",
        "64",
        "--max-tokens",
        "16",
        *extra,
        results_dir=results,
    )
    expect_exit(res, code)
    return res


@pytest.fixture(scope="module")
def ramp_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    results = tmp_path_factory.mktemp("report") / "run"
    with running_sim("--ttft-ms", "30", "--tpot-ms", "4") as url:
        return _ramp(
            url, results, "--slo", SLO, "--server-metrics", f"{url}/metrics", "--server-metrics-interval", "1"
        )


def test_run_writes_a_report_that_renders_offline(ramp_run: Any) -> None:
    folder = ramp_run.results_dir
    assert {"report.html", "windows.csv", "server_metrics.jsonl"} <= {p.name for p in folder.iterdir()}
    url = (folder / "report.html").resolve().as_uri()
    with NetworkTrap() as trap:
        dom = dump_dom(url, budget_ms=4000, flags=trap.flags)
        shot = screenshot(url, ARTIFACTS / "report.png", size=(1400, 5200), budget_ms=4000, flags=trap.flags)
    # every request went to the trap (nothing reached a network); none came from the page
    assert trap.page_requests == [], trap.requests
    state, errors, resources = echarts_state(dom)
    assert errors == [] and resources == []
    expected = {f"latency-{m}" for m in ("ttft", "tpot", "itl", "e2el")} | {"throughput", "time-server"}
    expected |= {"cdf-ttft", "cdf-tpot", "cdf-e2el", "lengths-input", "lengths-output"}
    expected |= {"time-latency", "time-tokens", "time-in-flight"}
    assert expected <= set(state), sorted(state)
    for key, chart in state.items():
        assert chart["series"] and chart["drawn"] > 10, key  # ECharts drew shapes for it
        assert sum(s["points"] for s in chart["series"]) > 0, key
    assert shot.stat().st_size > 50_000


def test_chart_data_is_the_run_data(ramp_run: Any) -> None:
    summary = ramp_run.summary
    dom = dump_dom((ramp_run.results_dir / "report.html").resolve().as_uri(), budget_ms=4000)
    state, _, _ = echarts_state(dom)
    p95 = next(s for s in state["latency-ttft"]["series"] if s["name"] == "P95")
    assert p95["data"] == [pytest.approx(s["p95_ttft_ms"], abs=1e-3) for s in summary["stages"]]
    in_flight = next(s for s in state["time-in-flight"]["series"])
    assert [p[1] for p in in_flight["data"]] == [
        pytest.approx(w["in_flight"], abs=1e-3) for w in summary["windows"]
    ]
    assert max(p[1] for p in in_flight["data"]) == pytest.approx(24, rel=0.15)  # the top stage's users


def test_short_stage_p99_is_inconclusive_long_stage_is_decided(ramp_run: Any) -> None:
    stages = ramp_run.summary["stages"]
    short, long = ({o["name"]: o for o in s["slo"]["objectives"]} for s in stages)
    assert short["ttft_p99"]["n"] < 368 <= long["ttft_p99"]["n"], (
        short["ttft_p99"]["n"],
        long["ttft_p99"]["n"],
    )
    assert short["ttft_p99"]["passed"] and short["ttft_p99"]["verdict"] == "inconclusive"
    assert "needs at least 368" in short["ttft_p99"]["note"]
    assert long["ttft_p99"]["verdict"] == "pass" and long["ttft_p99"]["interval"][1] <= 5.0
    # judged from the scrapes inside the stage (1 s apart when the load generator keeps up)
    assert long["kv_cache_usage_max"]["verdict"] == "pass" and long["kv_cache_usage_max"]["n"] >= 2
    assert stages[0]["verdict"] == "inconclusive"


def test_compare_shows_the_faster_server_ahead_on_every_latency_chart(tmp_path: Path) -> None:
    # 12x apart on TTFT, 8x on token gaps: every point compared is a percentile of its own run
    # (a stage's, a 1-s window's P95 over a dozen requests), and the client's jitter on a busy
    # 2-core machine (tens of ms, up to the 0.1 s past which a request counts as stalled and
    # leaves the statistics) must stay below the difference: 75 ms (TTFT 25 against 100) did not
    with (
        running_sim("--ttft-ms", "25", "--tpot-ms", "8") as fast_url,
        running_sim("--ttft-ms", "300", "--tpot-ms", "64") as slow_url,
    ):
        fast = _ramp(fast_url, tmp_path / "fast", ramp="2,8")
        slow = _ramp(slow_url, tmp_path / "slow", ramp="2,8")
    out = tmp_path / "compare.html"
    proc = llm_locust_cli("report", "--compare", str(slow.results_dir), str(fast.results_dir), "-o", str(out))
    expect_exit(proc, 0)
    dom = dump_dom(out.resolve().as_uri(), budget_ms=4000)
    state, errors, _ = echarts_state(dom)
    assert errors == []
    assert "fast (B) against slow (A)" in dom and "B − A" in dom
    latency = [k for k in state if k.startswith(("latency-", "cdf-")) or k == "time-latency"]
    assert len(latency) == 8
    for key in latency:
        series = {s["name"]: s for s in state[key]["series"] if s["type"] == "line"}
        pairs = [(n, n.replace("slow", "fast", 1)) for n in series if n == "slow" or n.startswith("slow ")]
        assert pairs, (key, list(series))
        for slow_name, fast_name in pairs:
            _ahead(key, series[fast_name]["data"], series[slow_name]["data"])
    screenshot(out.resolve().as_uri(), ARTIFACTS / "compare.png", size=(1400, 3000), budget_ms=4000)


def _ahead(key: str, fast: list[Any], slow: list[Any]) -> None:
    """Fast below slow at every shared point: category lines by index, CDFs by fraction (up to
    the 99th percentile: the maximum is one request), time series by window (where both have
    a value)."""
    if key.startswith("cdf-"):
        f, s = dict((round(p[1], 4), p[0]) for p in fast), dict((round(p[1], 4), p[0]) for p in slow)
        shared = sorted(q for q in set(f) & set(s) if q <= 0.99)
        assert len(shared) > 100 and all(f[q] < s[q] for q in shared), key
        return
    if key.startswith("time-"):
        f, s = {p[0]: p[1] for p in fast if p[1] is not None}, {p[0]: p[1] for p in slow if p[1] is not None}
        values = [(f[t], s[t]) for t in sorted(set(f) & set(s))]
    else:
        values = [(a, b) for a, b in zip(fast, slow, strict=True) if a is not None and b is not None]
    assert values and all(a < b for a, b in values), (key, values)


def test_modern_traffic_page_renders_with_the_visible_ttft_drawn(tmp_path: Path) -> None:
    # a folder of reasoning, cached, burst and cancelled records (the unit test's), reported
    # by the command line and opened by Chromium: no script error, visible TTFT lines drawn
    folder = _modern_folder(tmp_path)
    out = tmp_path / "modern.html"
    proc = llm_locust_cli("report", str(folder), "-o", str(out))
    expect_exit(proc, 0)
    state, errors, _ = echarts_state(dump_dom(out.resolve().as_uri(), budget_ms=4000))
    assert errors == []
    stages = json.loads((folder / "summary.json").read_text())["stages"]
    series = {s["name"]: s for s in state["latency-ttft"]["series"]}
    for q in (50, 95):
        assert series[f"visible P{q}"]["data"] == [
            pytest.approx(s[f"p{q}_ttft_visible_ms"], abs=1e-3) for s in stages
        ]
        assert series[f"visible P{q}"]["points"] == len(stages)
    assert "Modern traffic" in out.read_text()
