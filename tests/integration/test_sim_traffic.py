"""Modern traffic against the simulator as a real process: reasoning, cancellation, prefix
caching, Retry-After and slow degradation, each checked on the wire and in ``/metrics``."""

from __future__ import annotations

import itertools
import json
import statistics
import threading
import time
from typing import Any

import pytest

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
from tests.simproc import running_sim

FAST = ("--ttft-ms", "1", "--tpot-ms", "1")


def _chunks(ex: Exchange) -> list[dict[str, Any]]:
    return [json.loads(d) for d in ex.data() if d != "[DONE]"]


def _deltas(ex: Exchange) -> list[dict[str, Any]]:
    return [c["choices"][0]["delta"] for c in _chunks(ex) if c["choices"]]


# -- reasoning -----------------------------------------------------------------------------


def test_reasoning_phase_streams_before_the_answer_and_is_counted() -> None:
    with running_sim("--reasoning-tokens", "3", *FAST) as url:
        body = chat_body(8, stream=True, stream_options={"include_usage": True})
        ex = request(url, "POST", "/v1/chat/completions", body)
        deltas = _deltas(ex)
        assert deltas[0] == {"role": "assistant", "content": ""}
        assert [list(d) for d in deltas[1:]] == [["reasoning_content"]] * 3 + [["content"]] * 5
        usage = _chunks(ex)[-1]["usage"]
        assert usage["completion_tokens"] == 8
        assert usage["completion_tokens_details"] == {"reasoning_tokens": 3}
        full = request(url, "POST", "/v1/chat/completions", chat_body(8)).json()
        message = full["choices"][0]["message"]
        assert len(message["reasoning_content"].split()) == 3 and len(message["content"].split()) == 5
        completion = request(url, "POST", "/v1/completions", {"prompt": "a b", "max_tokens": 4}).json()
        assert "completion_tokens_details" not in completion["usage"]  # no reasoning phase there


def test_reasoning_share_and_field_name() -> None:
    with running_sim("--reasoning-tokens", "50%", "--reasoning-field", "reasoning", *FAST) as url:
        ex = request(url, "POST", "/v1/chat/completions", chat_body(10, stream=True))
        kinds = [next(iter(d)) for d in _deltas(ex)[1:]]
        assert kinds == ["reasoning"] * 5 + ["content"] * 5


# -- cancellation --------------------------------------------------------------------------


def test_client_disconnect_aborts_and_frees_kv_at_once() -> None:
    args = ("--max-num-seqs", "1", "--kv-cache-tokens", "10000", "--decode-base-ms", "20")
    with running_sim(*args) as url:
        running, queued = connect(url), connect(url)
        try:
            send(running, "POST", "/v1/chat/completions", chat_body(2000, stream=True))
            wait_until(lambda: metric(url, "vllm:num_requests_running") == 1, what="one running")
            send(queued, "POST", "/v1/chat/completions", chat_body(2000, stream=True))
            wait_until(lambda: metric(url, "vllm:num_requests_waiting") == 1, what="one waiting")
            assert metric(url, "vllm:kv_cache_usage_perc") == pytest.approx((8 + 2000) / 10000)
            queued.close()  # a client gives up while queued ...
            wait_until(lambda: metric(url, "vllm:num_requests_waiting") == 0, what="queue empty")
            running.close()  # ... and one mid-stream: its 2,008 tokens of KV come back
            wait_until(lambda: metric(url, "vllm:num_requests_running") == 0, what="nothing running")
            assert metric(url, "vllm:kv_cache_usage_perc") == 0.0
            assert metric(url, "vllm:request_success_total", finished_reason="abort") == 2
        finally:
            running.close()
            queued.close()
        # the engine goes on serving
        ex = request(url, "POST", "/v1/chat/completions", chat_body(3, stream=True))
        assert len(content_events(ex)) == 3


# -- prefix caching ------------------------------------------------------------------------


def _prompt(n_words: int, seed: int = 0) -> str:
    return " ".join(f"w{seed}x{i}" for i in range(n_words))


def _engine_ttft(url: str, text: str) -> tuple[float, dict[str, Any]]:
    body = chat_body(2, text=text, stream=True, stream_options={"include_usage": True})
    ex = request(url, "POST", "/v1/chat/completions", body)
    return content_events(ex)[0][0] - ex.t_sent, _chunks(ex)[-1]["usage"]


def test_prefix_cache_hit_skips_prefill_and_is_reported() -> None:
    args = ("--prefill-ms-per-token", "1", "--decode-base-ms", "2", "--decode-ms-per-seq", "0")
    with running_sim(*args) as url:
        text = _prompt(400)
        cold, cold_usage = _engine_ttft(url, text)
        warm, warm_usage = _engine_ttft(url, text)
        assert cold_usage["prompt_tokens_details"] == {"cached_tokens": 0}
        assert warm_usage["prompt_tokens_details"] == {"cached_tokens": 384}  # (400 - 1) // 16 blocks
        assert cold > 0.35 and warm < 0.2, (cold, warm)  # 400 ms of prefill vs 16 ms
        assert metric(url, "vllm:prefix_cache_queries_total") == 800
        assert metric(url, "vllm:prefix_cache_hits_total") == 384
        other, other_usage = _engine_ttft(url, _prompt(400, seed=1))
        assert other_usage["prompt_tokens_details"] == {"cached_tokens": 0} and other > 0.35


