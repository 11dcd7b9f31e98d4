"""The report's "Modern traffic" table and visible-TTFT lines carry the summary's own numbers
(issue 16: reasoning, cancelled, prefix cache, bursts); a plain chat run's report has neither."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from llm_locust.report import charts
from llm_locust.report.build import build_report
from llm_locust.report.data import load_run
from llm_locust.results.summary import summarize
from tests.unit.report.test_report import _folder

T0 = 1_800_000_000.0
CANCELLED = ((0, 5), (0, 17), (1, 20))


def _row(stage: int, i: int) -> dict[str, Any]:
    start = T0 + stage * 60 + i * 2.0
    cached = (64 if i % 3 == 0 else 0) if stage == 0 else 32
    ttft = (0.05 if cached else 0.12) + 0.001 * (i % 7)
    burst = 1 + stage if i < 8 else None
    row: dict[str, Any] = {
        "request_id": f"{stage}-{i}",
        "start_time": start,
        "outcome": "ok",
        "message": "",
        "ttft": ttft,
        "ttft_visible": ttft + 0.15 + 0.002 * (i % 5),
        "tpot": 0.01,
        "e2e": ttft + 0.39,
        "itl": [0.01] * 39,
        "prompt_tokens": 128,
        "completion_tokens": 40,
        "token_source": "usage",
        "reasoning_tokens": 10 + i % 11,
        "answer_tokens": 30 - i % 11,
        "reasoning_token_source": "usage" if i % 4 else "chunks",
        "reasoning_chunks": 10 + i % 11,
        "first_visible_tokens": 1,
        "cached_tokens": cached,
        "target_input_tokens": 128,
        "target_output_tokens": 40,
        "stage": stage,
        "warmup": False,
        "burst": burst,
        "burst_at": T0 + stage * 60 if burst else None,
    }
    if (stage, i) in CANCELLED:  # abandoned by the client mid-stream
        row.update(outcome="cancelled", message="cancelled by the client", ttft_visible=None, tpot=None)
        row.update(completion_tokens=None, reasoning_tokens=None, answer_tokens=None, cached_tokens=None)
    return row


def _modern_folder(tmp: Path) -> Path:
    rows = [_row(stage, i) for stage in (0, 1) for i in range(30)]
    summary = summarize(rows, 120.0)
    summary["stages"] = []
    for index in (0, 1):
        entry = {
            "index": index,
            "kind": "users",
            "target": 4 * (index + 1),
            "label": f"users={4 * (index + 1)}",
        }
        entry.update(summarize([r for r in rows if r["stage"] == index], 60.0))
        entry["window"] = {"start": T0 + index * 60, "end": T0 + (index + 1) * 60}
        summary["stages"].append(entry)
    summary["config"] = {"model": "m", "start_time": T0, "stop_time": T0 + 120, "options": {}}
    folder = tmp / "modern"
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def _rows_of(page: str, cls: str) -> list[list[str]]:
    match = re.search(rf'<table class="{cls}">.*?<tbody>(.*?)</tbody></table>', page, re.S)
    assert match, f"no table {cls}"
    return [re.findall(r"<td>(.*?)</td>", tr) for tr in re.findall(r"<tr>(.*?)</tr>", match.group(1))]


def _f(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def test_modern_traffic_table_carries_the_summary_numbers(tmp_path: Path) -> None:
    run = load_run(_modern_folder(tmp_path))
    s = run.model.to_json()  # the file's keys, as the report read them
    assert s["reasoning"] and s["prefix_cache"] and s["bursts"] and s["cancelled"] == 3
    page = build_report([run])
    assert "Modern traffic" in page
    ttft = _rows_of(page, "traffic-ttft")
    assert ttft == [
        ["TTFT (any token)", *(_f(s[f"p{q}_ttft_ms"]) for q in (50, 90, 95, 99))],
        ["visible TTFT (first content)", *(_f(s[f"p{q}_ttft_visible_ms"]) for q in (50, 90, 95, 99))],
    ]
    assert float(ttft[1][1]) > float(ttft[0][1]) + 100  # the visible one is the later clock
    block = s["reasoning"]
    assert _rows_of(page, "traffic-tokens") == [
        [label, *(_f(block[f"{stat}_{key}"]) for stat in ("mean", "p50", "p90", "p99"))]
        for label, key in (("reasoning tokens", "reasoning_tokens"), ("answer tokens", "answer_tokens"))
    ]
    assert block["sources"] == {"chunks": 15, "usage": 42}
    assert "reasoning counts from: chunks 15, usage 42" in page
    assert "Cancelled by the client: 3 of 60 requests (5.0 %)" in page
    cache = _rows_of(page, "traffic-cache")
    assert [r[0] for r in cache] == ["users=4", "users=8", "whole run"]
    for row, entry in zip(cache, [*s["stages"], s], strict=True):
        c = entry["prefix_cache"]
        assert row[1:3] == [str(c["requests_reporting"]), str(c["hits"])]
        assert row[3:5] == [f"{c['hit_ratio'] * 100:.1f} %", f"{c['token_hit_ratio'] * 100:.1f} %"]
        expected = [entry.get(f"p{q}_ttft_cache_{k}_ms") for k in ("hit", "miss") for q in (50, 95)]
        assert row[5:] == [_f(v) for v in expected]
    assert cache[2][1:4] == ["57", "39", "68.4 %"]  # 10 of 28 in stage 0, all 29 in stage 1
    assert cache[1][7:] == ["-", "-"]  # every request of stage 1 hit: no miss to time
    assert _rows_of(page, "traffic-bursts") == [
        [label, _f(s[f"p50_ttft_{k}_ms"]), _f(s[f"p95_ttft_{k}_ms"])]
        for label, k in (("burst requests", "burst"), ("base load", "base"))
    ]
    waves = _rows_of(page, "traffic-waves")
    assert waves == [
        [str(w["wave"]), str(w["sent"]), str(w["ok"]), _f(w["queue_drain_s"], 3), _f(w["drain_s"], 3)]
        for w in s["bursts"]["per_wave"]
    ]
    assert [w[:3] for w in waves] == [["1", "8", "7"], ["2", "8", "8"]] and waves[0][4] == "-"


def test_ttft_chart_has_the_visible_ttft_per_stage(tmp_path: Path) -> None:
    run = load_run(_modern_folder(tmp_path))
    option = charts.latency_vs_load([run], "ttft")
    assert option is not None
    lines = {s["name"]: s["data"] for s in option["series"] if s["type"] == "line"}
    for q in (50, 95):
        assert lines[f"visible P{q}"] == [
            round(st[f"p{q}_ttft_visible_ms"], 3) for st in run.model.to_json()["stages"]
        ]
        assert f"visible P{q}" in option["legend"]["data"]
    tpot = charts.latency_vs_load([run], "tpot")
    assert tpot is not None and not any("visible" in s["name"] for s in tpot["series"])


def test_a_plain_chat_run_has_no_modern_traffic(tmp_path: Path) -> None:
    run = load_run(_folder(tmp_path, "plain"))
    summary = run.model.to_json()  # the file's keys, as the report read them
    assert "reasoning" not in summary and not summary["cancelled"]
    page = build_report([run])
    assert "Modern traffic" not in page and "traffic-" not in page
    option = charts.latency_vs_load([run], "ttft")
    assert option is not None and not any("visible" in s["name"] for s in option["series"])


def test_tool_calls_in_the_modern_traffic_table(tmp_path: Path) -> None:
    rows = []
    for i in range(20):
        first = 0.1 + 0.005 * i
        rows.append(
            {
                "request_id": str(i), "start_time": T0 + i, "outcome": "ok", "ttft": None, "e2e": first + 0.3,
                "itl": [], "completion_tokens": 12, "token_source": "usage", "finish_reason": "tool_calls",
                "tools_offered": True, "tool_calls": 1, "time_to_first_tool_call": first,
                "time_to_tool_args_complete": first + 0.25, "tool_args_json_ok": i != 7, "warmup": False,
            }
        )  # fmt: skip
    summary = summarize(rows, 20.0)
    summary["config"] = {"model": "m", "start_time": T0, "stop_time": T0 + 20, "options": {}}
    folder = tmp_path / "tools"
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    page = build_report([load_run(folder)])
    assert "Modern traffic" in page
    s = summary
    assert _rows_of(page, "traffic-tools") == [
        [label, *(_f(s[f"p{q}_{key}_ms"]) for q in (50, 90, 95, 99))]
        for label, key in (
            ("first tool call", "time_to_first_tool_call"),
            ("tool arguments complete", "time_to_tool_args_complete"),
        )
    ]
    assert "answered with a tool call: 20 (20 calls); arguments parse as JSON: 95.0 %" in page
