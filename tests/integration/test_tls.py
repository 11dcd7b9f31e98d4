"""TLS to the target: chain and host name verified by default, a private CA, an explicit opt-out.

A CA and two server certificates are made here with ``openssl`` (one for 127.0.0.1, one for
``wrong.example``); the real simulator serves HTTPS on loopback with one of them. Every way
llm-locust talks to the target is checked in the four cases: the streaming request,
``GET /v1/models``, the ``--tokenizer server`` probe, and a whole headless run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from llm_locust.client.preflight import list_models
from llm_locust.client.streaming import ClientConfig, StreamingClient, _gevent_context
from llm_locust.config.tls import TlsSettings
from llm_locust.record import RequestRecord
from llm_locust.workload.tokenizer import ServerTokenizer, TokenizerError
from tests.locustproc import llm_locust_cli
from tests.simproc import running_sim
from tests.tlscerts import Certs, make_certs

SIM = ("--ttft-ms", "5", "--tpot-ms", "1", "--output-tokens", "4")


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def good(certs: Certs) -> Iterator[str]:
    cert, key = certs.server["127.0.0.1"]
    with running_sim(*SIM, "--tls-cert", str(cert), "--tls-key", str(key)) as url:
        yield url


@pytest.fixture(scope="module")
def wrong_name(certs: Certs) -> Iterator[str]:
    cert, key = certs.server["wrong.example"]
    with running_sim(*SIM, "--tls-cert", str(cert), "--tls-key", str(key)) as url:
        yield url


def stream(url: str, **tls: object) -> RequestRecord:
    client = StreamingClient(ClientConfig(host=url, model="llm-locust/sim-8b", request_timeout=10, **tls))
    record = RequestRecord(request_id="t", wall_start=0.0, t_sent=0.0)
    try:
        client.send(
            {"model": "llm-locust/sim-8b", "messages": [{"role": "user", "content": "hi"}], "stream": True},
            record,
        )
    finally:
        client.close()
    return record


def test_the_simulator_serves_https(good: str) -> None:
    assert good.startswith("https://127.0.0.1:")


def test_untrusted_certificate_is_refused(good: str) -> None:
    record = stream(good)
    assert record.outcome == "connect" and "CERTIFICATE_VERIFY_FAILED" in record.message, record.message
    listing = list_models(ClientConfig(host=good, model=None))
    assert listing.unreachable and "TLS certificate not accepted" in listing.problem, listing
    with pytest.raises(TokenizerError, match="CERTIFICATE_VERIFY_FAILED"):
        ServerTokenizer(good)


def test_private_ca_is_trusted_with_ca_cert(good: str, certs: Certs) -> None:
    record = stream(good, ca_cert=str(certs.ca))
    assert record.ok, record.message
    assert record.completion_tokens == 4
    listing = list_models(ClientConfig(host=good, model=None, ca_cert=str(certs.ca)))
    assert listing.models == ("llm-locust/sim-8b",)
    tokenizer = ServerTokenizer(good, tls=TlsSettings(ca_cert=str(certs.ca)))
    assert tokenizer.count_batch(["one two, three."]) == [5]


def test_wrong_host_is_refused_even_from_the_trusted_ca(wrong_name: str, certs: Certs) -> None:
    record = stream(wrong_name, ca_cert=str(certs.ca))
    assert record.outcome == "connect" and "mismatch" in record.message, record.message
    listing = list_models(ClientConfig(host=wrong_name, model=None, ca_cert=str(certs.ca)))
    assert listing.unreachable and "mismatch" in listing.problem, listing
    with pytest.raises(TokenizerError, match="mismatch"):
        ServerTokenizer(wrong_name, tls=TlsSettings(ca_cert=str(certs.ca)))


def test_insecure_accepts_any_certificate_and_warns(
    wrong_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    _gevent_context.cache_clear()  # the warning comes once per process and settings
    with caplog.at_level(logging.WARNING, logger="llm_locust"):
        record = stream(wrong_name, insecure=True)
    assert record.ok, record.message
    assert any("--insecure" in r.getMessage() and "not verified" in r.getMessage() for r in caplog.records)
    assert list_models(ClientConfig(host=wrong_name, model=None, insecure=True)).models
    assert ServerTokenizer(wrong_name, tls=TlsSettings(insecure=True)).count_batch(["a b"]) == [2]


def _run(url: str, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    res = llm_locust_cli(
        "run", "--host", url, "--headless", "-u", "1", "-t", "2s", "--prompt-tokens", "8",
        "--max-tokens", "4", "--results-dir", str(tmp_path), *args,
        timeout=90,
    )  # fmt: skip
    assert "Traceback" not in res.stdout + res.stderr
    return res.returncode, res.stdout, res.stderr


def test_a_run_refuses_an_untrusted_target_in_one_line(good: str, tmp_path: Path) -> None:
    code, _, err = _run(good, tmp_path / "r")
    assert code == 2
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1, err
    assert f"cannot reach {good}: TLS certificate not accepted" in errors[0]
    assert not (tmp_path / "r" / "requests.jsonl").exists()  # no load was sent


def test_a_run_refuses_a_wrong_host_name(wrong_name: str, certs: Certs, tmp_path: Path) -> None:
    code, _, err = _run(wrong_name, tmp_path / "r", "--ca-cert", str(certs.ca))
    assert code == 2 and "mismatch" in err, err


def test_a_run_against_a_private_ca(good: str, certs: Certs, tmp_path: Path) -> None:
    code, _, err = _run(good, tmp_path / "r", "--ca-cert", str(certs.ca), "--tokenizer", "server", "-t", "4s")
    assert code == 0, err[-2000:]
    rows = [json.loads(line) for line in (tmp_path / "r" / "requests.jsonl").read_text().splitlines()]
    assert rows and {r["outcome"] for r in rows} == {"ok"}, {(r["outcome"], r["message"]) for r in rows}


def test_a_run_with_insecure_warns(wrong_name: str, tmp_path: Path) -> None:
    code, _, err = _run(wrong_name, tmp_path / "r", "--insecure")
    assert code == 0, err[-2000:]
    assert "--insecure: TLS certificates are not verified" in err


def test_a_missing_ca_file_is_one_line_and_exit_2(good: str, tmp_path: Path) -> None:
    code, _, err = _run(good, tmp_path / "r", "--ca-cert", str(tmp_path / "nope.pem"))
    assert code == 2
    assert err.strip().splitlines() == [f"llm-locust: error: --ca-cert {tmp_path / 'nope.pem'}: no such file"]


def test_a_long_fast_stream_over_tls_keeps_every_token(certs: Certs) -> None:
    """200 tokens 0.2 ms apart: TLS records hold several events, OpenSSL buffers some; all timed."""
    cert, key = certs.server["127.0.0.1"]
    args = ("--ttft-ms", "2", "--tpot-ms", "0.2", "--output-tokens", "200")
    with running_sim(*args, "--tls-cert", str(cert), "--tls-key", str(key)) as url:
        records = [stream(url, ca_cert=str(certs.ca)) for _ in range(3)]
    for record in records:
        assert record.ok, record.message
        assert record.completion_tokens == 200 and record.finish_reason is not None
        assert len(record.chunk_times) == 200  # one content event per token
        assert record.chunk_times == sorted(record.chunk_times)
