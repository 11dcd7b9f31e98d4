"""Preflight: a target that cannot serve is refused in one line before any load.

The check itself against the real simulator and the scripted peer (other servers' habits:
no ``max_model_len``, a model field ignored, a model list that never comes), then whole
runs: headless (exit 2, one line, no records), ``--skip-preflight``, and the web UI's start.
"""

from __future__ import annotations

import json
import logging
import socket
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from llm_locust.client.preflight import preflight, retry_wait
from llm_locust.client.streaming import ClientConfig
from tests.locustproc import LOCUSTFILE, expect_exit, llm_locust_cli
from tests.promproc import free_port, start_locust, stop_process
from tests.scripted_server import running_peer
from tests.simproc import running_sim

SIM = ("--ttft-ms", "5", "--tpot-ms", "1", "--output-tokens", "6")
SIM_MODEL = "llm-locust/sim-8b"


@pytest.fixture(scope="module")
def sim() -> Iterator[str]:
    with running_sim(*SIM) as url:
        yield url


@pytest.fixture(scope="module")
def peer() -> Iterator[str]:
    with running_peer() as base:
        yield base


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # bound, never listening: connection refused


def requests_seen(base: str, scenario: str) -> int:
    with urllib.request.urlopen(f"{base}/{scenario}/count", timeout=5) as reply:
        return int(json.loads(reply.read())["requests"])


def test_a_healthy_target_says_what_was_learned(sim: str) -> None:
    result = preflight(ClientConfig(host=sim, model=None))
    assert result.ok, result.cause
    assert result.model == SIM_MODEL and result.max_model_len == 32768
    assert result.usage is True and result.tokens == 6 and result.ttft is not None
    assert result.warnings == ()
    (line,) = result.report()
    assert "max_model_len 32768" in line and "reports usage" in line and SIM_MODEL in line


def test_unreachable_target(sim: str) -> None:
    port = closed_port()
    result = preflight(ClientConfig(host=f"http://127.0.0.1:{port}", model="m"))
    assert not result.ok
    assert result.cause == f"cannot reach http://127.0.0.1:{port}: connection refused"


def test_unauthorised() -> None:
    with running_sim(*SIM, "--api-key", "sekret-123") as url:
        result = preflight(ClientConfig(host=url, model=None, api_key="wrong"))
    assert not result.ok and result.cause.startswith("HTTP 401: "), result.cause
    assert "sekret-123" not in result.cause and "wrong" not in result.cause


def test_model_not_served(sim: str) -> None:
    result = preflight(ClientConfig(host=sim, model="no-such-model"))
    assert not result.ok
    assert result.cause == f"model 'no-such-model' not served; the server lists: {SIM_MODEL}"


def test_model_not_listed_but_answered_is_a_warning(peer: str) -> None:
    result = preflight(ClientConfig(host=f"{peer}/ok", model="zzz"))
    assert result.ok, result.cause
    assert any("model 'zzz' is not in GET /v1/models (m, m2)" in w for w in result.warnings)


def test_unknown_context_limit_is_a_warning(peer: str) -> None:
    result = preflight(ClientConfig(host=f"{peer}/nolen", model=None))
    assert result.ok and result.max_model_len is None
    assert any(w.startswith("context limit unknown") for w in result.warnings)
    assert "context limit unknown" in result.report()[0]


def test_a_server_without_usage(peer: str) -> None:
    result = preflight(ClientConfig(host=f"{peer}/no_usage", model=None))
    assert result.ok and result.usage is False and result.tokens == 3
    assert "reports no usage" in result.report()[0]


def test_a_model_list_that_never_comes(peer: str) -> None:
    t0 = time.monotonic()
    result = preflight(ClientConfig(host=f"{peer}/models_silent", model=None, request_timeout=1.0))
    assert time.monotonic() - t0 < 5
    assert not result.ok
    assert result.cause == f"GET {peer}/models_silent/v1/models: no answer in 1 s; pass --model NAME"
    named = preflight(ClientConfig(host=f"{peer}/models_silent", model="m", request_timeout=1.0))
    assert named.ok, named.cause
    assert any("no answer in 1 s; model 'm' not checked" in w for w in named.warnings)


