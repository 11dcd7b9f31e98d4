"""Distributions, the length guard, the server tokenizer (against a stub), calibration, accuracy."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from llm_locust.workload.build import build_workload
from llm_locust.workload.distributions import (
    Distribution,
    DistributionKind,
    LengthSample,
    SpecError,
    parse_distribution,
)
from llm_locust.workload.limits import LengthGuard
from llm_locust.workload.tokenizer import LengthCalibrator, ServerTokenizer, approx_count
from tests.unit.workload.args import workload_config


@pytest.mark.parametrize(
    ("text", "kind", "params"),
    [
        ("512", "fixed", {"value": 512}),
        ("fixed:64", "fixed", {"value": 64}),
        ("uniform:100,2000", "uniform", {"min": 100, "max": 2000}),
        ("normal:mean=100,std=10,min=50", "normal", {"mean": 100, "std": 10, "min": 50}),
        (
            "lognormal:mean=1000,std=400,min=10,max=8000",
            "lognormal",
            {"mean": 1000, "std": 400, "min": 10, "max": 8000},
        ),
    ],
)
def test_parse_distribution(text: str, kind: str, params: dict) -> None:
    d = parse_distribution(text)
    assert (d.kind, d.params) == (kind, params)
    assert d.kind is DistributionKind(kind) and str(d.kind) == kind  # the member, spelt as before
    assert parse_distribution(d.spec()) == d
    assert Distribution(kind, d.params) == d  # a kind given as text becomes the member


def test_a_distribution_of_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="'exponential' is not a valid DistributionKind"):
        Distribution("exponential", {"mean": 3.0})


@pytest.mark.parametrize(
    "text",
    [
        "gauss:1",
        "uniform:5",
        "uniform:9,3",
        "normal:mean=1",
        "fixed:0",
        "fixed:x",
        "lognormal:mean=5,std=1,foo=2",
    ],
)
def test_bad_distribution(text: str) -> None:
    with pytest.raises(SpecError):
        parse_distribution(text)


def test_lognormal_moments_and_bounds() -> None:
    d, rng = parse_distribution("lognormal:mean=1000,std=400,min=10,max=8000"), np.random.default_rng(0)
    xs = np.array([d.draw(rng) for _ in range(20_000)])
    assert abs(xs.mean() - 1000) < 20 and abs(xs.std() - 400) < 20
    u = parse_distribution("uniform:3,5")
    assert {u.draw(rng) for _ in range(200)} == {3, 4, 5}


def test_guard_clip_and_reject() -> None:
    clip = LengthGuard(100, "clip")
    assert clip.draw(lambda: LengthSample(150, 30)) == LengthSample(99, 1)
    assert clip.clipped == 1 and "clipped" in (clip.message() or "")
    rej, draws = LengthGuard(100, "reject"), iter([LengthSample(90, 30), LengthSample(50, 20)])
    assert rej.draw(lambda: next(draws)) == LengthSample(50, 20)
    assert rej.rejected == 1


def test_profile_respects_max_model_len() -> None:
    w = build_workload(
        workload_config("--workload", "chat", "--length-policy", "reject"), {"max_model_len": 1024}
    )
    src = w.source(0)
    specs = [src.next_request() for _ in range(300)]
    assert all(s.target_input_tokens + s.max_tokens <= 1024 for s in specs)
    assert w.guard.rejected > 0


class _Stub(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/tokenize" or "prompt" not in body:
            self.send_response(404)
            self.end_headers()
            return
        n = approx_count(body["prompt"])
        reply = json.dumps({"count": n, "tokens": list(range(n)), "max_model_len": 4096}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def stub_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_server_tokenizer_against_stub(stub_url: str) -> None:
    tok = ServerTokenizer(stub_url)
    assert tok.max_model_len == 4096
    assert tok.count_batch(["Hello, world.", "one two"]) == [4, 2]
    opts = workload_config("--tokenizer", "server", "--input-tokens", "uniform:10,200")
    w = build_workload(opts, {"base_url": stub_url})
    assert w.guard.max_model_len == 4096  # advertised by the tokenize endpoint
    s = w.source(0).next_request()
    assert tok.count_batch([s.prompt]) == [s.target_input_tokens]


def test_server_tokenizer_unreachable() -> None:
    from llm_locust.workload.build import WorkloadError

    with pytest.raises(WorkloadError, match="no tokenize endpoint"):
        build_workload(workload_config("--tokenizer", "server"), {"base_url": "http://127.0.0.1:9"})


def test_calibrator_learns_template_overhead() -> None:
    cal = LengthCalibrator()
    assert cal.approx_for(100) == 100
    for n in range(50, 1000, 50):
        cal.observe(n, int(12 + 1.25 * n))
    assert abs(cal.approx_for(1262) - 1000) <= 1
