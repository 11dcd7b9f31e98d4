"""The simulator as a real process over loopback: wire format, validation, faults, timing.

Every server here is ``python -m llm_locust.sim --port 0`` started through ``simproc``;
clients are raw sockets so the tests see exactly what is on the wire.
"""

from __future__ import annotations

import itertools
import json
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.locustproc import expect_exit
from tests.simclient import (
    MODEL,
    Exchange,
    chat_body,
    connect,
    content_events,
    metric,
    receive,
    request,
    send,
    wait_until,
)
from tests.simproc import LISTEN_PREFIX, running_sim, start_sim, stop_sim

# -- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sim() -> Iterator[str]:
    with running_sim("--ttft-ms", "5", "--tpot-ms", "1", "--seed", "7") as url:
        yield url


# -- endpoints -------------------------------------------------------------------------------


def test_models_and_health(sim: str) -> None:
    ex = request(sim, "GET", "/v1/models")
    assert ex.status == 200
    model = ex.json()["data"][0]
    assert ex.json()["object"] == "list"
    assert model["id"] == MODEL and model["object"] == "model"
    assert model["owned_by"] == "llm-locust-sim" and model["max_model_len"] == 32768
    assert request(sim, "GET", "/health").status == 200
    assert request(sim, "GET", "/nope").status == 404


def test_streaming_chat_exact_sequence_and_keepalive(sim: str) -> None:
    sock = connect(sim)
    try:
        body = chat_body(5, stream=True, stream_options={"include_usage": True})
        ex = request(sim, "POST", "/v1/chat/completions", body, sock=sock)
        assert ex.status == 200
        assert "text/event-stream" in ex.head and "Transfer-Encoding: chunked" in ex.head
        assert ex.raw.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n")
        data = ex.data()
        assert len(data) == 1 + 5 + 1 + 1  # role, 5 tokens, usage, [DONE]
        chunks = [json.loads(d) for d in data[:-1]]
        assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
        for c in chunks[1:6]:
            assert c["object"] == "chat.completion.chunk" and c["model"] == MODEL
            assert c["choices"][0]["delta"]["content"].strip()
        assert [c["choices"][0]["finish_reason"] for c in chunks[1:6]] == [None] * 4 + ["length"]
        assert len({c["id"] for c in chunks}) == 1
        usage = chunks[6]
        assert usage["choices"] == []
        # "Hello, world! How are you?" -> Hello , world ! How are you ? = 8 tokens
        assert usage["usage"] == {"prompt_tokens": 8, "completion_tokens": 5, "total_tokens": 13}
        assert data[-1] == "[DONE]"
        # The same connection serves the next request (keep-alive).
        again = request(sim, "POST", "/v1/chat/completions", chat_body(2, stream=True), sock=sock)
        assert again.status == 200 and again.data()[-1] == "[DONE]" and len(again.data()) == 4
    finally:
        sock.close()