def test_prefix_caching_can_be_turned_off() -> None:
    with running_sim("--no-prefix-caching", "--decode-base-ms", "1") as url:
        text = _prompt(100)
        _engine_ttft(url, text)
        _, usage = _engine_ttft(url, text)
        assert "prompt_tokens_details" not in usage
        assert metric(url, "vllm:prefix_cache_hits_total") == 0  # vLLM keeps the counters, at 0
        assert metric(url, "vllm:cache_config_info", enable_prefix_caching="False") == 1


# -- Retry-After ---------------------------------------------------------------------------


def test_retry_after_on_429_and_503_is_configurable() -> None:
    with running_sim("--unavailable-rate", "1", "--retry-after", "7", *FAST) as url:
        ex = request(url, "POST", "/v1/chat/completions", chat_body(3, stream=True))
        assert ex.status == 503 and "Retry-After: 7" in ex.head
        assert ex.json()["error"]["code"] == 503
        assert metric(url, "llm_sim_faults_total", kind="unavailable") == 1
    with running_sim("--rate-limit-rate", "1", "--retry-after", "none", *FAST) as url:
        ex = request(url, "POST", "/v1/chat/completions", chat_body(3))
        assert ex.status == 429 and "retry-after" not in ex.head.lower()


# -- slow degradation ----------------------------------------------------------------------


def _slope(xs: list[float], ys: list[float]) -> float:
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


@pytest.mark.parametrize(
    "mode",
    [
        ("--ttft-ms", "1", "--tpot-ms", "5"),
        ("--decode-base-ms", "5", "--decode-ms-per-seq", "0", "--prefill-ms-per-token", "0"),
    ],
    ids=["fixed", "engine"],
)
@pytest.mark.serial  # the gaps' slope within 15 %: beside the parallel part's workers it read 0.0120
def test_tpot_creeps_up_at_the_configured_slope(mode: tuple[str, ...]) -> None:
    # 600 ms per minute = 10 ms more per token gap for every second since start
    with running_sim(*mode, "--degrade-tpot-ms-per-min", "600") as url:
        ex = request(url, "POST", "/v1/chat/completions", chat_body(60, stream=True), timeout=30)
        tokens = content_events(ex)
        assert len(tokens) == 60
        gaps = [(b[0], b[0] - a[0]) for a, b in itertools.pairwise(tokens)]
        slope = _slope([t for t, _ in gaps], [g for _, g in gaps])
        assert slope == pytest.approx(0.010, rel=0.15), slope


def test_kv_leak_grows_usage_at_the_configured_rate() -> None:
    args = ("--mode", "engine", "--kv-cache-tokens", "100000", "--kv-leak-tokens-per-min", "120000")
    with running_sim(*args) as url:
        t0, u0 = time.monotonic(), metric(url, "vllm:kv_cache_usage_perc")
        wait_until(lambda: time.monotonic() - t0 > 1.0, what="a second")
        t1, u1 = time.monotonic(), metric(url, "vllm:kv_cache_usage_perc")
        assert (u1 - u0) / (t1 - t0) == pytest.approx(0.02, rel=0.2)  # 2,000 of 100,000 tokens per s


def test_many_streams_in_parallel_all_complete() -> None:
    """Cancellation and caching bookkeeping hold under concurrency: 20 streams, 5 dropped."""
    with running_sim("--max-num-seqs", "8", "--decode-base-ms", "5") as url:
        socks = [connect(url, timeout=20.0) for _ in range(20)]
        exs = [Exchange(t_sent=0.0) for _ in socks]
        readers = []
        for sock, ex in zip(socks[:15], exs[:15], strict=True):
            ex.t_sent = send(
                sock, "POST", "/v1/chat/completions", chat_body(30, text=_prompt(40), stream=True)
            )
            readers.append(threading.Thread(target=receive, args=(sock, ex, 20.0)))
            readers[-1].start()
        for sock in socks[15:]:
            send(sock, "POST", "/v1/chat/completions", chat_body(3000, stream=True))
        wait_until(
            lambda: metric(url, "vllm:num_requests_running") + metric(url, "vllm:num_requests_waiting") == 20
        )
        for sock in socks[15:]:
            sock.close()
        for reader in readers:
            reader.join(30)
        for sock in socks:
            sock.close()
        assert all(len(content_events(ex)) == 30 for ex in exs[:15])
        wait_until(lambda: metric(url, "vllm:num_requests_running") == 0, what="all done")
        assert metric(url, "vllm:kv_cache_usage_perc") == 0.0
        assert metric(url, "vllm:request_success_total", finished_reason="abort") == 5
        assert metric(url, "vllm:request_success_total", finished_reason="length") == 15
        assert MODEL in request(url, "GET", "/v1/models").body.decode()


def test_bad_chat_bodies_are_400_with_prefix_caching_on() -> None:
    """The prefix cache reads the prompt's ids first: a bad body must still be a clean 400."""
    with running_sim("--mode", "engine") as url:
        for body in (
            {"max_tokens": 2},
            {"messages": "hi", "max_tokens": 2},
            {"messages": [3], "max_tokens": 2},
        ):
            ex = request(url, "POST", "/v1/chat/completions", body)
            assert ex.status == 400 and ex.json()["error"]["type"] == "BadRequestError", body
        ex = request(url, "POST", "/v1/completions", {"max_tokens": 2})
        assert ex.status == 400 and "'prompt' is required" in ex.json()["error"]["message"]
        assert request(url, "GET", "/health").status == 200
