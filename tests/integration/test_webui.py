"""The /llm page on Locust's web UI: a real run, its JSON, and the page in headless Chromium."""

from __future__ import annotations

import html
import json
import re
import time
from pathlib import Path

import pytest

from tests.browser import chromium_binary, dump_dom, screenshot
from tests.locustproc import REPO, expect_exit
from tests.promproc import http_get, write_locustfile
from tests.webproc import web_ui

ARTIFACT = REPO / "test-artifacts" / "webui.png"
# the live tiles and the end-of-ramp verdict assume a client that keeps up: a parallel run had the
# client saturated at users=1 ("no stage met the SLO; client saturated"), so these run alone
pytestmark = pytest.mark.serial


def _wait_for_records(base: str, deadline: float) -> dict:
    stats: dict = {}
    while time.monotonic() < deadline:
        try:
            stats = json.loads(http_get(f"{base}/llm/stats", timeout=2))
            if stats["snapshot"]["totals"]["completed"] >= 10 and len(stats["history"]) >= 3:
                return stats
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"no records reached /llm/stats in time: {stats}")


def _tile(dom: str, element_id: str) -> str:
    match = re.search(rf'id="{element_id}"[^>]*>([^<]*)<', dom)
    assert match, element_id
    return match.group(1)


@pytest.mark.slow
@pytest.mark.skipif(chromium_binary() is None, reason="chromium not on PATH (make system-deps)")
def test_llm_page_shows_live_values(tmp_path: Path) -> None:
    sim = ("--ttft-ms", "60", "--tpot-ms", "8", "--output-tokens", "30", "--error-rate", "0.05")
    with web_ui(
        tmp_path,
        sim,
        *("--autostart", "--autoquit", "2", "-t", "15s", "-u", "4", "-r", "4"),
        locustfile=write_locustfile(tmp_path),
    ) as ui:
        base = ui.base
        stats = _wait_for_records(base, time.monotonic() + 25)
        run, snap = stats["run"], stats["snapshot"]
        assert run["users"] == 4 and run["run_id"] and run["role"] == "local"
        assert snap["recent"]["output_tokens_per_s"] > 0
        # the server's 60 ms plus loopback, within the live histogram's 0.5 %: 30 ms off fails
        assert 0.0595 <= snap["latency"]["ttft"]["p50"] <= 0.08, snap["latency"]["ttft"]
        assert stats["history"][-1]["tokens_per_s"] > 0
        newer = json.loads(http_get(f"{base}/llm/stats?since={stats['history'][-1]['t']}"))
        assert all(p["t"] > stats["history"][-1]["t"] for p in newer["history"])
        # the metrics route and the "LLM" tab of Locust's own UI
        assert "llm_locust_generation_tokens_total" in http_get(f"{base}/metrics")
        requests = json.loads(http_get(f"{base}/stats/requests"))
        tab = next(t for t in requests["extended_stats"] if t["key"] == "llm-locust")
        assert tab["data"][0]["metric"].startswith("TTFT") and tab["data"][0]["p50"] != ""

        before = json.loads(http_get(f"{base}/llm/stats"))["snapshot"]
        dom = dump_dom(f"{base}/llm")
        after = json.loads(http_get(f"{base}/llm/stats"))["snapshot"]
        # each tile shows its own number: between what /llm/stats said just before and after
        done = [before["totals"]["completed"], after["totals"]["completed"]]
        assert done[0] <= int(_tile(dom, "v-completed")) <= done[1]
        rates = [before["recent"]["output_tokens_per_s"], after["recent"]["output_tokens_per_s"]]
        assert 0.9 * min(rates) <= float(_tile(dom, "v-tokens-per-s")) <= 1.1 * max(rates), rates
        assert 59.5 <= float(_tile(dom, "v-ttft-p50")) <= 80
        assert _tile(dom, "v-users") == "4"
        assert _tile(dom, "model") not in ("", "-")
        # charts drawn: ECharts holds each chart's history points (not a PNG's size)
        state = json.loads(html.unescape(re.search(r'<body[^>]*data-charts="([^"]*)"', dom).group(1)))
        assert set(state) == {"ttft", "tpot", "itl", "e2e", "tokens", "load"}
        assert all(chart["points"] >= 3 for chart in state.values()), state
        screenshot(f"{base}/llm", ARTIFACT)  # kept for people, not asserted on
        ui.proc.wait(40)  # -t 15s then --autoquit 2
    expect_exit(ui.proc, 1, ui.log())  # 1: the injected errors are failures


def _wait_for_result(base: str, deadline: float) -> dict:
    stats: dict = {}
    while time.monotonic() < deadline:
        try:
            stats = json.loads(http_get(f"{base}/llm/stats", timeout=2))
            if stats.get("result"):
                return stats
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"no result on /llm/stats after the ramp: {stats.get('run')}")


def _js_number(v: float) -> str:
    """app.js ``formatNumber`` for values under 10,000."""
    if float(v).is_integer():
        return str(int(v))
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


@pytest.mark.slow
@pytest.mark.skipif(chromium_binary() is None, reason="chromium not on PATH (make system-deps)")
def test_llm_page_leads_with_the_answer_after_a_ramp(tmp_path: Path) -> None:
    """Issue 8 §6: once a ramp ends, /llm shows the SLO verdict and the capacity sentence, its
    tiles show the run's totals (not a trailing 30 s window), and the LLM tab links to /llm."""
    results = tmp_path / "r"
    with web_ui(
        tmp_path,
        ("--ttft-ms", "20", "--tpot-ms", "5", "--output-tokens", "20"),
        *("--autostart", "--ramp", "1,2", "--step-time", "3s", "--slo", "success>=50%"),
        *("--prompt-tokens", "32", "--max-tokens", "20"),
        results=results,
    ) as ui:
        base = ui.base
        stats = _wait_for_result(base, time.monotonic() + 40)
        summary = json.loads((results / "summary.json").read_text())
        result = stats["result"]
        assert result["capacity"] == summary["capacity"] and "users=2" in result["capacity"]
        assert result["slo_passed"] is True
        assert [s["verdict"] for s in result["stages"]] == ["pass", "pass"]
        dom = dump_dom(f"{base}/llm")
        assert summary["capacity"] in _tile(dom, "capacity")
        assert _tile(dom, "verdict") == "SLO: PASS"
        assert _tile(dom, "v-requests-per-s") == _js_number(summary["request_throughput"])
        assert _tile(dom, "v-tokens-per-s") == _js_number(summary["output_throughput"])
        assert _tile(dom, "v-completed") == str(summary["completed"])
        assert "whole run" in _tile(dom, "rate-scope")
        tab = dump_dom(f"{base}/?tab=llm-locust", budget_ms=8000)
        assert re.search(r'<a [^>]*href="[^"]*llm"[^>]*>Charts: open /llm</a>', tab), tab[-3000:]
    expect_exit(ui.proc, 0, ui.log())  # SIGTERM after the run: 0
