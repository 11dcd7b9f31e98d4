"""Issue 28 §1 against the real simulator: streamed tool calls timed on its known schedule.

Fixed mode: the first token at ``--ttft-ms``, then one every ``--tpot-ms``; a tool call's
arguments are ``--tool-args-tokens`` pieces, one a token, so the first tool delta comes at the
prefill time and the last argument piece ``N - 1`` decode steps later.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tests.locustproc import expect_exit, run_distributed, run_locust
from tests.simproc import running_sim

pytestmark = pytest.mark.slow


def _prom(text: str, name: str) -> float:
    match = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    assert match, f"{name} not in metrics_final.prom"
    return float(match.group(1))


def _timed(row: dict) -> bool:
    """The rows every latency statistic covers, written out here (not imported)."""
    return (
        row["outcome"] == "ok"
        and not row.get("warmup")
        and not row.get("rampup")
        and not row.get("outside")
        and not row.get("client_stall_s")
    )


@pytest.mark.host_timing  # tool-call times within 10 ms of the simulator's schedule
def test_tool_calls_on_the_simulators_schedule(tmp_path: Path) -> None:
    ttft, tpot, n = 100, 10, 12
    sim = (
        "--ttft-ms",
        str(ttft),
        "--tpot-ms",
        str(tpot),
        "--tool-call-rate",
        "1",
        "--tool-args-tokens",
        str(n),
    )
    with running_sim(*sim) as url:
        res = run_locust(
            url, "--prompt-tokens", "64", "--max-tokens", "40", "--tools", "builtin",
            results_dir=tmp_path / "t", run_time="6s",
        )  # fmt: skip
    expect_exit(res, 0)
    s = res.summary
    rows = [json.loads(line) for line in (tmp_path / "t" / "requests.jsonl").read_text().splitlines()]
    ok = [r for r in rows if r["outcome"] == "ok"]
    assert s["failed"] == 0 and len(ok) >= 8
    for row in ok:
        assert row["tools_offered"] and row["tool_calls"] == 1 and row["tool_args_json_ok"] is True
        assert row["finish_reason"] == "tool_calls" and row["completion_tokens"] == n
        assert row["ttft"] is None and row["chunks"] == 0  # a tool call is not content
    timed = [r for r in ok if _timed(r)]
    assert len(timed) >= 8
    first = np.array([r["time_to_first_tool_call"] for r in timed]) * 1000
    done = np.array([r["time_to_tool_args_complete"] for r in timed]) * 1000
    assert abs(np.median(first) - ttft) <= 10, np.median(first)
    assert abs(np.median(done) - (ttft + (n - 1) * tpot)) <= 12, np.median(done)
    assert abs(np.median(done - first) - (n - 1) * tpot) <= 5
    for q in (50, 90, 99):
        assert s[f"p{q}_time_to_first_tool_call_ms"] == pytest.approx(np.percentile(first, q))
        assert s[f"p{q}_time_to_tool_args_complete_ms"] == pytest.approx(np.percentile(done, q))
    block = s["tools"]
    assert (
        block["requests_offered"]
        == block["requests_with_tool_calls"]
        == block["tool_calls"]
        == s["completed"]
    )
    assert block["args_json_ok_share"] == 1.0
    assert "Tool calls" in res.stdout and "First tool call p50 / p99 (ms):" in res.stdout
    # the exporter's series: every successful, unstalled record (a series counts its warm-up too)
    series = sum(1 for r in ok if not r.get("client_stall_s"))
    prom = (tmp_path / "t" / "metrics_final.prom").read_text()
    assert _prom(prom, "llm_locust_time_to_first_tool_call_seconds_count") == series
    assert _prom(prom, 'llm_locust_time_to_first_tool_call_seconds_bucket{le="0.08"}') == 0
    assert _prom(prom, "llm_locust_time_to_tool_args_complete_seconds_count") == series
    assert _prom(prom, 'llm_locust_time_to_first_tool_call_seconds_bucket{le="0.25"}') == series
    assert _prom(prom, 'llm_locust_time_to_tool_args_complete_seconds_bucket{le="0.3"}') == series
    assert _prom(prom, "llm_locust_time_to_first_token_seconds_count") == 0  # no content token


def test_a_share_of_requests_offers_tools_and_the_rest_answer_text(tmp_path: Path) -> None:
    sim = ("--ttft-ms", "50", "--tpot-ms", "5", "--tool-call-rate", "1", "--tool-args-tokens", "6")
    with running_sim(*sim) as url:
        res = run_locust(
            url, "--prompt-tokens", "32", "--max-tokens", "8", "--tools", "builtin", "--tool-share", "0.5",
            results_dir=tmp_path / "h", run_time="4s",
        )  # fmt: skip
    expect_exit(res, 0)
    ok = [r for r in res.rows if r["outcome"] == "ok"]
    offered = [r for r in ok if r["tools_offered"]]
    assert len(ok) >= 8 and abs(len(offered) - len(ok) / 2) <= 1
    assert all(r["tool_calls"] == 1 and r["ttft"] is None for r in offered)
    plain = [r for r in ok if not r["tools_offered"]]
    assert all(r["tool_calls"] == 0 and r["ttft"] is not None for r in plain)
    assert res.summary["tools"]["requests_offered"] <= len(offered)


def test_tool_calls_distributed_reach_the_masters_summary(tmp_path: Path) -> None:
    # a master and two workers: each worker offers tools, the rows and the exporter series meet
    sim = ("--ttft-ms", "60", "--tpot-ms", "5", "--tool-call-rate", "1", "--tool-args-tokens", "9")
    with running_sim(*sim) as url:
        res = run_distributed(
            url, "--prompt-tokens", "32", "--max-tokens", "20", "--tools", "builtin",
            results_dir=tmp_path / "d", run_time="6s",
        )  # fmt: skip
    expect_exit(res, 0)
    s = res.summary
    ok = [r for r in res.rows if r["outcome"] == "ok"]
    assert s["completed"] >= 8 and s["failed"] == 0
    assert len({r["worker"] for r in ok}) == 2
    assert all(r["tool_calls"] == 1 and r["tool_args_json_ok"] for r in ok)
    timed = np.array([r["time_to_tool_args_complete"] for r in ok if _timed(r)]) * 1000
    assert s["p50_time_to_tool_args_complete_ms"] == pytest.approx(np.percentile(timed, 50))
    assert abs(np.median(timed) - (60 + 8 * 5)) <= 12
    assert s["tools"]["requests_with_tool_calls"] == s["completed"]
