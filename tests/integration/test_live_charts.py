"""The /llm page's charts (issue 13 §5): the vendored ECharts, stage starts, SLO thresholds,
hover values and axis titles, and the verdict once the run ends; real Locust web UI, real
headless Chromium."""

from __future__ import annotations

import html
import json
import re
import time
from pathlib import Path

import pytest

from tests.browser import chromium_binary, dump_dom, screenshot
from tests.locustproc import REPO, expect_exit
from tests.promproc import http_get
from tests.webproc import web_ui

ARTIFACT = REPO / "test-artifacts" / "webui-charts.png"


@pytest.mark.slow
@pytest.mark.skipif(chromium_binary() is None, reason="chromium not on PATH (make system-deps)")
def test_live_charts_mark_stages_and_slo_thresholds(tmp_path: Path) -> None:
    sim = ("--ttft-ms", "40", "--tpot-ms", "5", "--output-tokens", "20")
    with web_ui(
        tmp_path,
        sim,
        *("--autostart", "--ramp", "1,3", "--step-time", "5s", "--slo", "success>=50%,ttft_p95<=800ms"),
        *("--prompt-tokens", "32", "--max-tokens", "20"),
        results=tmp_path / "r",
    ) as ui:
        base = ui.base
        deadline, stats = time.monotonic() + 40, {}
        while time.monotonic() < deadline and not stats.get("result"):
            time.sleep(0.5)
            try:
                stats = json.loads(http_get(f"{base}/llm/stats", timeout=2))
            except OSError:
                continue
        assert stats.get("result"), stats.get("run")
        assert [s["label"] for s in stats["marks"]["stages"]] == ["users=1", "users=3"]
        assert stats["marks"]["slo"] == [
            {"metric": "ttft", "objective": "ttft_p95<=800ms", "threshold": pytest.approx(0.8)}
        ]
        assert "echarts" in http_get(f"{base}/llm/static/vendor/echarts/echarts.min.js")[:2000].lower()
        dom = dump_dom(f"{base}/llm", budget_ms=6000)
        screenshot(f"{base}/llm", ARTIFACT, size=(1400, 1300), budget_ms=6000)
    state = json.loads(html.unescape(re.search(r'<body[^>]*data-charts="([^"]*)"', dom).group(1)))
    assert set(state) == {"ttft", "tpot", "itl", "e2e", "tokens", "load"}
    for name, chart in state.items():
        assert chart["points"] > 0, name  # ECharts holds the history points
        assert {"users=1", "users=3"} <= set(chart["marks"]), name  # stage starts on every chart
    assert "ttft_p95<=800ms" in state["ttft"]["marks"] and "ttft_p95<=800ms" not in state["e2e"]["marks"]
    # the verdict once the ramp ended: stages of 5 s cannot show a P95 (it needs 72 requests)
    verdict = re.search(r'id="verdict"[^>]*>([^<]*)<', dom).group(1)
    assert verdict.startswith("SLO: ") and verdict != "SLO: FAIL", verdict
    assert "echarts.min.js" in dom and "chart.js" not in dom
    expect_exit(ui.proc, 0, ui.log())  # SIGTERM after the ramp ended: 0
