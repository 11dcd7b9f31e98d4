"""Deployments and replicas as a real process: ``--explain``, derived timing on the wire,
several engines on several ports, and which mode a command line means."""

from __future__ import annotations

import itertools
import json
import re
import statistics
import subprocess
import sys

import pytest

from llm_locust.sim.deploy import GPUS, MODELS, Deployment
from tests.simclient import chat_body, connect, content_events, metric, request, send, wait_until
from tests.simproc import running_sim


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "llm_locust.sim", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


def test_explain_prints_the_derived_numbers_and_exits_0() -> None:
    res = _cli("--gpus", "4", "--tp", "4", "--model", "70b", "--explain")
    assert res.returncode == 0 and res.stderr == "" and "Traceback" not in res.stdout
    n = Deployment(GPUS["h100"], MODELS["70b"], 4).numbers()
    out = res.stdout
    assert out.startswith("rehearsal model, not a prediction")
    assert f"KV cache: {n['kv_tokens']:,} tokens" in out
    assert f"max batch: {n['max_batch']:,} sequences" in out
    assert f"{n['decode_ms_batch_1']:.1f} ms at batch 1, {n['decode_ms_max_batch']:.1f} ms" in out
    assert f"prefill: {n['prefill_tokens_per_s']:,.0f} tokens/s" in out


def test_help_says_rehearsal_not_prediction() -> None:
    res = _cli("--help")
    assert res.returncode == 0 and "Traceback" not in res.stderr
    text = " ".join(res.stdout.split())
    assert "rehearsal models, not predictions" in text and "--gpus" in text and "--replicas" in text


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (("--mode", "fixed", "--max-num-seqs", "8"), "--max-num-seqs"),
        (("--max-num-seqs", "8", "--ttft-ms", "5"), "--ttft-ms"),
        (("--gpus", "4", "--model", "70b", "--kv-cache-tokens", "5"), "--kv-cache-tokens"),
        (("--gpus", "8", "--tp", "4", "--model", "70b"), "--gpus"),
        (("--gpus", "2", "--model", "70b"), "--max-model-len"),  # fits, but only 19k tokens of KV
        (("--gpus", "1", "--model", "70b"), "--gpus"),
        (("--gpus", "4", "--model", "mystery"), "--model"),
        (("--gpu", "tpu"), "--gpu"),
        (("--reasoning-tokens", "120%"), "--reasoning-tokens"),
        (("--retry-after", "soon"), "--retry-after"),
        (("--speedup", "0"), "--speedup"),
    ],
)
def test_bad_combination_exits_2_with_one_line(args: tuple[str, ...], flag: str) -> None:
    res = _cli("--port", "0", *args)
    assert res.returncode == 2 and res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and f"argument {flag}" in lines[0] and "Traceback" not in res.stderr, res.stderr


def test_engine_only_option_alone_runs_the_engine() -> None:
    """Issue 9: ``--max-num-seqs 1`` without ``--mode`` used to run fixed mode silently."""
    with running_sim("--max-num-seqs", "1", "--decode-base-ms", "20") as url:
        socks = [connect(url) for _ in range(2)]
        try:
            for sock in socks:
                send(sock, "POST", "/v1/chat/completions", chat_body(200, stream=True))
            wait_until(lambda: metric(url, "vllm:num_requests_waiting") == 1, what="one queued")
            assert metric(url, "vllm:num_requests_running") == 1
            assert metric(url, "llm_sim_info", mode="engine") == 1
        finally:
            for sock in socks:
                sock.close()


def test_deployment_decodes_at_the_derived_step_time() -> None:
    d = Deployment(GPUS["h100"], MODELS["70b"], 4)
    step = d.engine_config().decode_base  # batch 1, a short context: the weights read
    with running_sim("--gpus", "4", "--model", "70b") as url:
        ex = request(
            url, "POST", "/v1/chat/completions", {**chat_body(40, stream=True), "model": "70b"}, timeout=30
        )
        ex = request(
            url, "POST", "/v1/chat/completions", {**chat_body(40, stream=True), "model": "70b"}, timeout=30
        )
        gaps = [b[0] - a[0] for a, b in itertools.pairwise(content_events(ex))]
        assert len(gaps) == 39
        assert statistics.median(gaps) == pytest.approx(step, abs=0.0015), (step, statistics.median(gaps))
        assert metric(url, "llm_sim_info", gpu="h100", gpus="4", tp="4", model_class="70b") == 1
        assert metric(url, "vllm:cache_config_info", kv_cache_tokens=str(d.kv_tokens)) == 1


def test_replicas_serve_independent_engines_on_their_own_ports() -> None:
    with running_sim("--replicas", "3", "--ttft-ms", "1", "--tpot-ms", "1", "--seed", "5") as line:
        urls = line.split(",")
        assert len(urls) == 3 and len(set(urls)) == 3
        assert all(re.fullmatch(r"http://127\.0\.0\.1:\d+", u) for u in urls)
        for _ in range(2):
            request(urls[1], "POST", "/v1/chat/completions", chat_body(4))
        counts = [metric(u, "vllm:generation_tokens_total") for u in urls]
        assert counts == [0, 8, 0]
        assert [metric(u, "llm_sim_info", replica=str(i)) for i, u in enumerate(urls)] == [1, 1, 1]
        ids = {json.loads(request(u, "POST", "/v1/chat/completions", chat_body(1)).body)["id"] for u in urls}
        assert len(ids) == 3


def test_version_reports_the_time_scale() -> None:
    with running_sim("--speedup", "10", "--ttft-ms", "100") as url:
        assert request(url, "GET", "/version").json() == {"version": "llm-locust-sim", "speedup": 10.0}
        ex = request(url, "POST", "/v1/chat/completions", chat_body(2, stream=True))
        assert content_events(ex)[0][0] - ex.t_sent < 0.05  # 100 ms simulated = 10 ms