def test_streaming_completions(sim: str) -> None:
    body = {"model": MODEL, "prompt": "one two three", "max_tokens": 4, "stream": True}
    ex = request(sim, "POST", "/v1/completions", body)
    assert ex.status == 200
    data = ex.data()
    assert data[-1] == "[DONE]" and len(data) == 5  # no usage chunk without include_usage
    chunks = [json.loads(d) for d in data[:-1]]
    assert all(c["object"] == "text_completion" and c["choices"][0]["text"].strip() for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_non_streaming_chat_and_completions(sim: str) -> None:
    ex = request(sim, "POST", "/v1/chat/completions", chat_body(6))
    assert ex.status == 200 and "application/json" in ex.head
    obj = ex.json()
    assert obj["object"] == "chat.completion"
    assert obj["choices"][0]["message"]["role"] == "assistant"
    assert len(obj["choices"][0]["message"]["content"].split()) == 6
    assert obj["usage"] == {"prompt_tokens": 8, "completion_tokens": 6, "total_tokens": 14}
    ex = request(sim, "POST", "/v1/completions", {"prompt": "a b", "max_tokens": 3})
    assert ex.json()["usage"]["completion_tokens"] == 3
    assert len(ex.json()["choices"][0]["text"].split()) == 3


def test_tokenize_matches_usage(sim: str) -> None:
    ex = request(sim, "POST", "/tokenize", {"prompt": "Hello, world! How are you?"})
    assert ex.status == 200
    assert ex.json()["count"] == 8 and len(ex.json()["tokens"]) == 8
    assert ex.json()["max_model_len"] == 32768
    msgs = {"messages": [{"role": "user", "content": "a b"}, {"role": "user", "content": "c"}]}
    assert request(sim, "POST", "/tokenize", msgs).json()["count"] == 3


def test_validation_errors(sim: str) -> None:
    ex = request(sim, "POST", "/v1/chat/completions", b"{not json")
    assert ex.status == 400 and "error" in ex.json()
    ex = request(sim, "POST", "/v1/chat/completions", {**chat_body(3), "model": "other"})
    assert ex.status == 404
    err = ex.json()["error"]
    assert set(err) >= {"message", "type", "code"} and "other" in err["message"]
    ex = request(sim, "POST", "/v1/chat/completions", chat_body(32768))
    assert ex.status == 400 and "maximum context length" in ex.json()["error"]["message"]
    ex = request(sim, "POST", "/v1/chat/completions", chat_body(0))
    assert ex.status == 400


def test_api_key() -> None:
    with running_sim("--api-key", "s3cret", "--ttft-ms", "1", "--tpot-ms", "1") as url:
        assert request(url, "GET", "/v1/models").status == 401
        assert request(url, "GET", "/v1/models", headers={"Authorization": "Bearer nope"}).status == 401
        ok = request(url, "GET", "/v1/models", headers={"Authorization": "Bearer s3cret"})
        assert ok.status == 200
        assert request(url, "GET", "/health").status == 200


def test_output_tokens_flag_and_stop_reason() -> None:
    with running_sim("--output-tokens", "3", "--ttft-ms", "1", "--tpot-ms", "1") as url:
        ex = request(url, "POST", "/v1/chat/completions", chat_body(10))
        assert ex.json()["usage"]["completion_tokens"] == 3
        assert ex.json()["choices"][0]["finish_reason"] == "stop"
        ex = request(url, "POST", "/v1/chat/completions", chat_body(2))  # capped by max_tokens
        assert ex.json()["usage"]["completion_tokens"] == 2


def test_metrics_have_vllm_names(sim: str) -> None:
    request(sim, "POST", "/v1/chat/completions", chat_body(2))
    ex = request(sim, "GET", "/metrics")
    assert ex.status == 200
    text = ex.body.decode()
    for name in (
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc",
        "vllm:prompt_tokens_total",
        "vllm:generation_tokens_total",
        'vllm:time_to_first_token_seconds_bucket{le="0.001"',
        'vllm:time_to_first_token_seconds_bucket{le="2560.0"',
        "vllm:e2e_request_latency_seconds_count",
        'vllm:request_success_total{finished_reason="length"',
    ):
        assert name in text, name
    assert f'model_name="{MODEL}"' in text
    from prometheus_client.parser import text_string_to_metric_families

    families = {f.name for f in text_string_to_metric_families(text)}
    assert {"vllm:time_to_first_token_seconds", "vllm:generation_tokens"} <= families


# -- faults ----------------------------------------------------------------------------------


def _stream(url: str, n: int = 20, timeout: float = 10.0) -> Exchange:
    return request(url, "POST", "/v1/chat/completions", chat_body(n, stream=True), timeout=timeout)


def _fault_count(url: str, kind: str) -> int:
    text = request(url, "GET", "/metrics").body.decode()
    m = re.search(rf'llm_sim_faults_total{{kind="{kind}"[^}}]*}} (\d+)', text)
    return int(m.group(1)) if m else 0


def test_fault_error_and_rate_limit() -> None:
    with running_sim("--error-rate", "1", "--ttft-ms", "1", "--tpot-ms", "1") as url:
        ex = _stream(url)
        assert ex.status == 500 and "error" in ex.json()
        assert _fault_count(url, "error") == 1
    with running_sim("--rate-limit-rate", "1", "--ttft-ms", "1", "--tpot-ms", "1") as url:
        ex = _stream(url)
        assert ex.status == 429 and "Retry-After: 1" in ex.head


def test_fault_disconnect() -> None:
    with running_sim("--disconnect-rate", "1", "--ttft-ms", "1", "--tpot-ms", "1") as url:
        ex = _stream(url)
        assert ex.status == 200 and ex.closed and not ex.timed_out
        assert not ex.raw.endswith(b"0\r\n\r\n") and "[DONE]" not in ex.data()
        assert 1 <= len(content_events(ex)) < 20
        assert _fault_count(url, "disconnect") == 1


def test_fault_malformed() -> None:
    with running_sim("--malformed-rate", "1", "--ttft-ms", "1", "--tpot-ms", "1") as url:
        ex = _stream(url)
        assert ex.data()[-1] == "[DONE]"  # the stream continues after the broken line
        bad = []
        for d in ex.data()[:-1]:
            try:
                json.loads(d)
            except ValueError:
                bad.append(d)
        assert len(bad) == 1
        assert len(content_events(ex)) == 20


def test_fault_stall() -> None:
    with running_sim("--stall-rate", "1", "--stall-seconds", "2", "--ttft-ms", "1", "--tpot-ms", "1") as url:
        ex = _stream(url, timeout=10.0)
        assert ex.closed and not ex.timed_out and "[DONE]" not in ex.data()  # the server closed it
        assert content_events(ex), "some tokens before the stall"
        last_token = content_events(ex)[-1][0]
        silent = time.perf_counter() - last_token
        assert silent >= 1.0, silent


# -- timing ----------------------------------------------------------------------------------


@pytest.mark.host_timing  # the simulator's timing margins, on a host with CPU to spare
def test_fixed_mode_timing() -> None:
    with running_sim("--ttft-ms", "200", "--tpot-ms", "20") as url:
        request(url, "POST", "/v1/chat/completions", chat_body(2, stream=True))  # warm-up
        ttfts, gaps = [], []
        for _ in range(3):  # medians over 3 requests: robust to one hiccup on a busy machine
            ex = _stream(url, n=20)
            tokens = content_events(ex)
            assert len(tokens) == 20
            ttfts.append(tokens[0][0] - ex.t_sent)
            gaps += [b[0] - a[0] for a, b in itertools.pairwise(tokens)]
        assert abs(statistics.median(ttfts) - 0.200) <= 0.010, ttfts
        assert abs(statistics.median(gaps) - 0.020) <= 0.001, gaps


def _read_in_background(sock: socket.socket, ex: Exchange) -> threading.Thread:
    reader = threading.Thread(target=receive, args=(sock, ex, 15.0))
    reader.start()
    return reader


@pytest.mark.host_timing  # the simulator's timing margins, on a host with CPU to spare
def test_engine_mode_queueing_over_the_wire() -> None:
    """Two run at once (max-num-seqs 2); two more wait in the queue for a whole generation."""
    args = ("--mode", "engine", "--max-num-seqs", "2", "--decode-base-ms", "50", "--decode-ms-per-seq", "0")
    with running_sim(*args) as url:
        socks = [connect(url, timeout=15.0) for _ in range(4)]
        exs = [Exchange(t_sent=0.0) for _ in socks]
        readers = []
        try:
            for i, (sock, ex) in enumerate(zip(socks, exs, strict=True)):
                ex.t_sent = send(sock, "POST", "/v1/chat/completions", chat_body(10, stream=True))
                readers.append(_read_in_background(sock, ex))
                if i == 1:  # the first pair is in the batch before the second pair is sent
                    wait_until(lambda: metric(url, "vllm:num_requests_running") == 2, what="2 running")
            wait_until(lambda: metric(url, "vllm:num_requests_waiting") == 2, what="2 waiting")
            assert metric(url, "vllm:num_requests_running") == 2
            for reader in readers:
                reader.join(20)
        finally:
            for sock in socks:
                sock.close()
        assert all(len(content_events(ex)) == 10 for ex in exs)
        # On the wire: each queued request starts when a slot frees, so the k-th queued first token
        # comes after the k-th finish of the first pair (one 50 ms step later); on the server, only
        # the first pair had a TTFT of about one step.
        freed = sorted(content_events(ex)[-1][0] for ex in exs[:2])
        started = sorted(content_events(ex)[0][0] for ex in exs[2:])
        assert all(s > f for s, f in zip(started, freed, strict=True)), (freed, started)
        assert metric(url, "vllm:time_to_first_token_seconds_bucket", le="0.25") == 2  # 1-2 steps
        assert metric(url, "vllm:time_to_first_token_seconds_count") == 4


#: An engine whose every step lasts 10 ms, whatever runs.
TEN_MS_STEPS = (
    "--mode",
    "engine",
    "--decode-base-ms",
    "10",
    "--decode-ms-per-seq",
    "0",
    "--prefill-ms-per-token",
    "0",
)


def _stalled_stream(proc: subprocess.Popen[Any], url: str, tokens: int, stall_s: float) -> Exchange:
    """One stream of ``tokens`` read to its end, the simulator stopped for ``stall_s`` once it runs."""
    sock = connect(url, timeout=15.0)
    ex = Exchange(t_sent=send(sock, "POST", "/v1/chat/completions", chat_body(tokens, stream=True)))
    reader = _read_in_background(sock, ex)
    wait_until(lambda: metric(url, "vllm:num_requests_running") == 1, what="streaming")
    proc.send_signal(signal.SIGSTOP)
    time.sleep(stall_s)
    proc.send_signal(signal.SIGCONT)
    reader.join(15)
    sock.close()
    return ex


@pytest.mark.host_timing  # the simulator's timing margins, on a host with CPU to spare
def test_engine_clock_catches_up_after_the_host_stalls() -> None:
    """A starved simulator must not slow the simulated GPU down (it matters under --speedup)."""
    proc, url = start_sim(*TEN_MS_STEPS)
    try:
        ex = _stalled_stream(proc, url, 50, 0.15)  # the host stalls for 150 ms mid-generation
        tokens = content_events(ex)
        assert len(tokens) == 50
        # 50 steps of 10 ms: the stream ends on schedule (plus delivery), not 150 ms late
        assert tokens[-1][0] - ex.t_sent < 0.5 + 0.06, tokens[-1][0] - ex.t_sent
        assert metric(url, "vllm:e2e_request_latency_seconds_sum") == pytest.approx(0.5, abs=0.02)
    finally:
        assert stop_sim(proc) == 0


@pytest.mark.host_timing  # the simulator's timing margins, on a host with CPU to spare
def test_the_engine_clock_says_when_it_fell_behind() -> None:
    """The simulator's own clock on /metrics: it kept its schedule through a 150 ms stall; a 600 ms
    one (over the 250 ms it catches up) restarts the schedule, and the wall time lost is counted."""
    proc, url = start_sim(*TEN_MS_STEPS)
    try:
        for stall, restarts in ((0.15, 0), (0.6, 1)):
            ex = _stalled_stream(proc, url, 80, stall)
            assert len(content_events(ex)) == 80
            assert metric(url, "llm_sim_schedule_restarts_total") == restarts
            assert metric(url, "llm_sim_schedule_late_max_seconds") >= stall - 0.02
        assert metric(url, "llm_sim_schedule_lost_seconds_total") >= 0.55
        assert metric(url, "llm_sim_schedule_steps_total") >= 160
    finally:
        assert stop_sim(proc) == 0


@pytest.mark.host_timing  # the simulator's timing margins, on a host with CPU to spare
def test_tokenizer_flag_counts_exactly(tmp_path: Any) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "hello": 1, "world": 2}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    with running_sim("--tokenizer", str(path), "--ttft-ms", "1", "--tpot-ms", "1") as url:
        ex = request(url, "POST", "/tokenize", {"prompt": "hello world hello"})
        assert ex.json()["tokens"] == [1, 2, 1]


