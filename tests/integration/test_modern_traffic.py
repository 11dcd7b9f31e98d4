"""Issue 16 against the real simulator: reasoning phases, prefix-cache hits, cancelled requests.

Each test runs a real ``locust`` (or a master and workers) against ``llm-locust sim`` and checks
numbers that follow from the simulator's parameters.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

from tests.locustproc import expect_exit, run_distributed, run_locust
from tests.simclient import metric
from tests.simproc import running_sim

pytestmark = pytest.mark.slow


def _prom(directory: Path, name: str) -> float:
    text = (directory / "metrics_final.prom").read_text()
    match = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    assert match, f"{name} not in metrics_final.prom"
    return float(match.group(1))


def test_reasoning_model_two_clocks_and_token_split(tmp_path: Path) -> None:
    # fixed mode: first token at 100 ms, then one token every 10 ms; 15 reasoning tokens
    # first, so the first content token comes 15 tokens later: 100 + 15 x 10 = 250 ms
    sim = ("--ttft-ms", "100", "--tpot-ms", "10", "--output-tokens", "40", "--reasoning-tokens", "15")
    with running_sim(*sim) as url:
        res = run_locust(
            url, "--prompt-tokens", "64", "--max-tokens", "40", results_dir=tmp_path / "r", run_time="6s"
        )
    out = res.stdout + res.stderr
    expect_exit(res, 0)
    s, rows = res.summary, res.rows
    assert s["failed"] == 0 and s["completed"] >= 8
    assert abs(s["median_ttft_ms"] - 100) <= 10, s["median_ttft_ms"]
    assert abs(s["median_ttft_visible_ms"] - 250) <= 12, s["median_ttft_visible_ms"]
    assert abs(s["median_tpot_ms"] - 10) <= 1.5, s["median_tpot_ms"]
    ok = [r for r in rows if r["outcome"] == "ok"]
    assert {(r["reasoning_tokens"], r["answer_tokens"], r["reasoning_token_source"]) for r in ok} == {
        (15, 25, "usage")
    }
    assert {r["reasoning_chunks"] for r in ok} == {15} and {r["first_visible_tokens"] for r in ok} == {1}
    block = s["reasoning"]
    assert block["with_reasoning"] == block["requests"] == s["completed"]
    assert block["p50_reasoning_tokens"] == 15 and block["p99_answer_tokens"] == 25
    assert block["sources"] == {"usage": s["completed"]} and block["first_chunk_batched"] == 0
    assert "Time to first visible token" in res.stdout and "Requests with reasoning:" in res.stdout
    assert "first content chunk carried" not in out
    # the exporter: both TTFT kinds and the reasoning tokens
    # (a request the client stalled inside counts, its latencies do not: as in the summary)
    d, timed = tmp_path / "r", s["completed"] - s["client_stalled"]
    assert _prom(d, "llm_locust_time_to_first_visible_token_seconds_count") == timed
    assert _prom(d, 'llm_locust_time_to_first_visible_token_seconds_bucket{le="0.25"}') < timed
    assert _prom(d, 'llm_locust_time_to_first_token_seconds_bucket{le="0.25"}') == timed
    assert _prom(d, "llm_locust_reasoning_tokens_total") == 15 * s["completed"]


def test_reasoning_without_usage_distributed(tmp_path: Path) -> None:
    # no usage asked for: the reasoning chunks are counted (and the record says so); a master
    # and two workers carry the new fields to one summary
    sim = ("--ttft-ms", "50", "--tpot-ms", "5", "--output-tokens", "30", "--reasoning-tokens", "50%")
    no_usage = '{"stream_options": {"include_usage": false}}'
    with running_sim(*sim, "--reasoning-field", "reasoning") as url:
        res = run_distributed(
            url, "--prompt-tokens", "32", "--max-tokens", "30", "--extra-body", no_usage,
            results_dir=tmp_path / "d", run_time="6s",
        )  # fmt: skip
    expect_exit(res, 0)
    s = res.summary
    assert s["completed"] >= 8 and s["failed"] == 0
    assert s["reasoning"]["sources"] == {"chunks": s["completed"]}
    assert s["reasoning"]["p50_reasoning_tokens"] == 15 and s["token_sources"] == {"chunks": s["completed"]}
    assert abs(s["median_ttft_visible_ms"] - (50 + 15 * 5)) <= 12


def test_prefix_cache_hits_per_stage_and_ttft_with_and_without(tmp_path: Path) -> None:
    # every prompt starts with the same 512-token system prompt (32 blocks of 16); prefill
    # costs 0.5 ms a token, so a miss prefills 1024 tokens (~512 ms) and a hit 512 (~256 ms).
    # One user at a time in stage 1: only the very first request misses.
    sim = ("--prefill-ms-per-token", "0.5", "--output-tokens", "4")
    workload = ("--prompt-tokens", "1024", "--max-tokens", "4", "--shared-prefix-fraction", "1")
    with running_sim(*sim) as url:
        res = run_locust(
            url, *workload, "--shared-prefix-tokens", "512", "--ramp", "1,2", "--step-time", "4s",
            results_dir=tmp_path / "c", run_time="8s", users=2,
        )  # fmt: skip
    expect_exit(res, 0)
    s, rows = res.summary, [r for r in res.rows if r["outcome"] == "ok"]
    assert {r["cached_tokens"] for r in rows} == {0, 512}
    assert [r["cached_tokens"] for r in sorted(rows, key=lambda r: r["start_time"])][:2] == [0, 512]
    misses = [r for r in rows if r["cached_tokens"] == 0]
    assert len(misses) == 1, [(r["stage"], r["cached_tokens"]) for r in rows]
    cache = s["prefix_cache"]
    measured = s["completed"]
    hits = measured - (1 if not misses[0].get("rampup") else 0)
    assert cache["requests_reporting"] == measured and cache["hits"] == hits
    assert cache["token_hit_ratio"] == pytest.approx(512 * hits / (1024 * measured))
    assert abs(s["median_ttft_cache_hit_ms"] - 256) <= 40, s["median_ttft_cache_hit_ms"]
    first, second = s["stages"]
    assert second["prefix_cache"]["hit_ratio"] == 1.0  # the prefix is cached by then
    assert first["prefix_cache"]["hits"] == first["prefix_cache"]["requests_reporting"] - 1
    miss = misses[0]  # the model: a miss prefills 1024 tokens (~512 ms)
    assert abs(miss["ttft"] * 1000 - 512) <= 40, miss["ttft"]
    # its latency counts as TTFT's does (issue 22: one rule): not when the client stalled inside it
    # (the process's first request often overlaps a start-up stall) or it was sent in the ramp-up
    timed = not miss["client_stall_s"] and not miss.get("rampup")
    assert first["median_ttft_cache_miss_ms"] == (miss["ttft"] * 1000 if timed else None)
    assert "users=2: prefix cache hit ratio 100.0% / 50.0% (requests / tokens)" in res.stdout
    assert "Hit ratio (requests / tokens):" in res.stdout
    assert _prom(tmp_path / "c", "llm_locust_prompt_cached_tokens_total") == 512 * (len(rows) - 1)


def test_cancelled_requests_are_counted_apart_and_the_server_frees_them(tmp_path: Path) -> None:
    # engine mode, 1 ms per prefill token and 20 ms decode steps, 200 output tokens: a request
    # abandoned after its first token leaves ~4 s early, and the simulator counts an abort
    sim = ("--decode-base-ms", "20", "--output-tokens", "200", "--max-num-seqs", "64")
    with running_sim(*sim) as url:
        res = run_distributed(
            url, "--prompt-tokens", "64", "--max-tokens", "200", "--cancel-rate", "0.5",
            "--cancel-after", "first-token", "--seed", "3",
            results_dir=tmp_path / "x", run_time="8s", users=6,
        )  # fmt: skip
        aborted = metric(url, "vllm:request_success_total", finished_reason="abort")
        finished = metric(url, "vllm:request_success_total", finished_reason="length")
    expect_exit(res, 0)
    s, rows = res.summary, res.rows
    cancelled = [r for r in rows if r["outcome"] == "cancelled"]
    ok = [r for r in rows if r["outcome"] == "ok"]
    assert s["cancelled"] == len(cancelled) >= 5 and s["completed"] == len(ok) >= 2
    assert s["failed"] == 0 and s["errors"] == {}
    assert 0.25 <= len(cancelled) / (len(cancelled) + len(ok)) <= 0.85
    # every abandoned stream was aborted on the server (so were any cut by the load's stop);
    # every finished one ran to its length, plus the preflight's one test stream
    assert aborted == len(cancelled) + s["incomplete"] and finished == len(ok) + 1
    for r in cancelled:  # partial marks: the first token, nothing after it
        assert r["ttft"] is not None and r["chunks"] == 1 and r["completion_tokens"] == 1
        assert r["e2e"] < 1.0 and r["finish_reason"] is None
    # the latency percentiles are those of the finished requests alone
    assert s["p50_e2el_ms"] > 2000 and min(r["e2e"] for r in ok) > 2.0
    assert "Cancelled by the client:" in res.stdout
    assert _prom(tmp_path / "x", 'llm_locust_requests_total{outcome="cancelled"}') == len(cancelled)
    assert (
        s["config"]["options"]["cancel_after"] == "first-token"
        and s["config"]["options"]["cancel_rate"] == 0.5
    )


@pytest.mark.host_timing  # a wave's drain within 10 ms of the model, its six sends within 50 ms
def test_bursts_fixed_mode_drain_times_follow_the_latency_model(tmp_path: Path) -> None:
    # no queue in fixed mode: every request's first token after 100 ms, its 20th after 290 ms,
    # so a wave's queue drains in ~0.1 s and the wave in ~0.29 s; waves at 1, 3 and 5 s
    sim = ("--ttft-ms", "100", "--tpot-ms", "10", "--output-tokens", "20")
    with running_sim(*sim) as url:
        res = run_locust(
            url, "--prompt-tokens", "32", "--max-tokens", "20", "--burst", "every=2s,size=6,start=1s,count=3",
            results_dir=tmp_path / "b", run_time="6s", users=2,
        )  # fmt: skip
    expect_exit(res, 0)
    s, rows = res.summary, res.rows
    burst = [r for r in rows if r.get("burst") is not None]
    assert sorted({r["burst"] for r in burst}) == [0, 1, 2] and len(burst) == 18
    block = s["bursts"]
    assert (block["waves"], block["requests"], block["completed"]) == (3, 18, 18)
    ats = [w["at"] for w in block["per_wave"]]
    assert [round(b - a, 3) for a, b in itertools.pairwise(ats)] == [2.0, 2.0]
    for wave in block["per_wave"]:
        assert 0.09 <= wave["queue_drain_s"] <= 0.14, wave
        assert 0.28 <= wave["drain_s"] <= 0.34, wave
        sends = [r["start_time"] for r in burst if r["burst"] == wave["wave"]]
        assert max(sends) - wave["at"] < 0.05  # synchronized: all six left at the wave's time
    assert abs(s["median_ttft_burst_ms"] - 100) <= 10 and abs(s["median_ttft_base_ms"] - 100) <= 10
    assert "send_lag" not in s and s.get("achieved_request_rate") is None  # still a closed-loop run
    assert "Queue drain mean / max (s):" in res.stdout
    assert s["config"]["options"]["burst"] == "every=2s,size=6,start=1s,count=3"


# serial: both waves inside a 7-s run of two workers that must connect in time, and a wave's drain
# is the simulator's 10-ms steps: beside the parallel part's workers it read 0.92 and 1.09 s
# against <= 0.9 (fresh-clone make tests of 2026-12-03 07:14 and 09:08 UTC)
@pytest.mark.serial
def test_bursts_distributed_queue_behind_a_small_batch(tmp_path: Path) -> None:
    # engine mode: 4 sequences at most, 20 decode steps of 10 ms each (0.2 s a request): a wave
    # of 12 needs at least 3 rounds of 4 (4 of 3 while the base user holds a slot), so its last
    # request waits 2 to 3 rounds (0.4 to 0.6 s) for its first token, far above the base TTFT
    sim = ("--max-num-seqs", "4", "--decode-base-ms", "10", "--decode-ms-per-seq", "0")
    sim += ("--prefill-ms-per-token", "0", "--output-tokens", "20")
    with running_sim(*sim) as url:
        res = run_distributed(
            url, "--prompt-tokens", "16", "--max-tokens", "20",
            "--burst", "every=3s,size=12,start=1s,count=2",
            results_dir=tmp_path / "d", run_time="7s", users=1,
        )  # fmt: skip
    expect_exit(res, 0)
    s = res.summary
    block = s["bursts"]
    assert (block["waves"], block["requests"], block["completed"]) == (2, 24, 24)
    assert {r["worker"] for r in res.rows if r.get("burst") is not None} != {None}
    assert len({r["worker"] for r in res.rows if r.get("burst") is not None}) == 2  # both sent a share
    for wave in block["per_wave"]:
        assert wave["sent"] == 12 and 0.39 <= wave["queue_drain_s"] <= 0.9, wave
    assert s["median_ttft_burst_ms"] > 3 * s["median_ttft_base_ms"]


def test_cancel_and_burst_options_from_the_web_form(tmp_path: Path) -> None:
    from tests.webproc import form_fields, post, wait_for, web_ui

    results = tmp_path / "w"
    sim = ("--ttft-ms", "50", "--tpot-ms", "10", "--output-tokens", "40")
    with web_ui(tmp_path, sim, results=results) as ui:
        fields = form_fields(ui.base)
        assert {"cancel_rate", "cancel_after", "burst"} <= set(fields)
        for name, value, line in (
            ("cancel_after", "soon", "--cancel-after 'soon': expected first-token"),
            ("burst", "every=1s", "--burst 'every=1s': missing size"),
            ("cancel_rate", "2", "--cancel-rate '2': "),
        ):
            answer = post(ui.base, {**fields, name: value})
            assert answer["success"] is False and answer["message"].startswith(line), answer
        light = {"prompt_tokens": "16", "max_tokens": "40", "user_count": "2", "spawn_rate": "2"}
        modern = {"cancel_rate": "0.5", "cancel_after": "5tokens", "burst": "every=1s,size=3,start=0.5s"}
        assert post(ui.base, {**fields, **light, **modern, "run_time": "4s"})["success"] is True
        summary = wait_for(results / "summary.json", 60)
    expect_exit(ui.proc, 0, ui.log())  # SIGTERM after the run ended: 0
    assert summary["cancelled"] >= 2 and summary["failed"] == 0
    assert summary["bursts"]["waves"] >= 2 and summary["bursts"]["per_wave"][0]["sent"] == 3
    options = summary["config"]["options"]
    assert (options["cancel_rate"], options["cancel_after"], options["burst"]) == (
        0.5,
        "5tokens",
        modern["burst"],
    )
    rows = [json.loads(line) for line in (results / "requests.jsonl").read_text().splitlines()]
    assert all(r["chunks"] == 5 for r in rows if r["outcome"] == "cancelled")


def test_gpu_memory_from_a_dcgm_exporter_beside_the_engine(tmp_path: Path) -> None:
    from tests.dcgm_exporter import running_dcgm

    # two GPUs: 50 % and 95 % of 80 GiB used, 30 % and 80 % busy
    gpus = [(40960, 40960, 30), (77824, 4096, 80)]
    slo = "success>=99%,gpu_mem_max<=90%,gpu_util_mean<=85%,kv_cache_usage_max<=95%"
    with running_dcgm(gpus) as dcgm, running_sim("--ttft-ms", "20", "--tpot-ms", "5") as url:
        res = run_distributed(  # the master scrapes; its two workers send
            url, "--prompt-tokens", "16", "--max-tokens", "8", "--slo", slo,
            "--server-metrics", f"{url}/metrics,{dcgm}", "--server-metrics-interval", "0.5",
            results_dir=tmp_path / "g", run_time="5s", users=2,
        )  # fmt: skip
    out = res.stdout + res.stderr
    expect_exit(res, 3)  # the GPU memory objective fails
    s, d = res.summary, tmp_path / "g"
    lines = {o["name"]: o for o in s["slo"]["objectives"]}
    assert (
        lines["gpu_mem_max"]["measured"] == pytest.approx(77824 / 81920)
        and not lines["gpu_mem_max"]["passed"]
    )
    assert lines["gpu_util_mean"]["measured"] == pytest.approx(0.8) and lines["gpu_util_mean"]["passed"]
    assert lines["kv_cache_usage_max"]["passed"] and lines["success"]["passed"]  # the engine's, same scrapes
    names = {json.loads(x)["name"] for x in (d / "server_metrics.jsonl").read_text().splitlines()}
    assert {"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "vllm:kv_cache_usage_perc"} <= names
    windows = (d / "windows.csv").read_text().splitlines()
    header = windows[0].split(",")
    assert {"gpu_mem_max", "gpu_util_mean", "kv_cache_usage_max"} <= set(header)
    full = [dict(zip(header, row.split(","), strict=True)) for row in windows[1:]]
    assert any(w["gpu_mem_max"] and float(w["gpu_mem_max"]) == pytest.approx(0.95) for w in full)
    assert _prom(d, "llm_locust_server_gpu_memory_usage") == pytest.approx(0.95)
    assert _prom(d, "llm_locust_server_gpu_memory_used_bytes") == (40960 + 77824) * 2**20
    assert _prom(d, "llm_locust_server_gpu_utilization") == pytest.approx(0.8)
    assert re.search(r"gpu_mem_max<=90%\s+95\.0+% FAIL", out), out[-3000:]
    assert "Server: GPU memory and utilisation (DCGM)" in (d / "report.html").read_text()


def test_every_request_cancelled_is_a_run_not_a_failure(tmp_path: Path) -> None:
    # --cancel-rate 1: the preflight's test stream is never abandoned (it was: the target was
    # refused), and a run whose every request is cancelled is not stopped as all-failed
    with running_sim("--ttft-ms", "20", "--tpot-ms", "20", "--output-tokens", "50") as url:
        res = run_locust(
            url, "--prompt-tokens", "16", "--max-tokens", "50",
            "--cancel-rate", "1", "--cancel-after", "2tokens",
            results_dir=tmp_path / "c", run_time="12s", users=2,
        )  # fmt: skip
    out = res.stdout + res.stderr
    expect_exit(res, 0)
    assert "every request has failed" not in out
    s = res.summary
    assert s["completed"] == 0 and s["failed"] == 0 and s["cancelled"] >= 20 and s["errors"] == {}
    assert {r["chunks"] for r in res.rows if r["outcome"] == "cancelled"} == {2}
