"""One measurement, one answer (issue 22): every quantity a run shows in two places is one number.

Real headless runs against the simulator, a few seconds each; each test reads the same quantity
where the run shows it (``summary.json`` and its stages, ``search.json``, the end-of-run text,
``llm-locust summarize``'s rebuilt summary) and checks the views agree exactly:

- a ramp with a warm-up: the run's rates are its measured requests over its measured windows,
  the same as its stages' (they were diluted by the warm-up's time);
- the same folder rebuilt by ``summarize``: every number of the run's summary, the concurrency
  block included (``peak_users`` came back 0);
- an open-loop run and a distributed ramp, each with a warm-up: the rates against the stages,
  the exporter's final totals (``metrics_final.prom``, as ``/llm/stats`` counts them: every
  record) against the summary's ``records`` block;
- ``/llm/stats`` after a ramp with a warm-up: its result, live totals and stage rows against the
  summary;
- a capacity search whose client is paused (SIGSTOP) while a step runs: each step's numbers as
  the search judged them and as the stage table shows them, visible TTFT and TTFT (the search
  counted the stalled requests' latencies its stage left out; visible TTFT kept them too).
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from llm_locust.live import catalog as metrics
from tests.integration.test_exporter import parse, value
from tests.locustproc import (
    LocustResult,
    expect_exit,
    llm_locust_cli,
    locust_command,
    run_distributed,
    run_locust,
    run_paused,
)
from tests.promproc import http_get
from tests.simproc import running_sim
from tests.unit.results.test_summary import VLLM_KEYS
from tests.webproc import web_ui

SIM = ("--ttft-ms", "50", "--tpot-ms", "20", "--output-tokens", "12")
LIGHT = ("--prompt-tokens", "16", "--max-tokens", "12")
LATENCY_STATS = ("mean", "median", "p90", "p95", "p99")
#: Numbers of the run-level summary (and of each stage) that two views must agree on.
RUN_KEYS = (
    *VLLM_KEYS,
    "incomplete",
    "cancelled",
    "client_stalled",
    *(f"{s}_{m}_ms" for s in LATENCY_STATS for m in ("ttft", "tpot", "itl", "e2el", "ttft_visible")),
)
STAGE_KEYS = ("completed", "failed", "request_throughput", "output_throughput", "p95_ttft_ms", "p95_e2el_ms")


def _window_s(stage: dict[str, Any]) -> float:
    return stage["window"]["end"] - stage["window"]["start"]


def _printed(text: str, label: str) -> str:
    """The value the end-of-run table prints after ``label``."""
    match = re.search(rf"^{re.escape(label)}\s+(\S+)$", text, re.M)
    assert match, f"{label!r} not in the end-of-run text"
    return match.group(1)


def _locust_rps(text: str) -> float:
    """The req/s of the Aggregated row of Locust's own request table at the end (it prints the
    table every few seconds while the test runs too)."""
    rows = re.findall(r"^\s+Aggregated\s+\d+\s+\d+\([\d.]+%\)\s+\|[^|]+\|\s+([\d.]+)", text, re.M)
    assert rows, "no Aggregated row of Locust's table"
    return float(rows[-1])


@pytest.fixture(scope="module")
def warm_ramp(tmp_path_factory: pytest.TempPathFactory) -> LocustResult:
    """A two-stage ramp, 4 s a stage, the first second of each a warm-up."""
    results = tmp_path_factory.mktemp("ramp") / "r"
    with running_sim(*SIM) as url:
        res = run_locust(url, *LIGHT, "--ramp", "2,4", "--step-time", "4s", "--warmup", "1s",
                         results_dir=results, users=None, run_time=None)  # fmt: skip
    expect_exit(res, 0)
    return res


@pytest.mark.slow
@pytest.mark.host_timing  # Locust's own rate comes near ours only when the client keeps time
def test_a_ramps_rates_are_its_measured_requests_over_its_measured_windows(warm_ramp: LocustResult) -> None:
    """Seen: a ramp reported 1.53 req/s where its measured windows ran at 2.04 (Locust's table
    too): the run's rates divided by the warm-up's time as well."""
    summary, stages = warm_ramp.summary, warm_ramp.summary["stages"]
    seconds = sum(_window_s(s) for s in stages)
    completed = sum(s["completed"] for s in stages)
    tokens = sum(s["total_output_tokens"] for s in stages)
    assert summary["excluded"]["warmup"] > 0  # the warm-up left requests out
    assert summary["completed"] == completed > 0
    assert summary["total_output_tokens"] == tokens
    assert summary["request_throughput"] == pytest.approx(completed / seconds, rel=1e-12)
    assert summary["output_throughput"] == pytest.approx(tokens / seconds, rel=1e-12)
    for stage in stages:  # each stage's own rate is over its own window
        assert stage["request_throughput"] == pytest.approx(stage["completed"] / _window_s(stage), rel=1e-12)
    span = summary["measured_span"]  # and the summary names the span
    assert span["seconds"] == pytest.approx(seconds, rel=1e-12) and summary["duration"] == span["seconds"]
    assert span["start"] == stages[0]["window"]["start"] and span["end"] == stages[-1]["window"]["end"]
    assert span["excluded_s"] == pytest.approx(span["test_seconds"] - seconds, abs=1e-9)
    assert span["excluded_s"] >= 2.0  # the two warm-ups at least
    # Locust's own table counts every request over the whole test: at a steady rate per stage,
    # warm-ups and all, it comes near the rate of the measured windows (it was 25 % above ours)
    locust = _locust_rps(warm_ramp.stdout + warm_ramp.stderr)
    assert summary["request_throughput"] == pytest.approx(locust, rel=0.12), (
        summary["request_throughput"],
        locust,
    )
    text = warm_ramp.stdout  # the end-of-run text prints the summary's numbers
    assert _printed(text, "Request throughput (req/s):") == f"{summary['request_throughput']:.2f}"
    assert _printed(text, "Output token throughput (tok/s):") == f"{summary['output_throughput']:.2f}"
    assert _printed(text, "Successful requests:") == str(summary["completed"])
    assert _printed(text, "Duration (s):") == f"{summary['duration']:.2f}"


def _rebuilt(res: LocustResult, tmp_path: Path) -> dict[str, Any]:
    """``llm-locust summarize`` on a copy of ``res``'s folder without its summary: it exits as
    the run did (its answer is the run's: a search withheld on a busy host is withheld again, 6)."""
    assert res.results_dir is not None
    folder = tmp_path / "copy"
    shutil.copytree(res.results_dir, folder)
    (folder / "summary.json").unlink()
    expect_exit(llm_locust_cli("summarize", str(folder), timeout=120), res.returncode)
    return json.loads((folder / "summary.json").read_text())


def _same_summary(rebuilt: dict[str, Any], ran: dict[str, Any]) -> None:
    """Every number the run's summary and the rebuilt one both show is the same."""
    assert rebuilt["concurrency"] == ran["concurrency"]
    assert {k: rebuilt.get(k) for k in RUN_KEYS} == {k: ran.get(k) for k in RUN_KEYS}
    for key in ("excluded", "measured_span", "records", "slo", "windows", "drift", "client_saturated"):
        assert rebuilt.get(key) == ran.get(key), key
    assert len(rebuilt.get("stages") or ()) == len(ran.get("stages") or ())
    for mine, theirs in zip(rebuilt.get("stages") or (), ran.get("stages") or (), strict=True):
        for key in (*STAGE_KEYS, "window", "littles_law", "excluded", "verdict", "peak_users"):
            assert mine.get(key) == theirs.get(key), (mine["label"], key)


@pytest.mark.slow
def test_summarize_rebuilds_every_number_of_the_runs_summary(warm_ramp: LocustResult, tmp_path: Path) -> None:
    """Seen: ``summarize`` rebuilt ``concurrency.peak_users`` as 0 (the run wrote 8)."""
    assert warm_ramp.summary["concurrency"]["peak_users"] == 4
    _same_summary(_rebuilt(warm_ramp, tmp_path), warm_ramp.summary)


@pytest.mark.slow
def test_a_plain_run_one_number_per_quantity(tmp_path: Path) -> None:
    """A plain run (``-u 3 -t 4s``, a think time): its summary against ``summarize``'s (the peak
    users and the closed-loop law's think time were lost), the exporter's final totals and the
    end-of-run text."""
    results = tmp_path / "r"
    with running_sim(*SIM) as url:
        res = run_locust(url, *LIGHT, "--think-time", "0.2s", results_dir=results, users=3, run_time="4s")
    expect_exit(res, 0)
    summary = res.summary
    assert summary["concurrency"]["peak_users"] == 3
    assert summary["concurrency"]["closed_loop_expected_in_flight"] is not None
    _same_summary(_rebuilt(res, tmp_path), summary)
    _final_equals_records(results, summary)
    counted = {
        "ok": summary["completed"],
        "incomplete": summary["incomplete"],
        "cancelled": summary["cancelled"],
    }
    assert summary["records"]["requests"] == {**summary["errors"], **{k: v for k, v in counted.items() if v}}
    assert _printed(res.stdout, "Request throughput (req/s):") == f"{summary['request_throughput']:.2f}"
    assert _printed(res.stdout, "Successful requests:") == str(summary["completed"])


@pytest.fixture(scope="module")
def paused_search(tmp_path_factory: pytest.TempPathFactory) -> tuple[LocustResult, float, float]:
    """A search from 2 to 4 users, 4-s steps, its process paused for 2 s during its first step;
    returns the run and when the pause began and ended."""
    results = tmp_path_factory.mktemp("search") / "r"
    with running_sim(*SIM) as url:
        cmd = locust_command(url, None, None, None, "30", results, *LIGHT, "--search", "users",
                             "--search-min", "2", "--search-max", "4", "--step-time", "4s",
                             "--slo", "success>=50%", "--only-summary")  # fmt: skip
        # 4 records written: the first step runs; 0.2 s on, every user is inside a request (~0.3 s)
        res, paused, resumed = run_paused(cmd, results, rows=4, settle_s=0.2, pause_s=2.0)
    assert "Traceback" not in res.stdout + res.stderr, res.stderr[-3000:]
    return res, paused, resumed


@pytest.mark.slow
def test_a_search_step_and_its_stage_are_one_number_with_a_paused_client(
    paused_search: tuple[LocustResult, float, float],
) -> None:
    """Seen: the search judged B at 52 users on E2E P95 35.1 s (fail), the stage table on 22.2 s
    (pass), same summary.json: the search counted the latencies of client-stalled requests."""
    res, paused, resumed = paused_search
    summary = res.summary
    steps, stages = summary["search"]["steps"], {s["index"]: s for s in summary["stages"]}
    stalled = [r for r in res.rows if r["outcome"] == "ok" and r.get("client_stall_s")]
    judged = [r for r in stalled if r["stage"] == steps[0]["index"] and not r["warmup"]]
    assert judged, "the pause missed the first step's window"  # the scenario itself
    assert any(r["start_time"] < resumed and r["start_time"] + r["e2e"] > paused for r in judged)
    for step in steps:
        stage = stages[step["index"]]
        for key in (*STAGE_KEYS, "median_tpot_ms"):
            assert step[key] == stage[key], (step["label"], key, step[key], stage[key])
    # the stage's E2E P95 is over the requests the client did not stall inside
    first = stages[steps[0]["index"]]
    timed = [r["e2e"] * 1000 for r in res.rows if r["stage"] == first["index"] and r["outcome"] == "ok"
             and not r["warmup"] and not r.get("client_stall_s") and not r.get("rampup")]  # fmt: skip
    assert first["p95_e2el_ms"] == pytest.approx(float(np.percentile(timed, 95)), rel=1e-12)
    log = json.loads((res.results_dir / "search.json").read_text())  # type: ignore[operator]
    assert [(s["index"], s["verdict"], s["requests"]) for s in log["steps"]] == [
        (p["index"], p["verdict"], p["requests"]) for p in steps
    ]


@pytest.mark.slow
def test_visible_ttft_is_ttft_without_reasoning_with_a_paused_client(
    paused_search: tuple[LocustResult, float, float],
) -> None:
    """Seen: no reasoning model, ``p95_ttft_ms`` 180.6 but ``p95_ttft_visible_ms`` 306.1 over the
    same records: visible TTFT kept the requests the client stalled inside."""
    summary = paused_search[0].summary
    assert summary["client_stalled"] > 0
    for stat in LATENCY_STATS:
        assert summary[f"{stat}_ttft_visible_ms"] == summary[f"{stat}_ttft_ms"], stat
    for stage in summary["stages"]:
        assert stage["p95_ttft_visible_ms"] == stage["p95_ttft_ms"], stage["label"]


def _final_equals_records(results: Path, summary: dict[str, Any]) -> None:
    """``metrics_final.prom`` (the exporter's, and ``/llm/stats``'s, totals: every record) against
    the summary's ``records`` block, and both against ``requests.jsonl`` counted here."""
    final = parse((results / "metrics_final.prom").read_text())
    records = summary["records"]
    exported = {dict(lb)["outcome"]: v for (n, lb), v in final.items() if n == "llm_locust_requests_total"}
    assert exported == records["requests"]
    assert value(final, "llm_locust_generation_tokens_total") == records["generation_tokens"]
    assert value(final, "llm_locust_prompt_tokens_total") == records["prompt_tokens"]
    assert value(final, f"{metrics.TIME_TO_FIRST_TOKEN.name}_count") == records["timed"]
    rows = [json.loads(line) for line in (results / "requests.jsonl").open()]
    assert records["total"] == len(rows)
    ok = [r for r in rows if r["outcome"] == "ok"]
    assert records["generation_tokens"] == sum(r["completion_tokens"] for r in ok)
    assert records["timed"] == sum(1 for r in ok if not r.get("client_stall_s"))


def _rates_are_the_stages(summary: dict[str, Any]) -> None:
    """The run's rates: its stages' measured requests and tokens over their measured windows."""
    stages = summary["stages"]
    seconds = sum(_window_s(s) for s in stages)
    assert summary["completed"] == sum(s["completed"] for s in stages) > 0
    assert summary["request_throughput"] == pytest.approx(summary["completed"] / seconds, rel=1e-12)
    tokens = sum(s["total_output_tokens"] for s in stages)
    assert summary["output_throughput"] == pytest.approx(tokens / seconds, rel=1e-12)


@pytest.mark.slow
def test_an_open_loop_run_with_a_warmup_one_number_per_quantity(tmp_path: Path) -> None:
    """An open-loop run (``--request-rate``) with a warm-up: the rates against its stage, the
    exporter's final totals against the summary's records (the warm-up's requests counted there,
    left out of the statistics)."""
    results = tmp_path / "r"
    with running_sim(*SIM) as url:
        res = run_locust(url, *LIGHT, "--request-rate", "8", "--warmup", "1s", results_dir=results,
                         users=None, run_time="4s")  # fmt: skip
    expect_exit(res, 0)
    summary = res.summary
    assert summary["excluded"]["warmup"] > 0
    _rates_are_the_stages(summary)
    _final_equals_records(results, summary)
    assert (
        summary["records"]["total"]
        == summary["completed"] + summary["failed"] + sum(summary["excluded"].values()) + summary["cancelled"]
    )


@pytest.mark.slow
def test_a_distributed_ramp_with_a_warmup_one_number_per_quantity(tmp_path: Path) -> None:
    """A master and two workers: the run's rates against its stages, the master's exporter
    against the summary's records, the end-of-run text against the summary."""
    results = tmp_path / "r"
    with running_sim(*SIM) as url:
        res = run_distributed(url, *LIGHT, "--ramp", "2,4", "--step-time", "4s", "--warmup", "1s",
                              results_dir=results, workers=2, users=4, run_time="8s")  # fmt: skip
    expect_exit(res, 0)
    summary = res.summary
    assert summary["excluded"]["warmup"] > 0
    _rates_are_the_stages(summary)
    _final_equals_records(results, summary)
    assert _printed(res.stdout, "Request throughput (req/s):") == f"{summary['request_throughput']:.2f}"


@pytest.mark.slow
def test_llm_stats_after_a_ramp_shows_the_summarys_numbers(tmp_path: Path) -> None:
    """``/llm/stats`` once a ramp with a warm-up ended: its result is the summary's, its live
    totals and TTFT count are the summary's ``records`` (every record), its stage rows the stages'."""
    results = tmp_path / "r"
    with web_ui(tmp_path, SIM, *LIGHT, "--autostart", "--ramp", "2,4", "--step-time", "3s", "--warmup", "1s",
                results=results) as ui:  # fmt: skip
        deadline, stats = time.monotonic() + 60, {}
        while not stats.get("result"):
            assert time.monotonic() < deadline, f"no result on /llm/stats: {stats.get('run')}"
            time.sleep(0.5)
            stats = json.loads(http_get(f"{ui.base}/llm/stats", timeout=5))
    summary = json.loads((results / "summary.json").read_text())
    result, snapshot = stats["result"], stats["snapshot"]
    assert summary["excluded"]["warmup"] > 0
    for key in (
        "completed",
        "failed",
        "duration",
        "request_throughput",
        "output_throughput",
        "measured_span",
    ):
        assert result[key] == summary[key], key
    assert result["records"] == summary["records"]
    records = summary["records"]
    for key in (
        "requests",
        "completed",
        "failed",
        "incomplete",
        "cancelled",
        "prompt_tokens",
        "generation_tokens",
    ):
        assert snapshot["totals"][key] == records[key], key
    assert snapshot["latency"]["ttft"]["count"] == records["timed"]
    assert [(s["label"], s["completed"], s["request_throughput"]) for s in result["stages"]] == [
        (s["label"], s["completed"], s["request_throughput"]) for s in summary["stages"]
    ]


@pytest.mark.slow
def test_summarize_rebuilds_the_paused_search(
    paused_search: tuple[LocustResult, float, float], tmp_path: Path
) -> None:
    """The paused search's folder rebuilt by ``summarize``: the same numbers, probes and answer."""
    res = paused_search[0]
    rebuilt = _rebuilt(res, tmp_path)
    _same_summary(rebuilt, res.summary)
    search = dict(rebuilt["search"])
    assert search.pop("rebuilt") == {"from": "search.json", "mismatches": []}
    assert search == res.summary["search"]
