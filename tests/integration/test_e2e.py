"""Real ``locust`` processes against the real simulator over loopback."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

import pytest

from tests.locustproc import expect_exit, llm_locust_cli, run_locust
from tests.scripted_server import Server  # noqa: F401  (the module must import cleanly)
from tests.simproc import running_sim

pytestmark = pytest.mark.slow


@pytest.mark.slow
def test_timing_accuracy_against_fixed_simulator(tmp_path: Path) -> None:
    with running_sim("--ttft-ms", "200", "--tpot-ms", "20", "--output-tokens", "64") as url:
        res = run_locust(
            url,
            "--prompt-tokens",
            "128",
            "--max-tokens",
            "256",
            results_dir=tmp_path / "r",
            users=4,
            run_time="10s",
        )
    expect_exit(res, 0)
    s, rows = res.summary, res.rows
    assert s["failed"] == 0 and s["completed"] >= 12
    assert len(rows) == s["completed"] + s["failed"]
    assert abs(s["median_ttft_ms"] - 200) <= 10, s["median_ttft_ms"]
    assert abs(s["median_tpot_ms"] - 20) <= 1, s["median_tpot_ms"]
    assert {r["completion_tokens"] for r in rows} == {64}
    assert {r["token_source"] for r in rows} == {"usage"}
    assert "llm-locust summary" in res.stdout
    # Locust's own table has the E2E request row and the derived rows
    out = res.stdout + res.stderr
    assert re.search(r"LLM\s+TTFT", out) and re.search(r"LLM\s+E2E", out)


def _sim_faults(url: str) -> dict[str, float]:
    text = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
    return {
        m.group(1): float(m.group(2))
        for m in re.finditer(r'llm_sim_faults_total\{kind="(\w+)"[^}]*\} (\S+)', text)
    }


@pytest.mark.slow
def test_every_fault_is_a_failure_of_its_class(tmp_path: Path) -> None:
    faults = [
        "--error-rate",
        "0.1",
        "--rate-limit-rate",
        "0.1",
        "--disconnect-rate",
        "0.1",
        "--malformed-rate",
        "0.1",
        "--stall-rate",
        "0.05",
        "--stall-seconds",
        "30",
    ]
    with running_sim(
        "--ttft-ms", "20", "--tpot-ms", "5", "--output-tokens", "20", "--seed", "3", *faults
    ) as url:
        # every injected fault must match a record: no preflight request besides the load
        res = run_locust(
            url,
            "--request-timeout",
            "1.5",
            "--skip-preflight",
            results_dir=tmp_path / "r",
            users=8,
            run_time="10s",
        )
        injected = _sim_faults(url)
    expect_exit(res, 1)  # Locust exits 1 when any request failed
    s, rows = res.summary, res.rows
    assert len(rows) == s["completed"] + s["failed"]
    expected = {
        "error": "http_5xx",
        "rate_limit": "http_429",
        "disconnect": "stream_broken",
        "malformed": "bad_payload",
        "stall": "timeout",
    }
    for kind, outcome in expected.items():
        assert injected.get(kind, 0) > 0, (kind, injected)
        assert s["errors"].get(outcome) == injected[kind], (kind, s["errors"], injected)
    assert s["failed"] == sum(injected.values())
    assert all(r["message"] for r in rows if r["outcome"] != "ok")


def test_wrong_api_key_and_unknown_model_are_4xx_records(tmp_path: Path) -> None:
    with running_sim("--api-key", "sekret-123", "--ttft-ms", "5", "--tpot-ms", "1") as url:
        # the records' classes (preflight, which refuses both targets, is tested in test_preflight.py)
        no_key = run_locust(
            url, "--model", "x", "--skip-preflight", results_dir=tmp_path / "a", users=1, run_time="2s"
        )
        bad_model = run_locust(
            url,
            "--model",
            "no-such-model",
            "--api-key",
            "sekret-123",
            "--skip-preflight",
            results_dir=tmp_path / "b",
            users=1,
            run_time="2s",
        )
    for res in (no_key, bad_model):
        expect_exit(res, 1)
        rows = res.rows
        assert rows and all(r["outcome"] == "http_4xx" for r in rows)
    assert {r["status"] for r in no_key.rows} == {401}
    assert {r["status"] for r in bad_model.rows} == {404}
    assert "no-such-model" in bad_model.rows[0]["message"]
    # the key never reaches output or results
    for res in (no_key, bad_model):
        blob = res.stdout + res.stderr + "".join(p.read_text() for p in res.results_dir.iterdir())
        assert "sekret-123" not in blob


def test_unreachable_host_gives_connect_records(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        res = run_locust(
            f"http://127.0.0.1:{port}",
            *("--model", "m", "--skip-preflight"),
            results_dir=tmp_path / "r",
            users=1,
            run_time="2s",
        )
    expect_exit(res, 1)
    rows = res.rows
    assert rows and {r["outcome"] for r in rows} == {"connect"}
    assert res.summary["failed"] == len(rows)


def test_html_instead_of_sse_is_bad_payload(tmp_path: Path) -> None:
    import subprocess
    import sys

    peer = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve().parents[1] / "scripted_server.py")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        port = int(peer.stdout.readline().split()[1])  # type: ignore[union-attr]
        res = run_locust(
            f"http://127.0.0.1:{port}/html",
            "--model",
            "m",
            "--skip-preflight",
            results_dir=tmp_path / "r",
            users=1,
            run_time="2s",
        )
    finally:
        peer.kill()
        peer.wait()
    expect_exit(res, 1)
    rows = res.rows
    assert rows and {r["outcome"] for r in rows} == {"bad_payload"}
    assert "text/html" in rows[0]["message"]
    # a refusal before any token: the user backs off as after a 5xx (issue 26 §7: 19,109
    # requests in 10 s before); in 2 s, pauses of 0.1, 0.2, 0.4, 0.8 s allow 5 requests (a
    # 6th, after 1.6 s more, only if the run stopped a second late on a busy host)
    assert {r["pause_reason"] for r in rows} == {"backoff"}
    assert len(rows) <= 6, len(rows)


# bad flags of `run` (one line, exit 2): test_cli_errors.py's BAD cases, with the exact messages


def test_results_dir_with_results_is_refused(tmp_path: Path) -> None:
    (tmp_path / "requests.jsonl").write_text("")
    res = llm_locust_cli(
        "run", "--host", "http://127.0.0.1:9", "--headless", "-t", "1s", "--results-dir", str(tmp_path)
    )
    expect_exit(res, 2)
    assert "--overwrite" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_chat_profile_lengths_are_exact_and_match_the_server(tmp_path: Path) -> None:
    with running_sim("--ttft-ms", "10", "--tpot-ms", "1", "--output-tokens", "8") as url:
        res = run_locust(
            url,
            *(
                "--workload",
                "chat",
                "--seed",
                "7",
                "--skip-preflight",
            ),  # the server's count is the load's only
            results_dir=tmp_path / "r",
            users=4,
            run_time="6s",
        )
        metrics = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
    expect_exit(res, 0)
    rows = res.rows
    assert len(rows) >= 20
    targets = [r["target_input_tokens"] for r in rows]
    assert len(set(targets)) > 10  # lengths drawn from the profile, not one fixed value
    assert all(r["prompt_tokens"] == r["target_input_tokens"] for r in rows)
    server = sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("vllm:prompt_tokens_total{")
    )
    assert server == sum(r["prompt_tokens"] for r in rows)
    acc = res.summary["length_accuracy"]
    assert acc["input"]["mean"] == 0.0, acc
    assert res.summary["config"]["workload"]["name"] == "chat"