def test_a_torn_test_stream_is_retried_then_named(peer: str) -> None:
    before = requests_seen(peer, "cut_chunked")
    result = preflight(ClientConfig(host=f"{peer}/cut_chunked", model=None))
    assert not result.ok
    assert "stream_broken: cut after 3 tokens, no finish_reason" in result.cause
    assert requests_seen(peer, "cut_chunked") - before == 3


def test_a_server_that_asks_for_time_is_given_it_once(peer: str, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 26 §10: a 429 with Retry-After: 2 (busy for 2 s) was retried twice within a second and
    refused; now the preflight waits the 2 s once, says so in the log, and asks again."""
    caplog.set_level(logging.INFO, logger="llm_locust")
    t0 = time.monotonic()
    result = preflight(ClientConfig(host=f"{peer}/busy_429", model=None))
    waited = time.monotonic() - t0
    assert result.ok, result.cause
    assert result.tokens == 3 and 2.0 <= waited < 10
    said = [r.getMessage() for r in caplog.records if "Retry-After" in r.getMessage()]
    assert said == [
        "llm-locust: preflight: the test request answered HTTP 429 with Retry-After: waiting 2 s once, "
        "then asking again"
    ]


def test_a_model_list_that_asks_for_time_is_given_it(peer: str, caplog: pytest.LogCaptureFixture) -> None:
    """A 503 with Retry-After: 1 to GET /v1/models (a server starting up) refused the run
    ("GET .../v1/models: HTTP 503 ...; pass --model NAME")."""
    caplog.set_level(logging.INFO, logger="llm_locust")
    result = preflight(ClientConfig(host=f"{peer}/busy_503", model=None))
    assert result.ok, result.cause
    assert result.model == "m" and result.max_model_len == 4096
    assert any(
        "GET /v1/models answered HTTP 503 with Retry-After: waiting 1 s" in r.getMessage()
        for r in caplog.records
    )


def test_a_server_never_ready_is_waited_for_once_only(peer: str) -> None:
    before = requests_seen(peer, "always_429")
    t0 = time.monotonic()
    result = preflight(ClientConfig(host=f"{peer}/always_429", model="m"))
    elapsed = time.monotonic() - t0
    assert not result.ok
    assert result.cause.endswith("(after waiting 1 s as the server asked)"), result.cause
    assert "http_429" in result.cause
    # the refused attempt before the wait, then the three attempts of any transient failure
    assert requests_seen(peer, "always_429") - before == 4
    assert 1.0 + 2 * 0.5 <= elapsed < 10  # one wait of 1 s and two 0.5-s pauses, not more


def test_the_wait_for_a_server_is_bounded() -> None:
    assert retry_wait(2.0) == 2.0
    assert retry_wait(120.0) == 30.0  # at most 30 s, however long the server asks for
    assert retry_wait(-5.0) == 0.0


def test_a_server_that_ignores_max_tokens_is_a_warning(peer: str) -> None:
    """Issue 26 §10: the test stream asks for 8 tokens; this server sends 12 (and says 12 in its
    usage). Before: no warning, and the honest usage was flagged as a usage conflict."""
    result = preflight(ClientConfig(host=f"{peer}/long_answer", model=None))
    assert result.ok, result.cause
    ignored = [w for w in result.warnings if "max_tokens" in w]
    assert ignored == [
        "the server ignores max_tokens: the test stream asked for 8 tokens and got 12 (usage); the run's "
        "output lengths will not be the workload's (length accuracy in the summary)"
    ]
    assert result.usage is True and not any("contradicts" in w for w in result.warnings)


# -- whole runs ------------------------------------------------------------------------


def run(host: str, tmp_path: Path, *args: str) -> tuple[int, str, Path]:
    results = tmp_path / "r"
    res = llm_locust_cli(
        "run", "--host", host, "--headless", "-u", "2", "-t", "3s", "--prompt-tokens", "8",
        "--max-tokens", "6", "--results-dir", str(results), *args,
        timeout=90,
    )  # fmt: skip
    out = res.stdout + res.stderr
    assert "Traceback" not in out, out[-3000:]
    return res.returncode, res.stderr, results


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "error" in line.lower()]


def test_a_run_against_a_closed_port_exits_2_before_any_load(tmp_path: Path) -> None:
    port = closed_port()
    code, err, results = run(f"http://127.0.0.1:{port}", tmp_path)
    assert code == 2
    expected = f"llm-locust: error: cannot reach http://127.0.0.1:{port}: connection refused"
    assert error_lines(err) == [expected]
    assert not (results / "requests.jsonl").exists()


def test_a_run_with_a_wrong_model_sends_only_the_check(peer: str, tmp_path: Path) -> None:
    before = requests_seen(peer, "strict")
    code, err, results = run(f"{peer}/strict", tmp_path, "--model", "no-such-model")
    assert code == 2
    expected = "llm-locust: error: model 'no-such-model' not served; the server lists: m, m2"
    assert error_lines(err) == [expected]
    assert requests_seen(peer, "strict") - before == 1  # the one test request: no load
    assert not (results / "requests.jsonl").exists()


def test_a_run_with_a_wrong_key_names_the_status(tmp_path: Path) -> None:
    with running_sim(*SIM, "--api-key", "sekret-123") as url:
        code, err, _ = run(url, tmp_path, "--api-key", "not-the-key")
    assert code == 2
    (line,) = error_lines(err)
    assert line.startswith("llm-locust: error: HTTP 401: ")
    assert "not-the-key" not in err


def test_a_run_prints_what_preflight_learned(sim: str, tmp_path: Path) -> None:
    code, err, results = run(sim, tmp_path)
    assert code == 0, err[-2000:]
    assert f"preflight ok: {sim}: model '{SIM_MODEL}' (1 served), max_model_len 32768, reports usage" in err
    assert (results / "requests.jsonl").read_text().strip()


def test_a_run_warns_when_the_context_limit_is_unknown(peer: str, tmp_path: Path) -> None:
    code, err, _ = run(f"{peer}/nolen", tmp_path)
    assert code == 0, err[-2000:]
    assert "preflight: context limit unknown" in err


def test_a_usage_that_contradicts_the_stream_is_said_and_not_counted(peer: str, tmp_path: Path) -> None:
    """Issue 26 §9: the peer streams 5 content chunks and claims usage 50 (max_tokens 6). The
    preflight read the claim as token batching ("the first content chunk carried 10 tokens"),
    and the totals took it (10x); the summary and the end-of-run text said nothing."""
    results = tmp_path / "r"
    res = llm_locust_cli(
        "run", "--host", f"{peer}/usage_conflict", "--headless", "-u", "1", "-t", "2s",
        "--prompt-tokens", "8", "--max-tokens", "6", "--results-dir", str(results),
        timeout=90,
    )  # fmt: skip
    out = res.stdout + res.stderr
    assert "Traceback" not in out, out[-3000:]
    expect_exit(res, 0, out)
    assert "chunk carried" not in out and "batches tokens" not in out
    (warned,) = [line for line in res.stderr.splitlines() if "preflight: the test stream's usage" in line]
    assert "usage reports 50 completion tokens for 5 content chunks and max_tokens 8" in warned
    rows = [json.loads(line) for line in (results / "requests.jsonl").read_text().splitlines()]
    ok = [r for r in rows if r["outcome"] == "ok"]
    assert ok and all(r["usage_conflict"] and r["completion_tokens"] == 5 for r in ok)
    summary = json.loads((results / "summary.json").read_text())
    assert summary["usage_conflicts"] == summary["completed"] == len(ok)
    assert summary["total_output_tokens"] == 5 * len(ok)
    said = [line for line in out.splitlines() if "usage contradicts the stream" in line]
    assert len(said) == 1 and said[0].startswith(f"note: {len(ok)} requests' usage contradicts"), said


def test_skip_preflight_sends_load_to_a_dead_target(tmp_path: Path) -> None:
    port = closed_port()
    code, _, results = run(f"http://127.0.0.1:{port}", tmp_path, "--skip-preflight", "--model", "m")
    rows = [json.loads(line) for line in (results / "requests.jsonl").read_text().splitlines()]
    assert code == 1 and rows and {r["outcome"] for r in rows} == {"connect"}


def test_no_model_is_never_sent_as_null(peer: str, tmp_path: Path) -> None:
    """Preflight skipped, a model list that never comes, no --model: refuse, do not send null."""
    before = requests_seen(peer, "models_silent")
    code, err, _ = run(f"{peer}/models_silent", tmp_path, "--skip-preflight", "--request-timeout", "1")
    assert code == 2, err[-2000:]
    assert "no model to request (GET /v1/models: no answer in 1 s); pass --model NAME" in err
    assert requests_seen(peer, "models_silent") == before


@pytest.mark.parametrize("how", ["--host", "-H", "LOCUST_HOST"])
def test_tokenizer_server_can_start_whatever_names_the_host(sim: str, tmp_path: Path, how: str) -> None:
    """The pre-start check sees Locust's --host, -H and LOCUST_HOST (it used to see none)."""
    host_args = [] if how == "LOCUST_HOST" else [how, sim]
    res = llm_locust_cli(
        "run", *host_args, "--headless", "-u", "1", "-t", "3s", "--tokenizer", "server",
        "--prompt-tokens", "8", "--max-tokens", "6", "--results-dir", str(tmp_path / "r"),
        timeout=90, extra_env={"LOCUST_HOST": sim} if how == "LOCUST_HOST" else None,
    )  # fmt: skip
    expect_exit(res, 0)
    rows = [json.loads(line) for line in (tmp_path / "r" / "requests.jsonl").read_text().splitlines()]
    assert rows and {r["outcome"] for r in rows} == {"ok"}
    assert {r["prompt_tokens"] for r in rows} == {8}  # exact for the server's own count


def test_the_web_ui_start_fails_with_the_cause(sim: str, tmp_path: Path) -> None:
    port = closed_port()
    web = free_port()
    closed = f"http://127.0.0.1:{port}"
    proc = start_locust(
        LOCUSTFILE, sim, "--web-host", "127.0.0.1", "--web-port", str(web), "--allowed-hosts", closed,
        log_path=tmp_path / "locust.log",
    )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{web}"
        _wait_for(base)
        refused = _swarm(base, closed)
        assert refused["success"] is False
        assert refused["message"] == f"preflight: cannot reach http://127.0.0.1:{port}: connection refused"
        state = json.loads(urllib.request.urlopen(f"{base}/stats/requests", timeout=5).read())
        assert state["state"] == "ready" and state["total_rps"] == 0
        started = _swarm(base, sim)
        assert started["success"] is True, started
    finally:
        stop_process(proc)
    expect_exit(proc, 0, (tmp_path / "locust.log").read_text())  # 143 is for headless runs (docs/running.md)


def _wait_for(base: str, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(base + "/", timeout=2).read()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("the web UI did not come up")


def _swarm(base: str, host: str) -> dict:
    form = {"user_count": "1", "spawn_rate": "1", "host": host}
    data = urllib.parse.urlencode(form).encode()
    with urllib.request.urlopen(urllib.request.Request(f"{base}/swarm", data=data), timeout=60) as reply:
        return json.loads(reply.read())