# -- process behaviour -----------------------------------------------------------------------


def _run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "llm_locust.sim", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (("--port", "99999"), "--port"),
        (("--port", "abc"), "--port"),
        (("--error-rate", "1.5"), "--error-rate"),
        (("--tpot-ms", "-1"), "--tpot-ms"),
        (("--tokenizer", "/nonexistent/tokenizer.json"), "--tokenizer"),
    ],
)
def test_bad_flag_exits_2_with_one_line(args: tuple[str, ...], flag: str) -> None:
    res = _run_cli(*args)
    expect_exit(res, 2)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0], res.stderr
    assert res.stdout == ""


def test_sigterm_and_sigint_exit_0() -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        proc, url = start_sim("--ttft-ms", "1000")
        sock = connect(url)
        send(sock, "POST", "/v1/chat/completions", chat_body(5, stream=True))
        wait_until(lambda u=url: metric(u, "vllm:num_requests_running") == 1, what="a request in flight")
        proc.send_signal(sig)
        try:
            assert proc.wait(10) == 0
            assert proc.stderr is not None and proc.stderr.read() == ""
        finally:
            sock.close()
            stop_sim(proc)


def test_listening_line_is_exact() -> None:
    proc, url = start_sim()
    try:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url)
        assert LISTEN_PREFIX == "llm-locust sim listening on "
    finally:
        assert stop_sim(proc) == 0


def test_faults_are_reproducible_with_seed() -> None:
    def statuses() -> list[int]:
        with running_sim("--error-rate", "0.5", "--seed", "42", "--ttft-ms", "1", "--tpot-ms", "1") as url:
            return [request(url, "POST", "/v1/chat/completions", chat_body(2)).status for _ in range(12)]

    first = statuses()
    assert set(first) == {200, 500}
    assert statuses() == first


def test_sim_never_imports_gevent_or_locust() -> None:
    code = (
        "import sys, argparse, llm_locust.sim.cli as c, llm_locust.sim.__main__; "
        "p = argparse.ArgumentParser(); c.add_arguments(p); "  # every feature that imports lazily
        "c.build_config(p.parse_args(['--gpus', '4', '--model', '70b', '--reasoning-tokens', "
        "'lognormal:mean=300,std=100']))"
        ".reasoning.draw(__import__('random').Random(1), 100); "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('gevent', 'locust')]; "
        "sys.exit(bool(bad))"
    )
    assert subprocess.run([sys.executable, "-c", code], timeout=30).returncode == 0
