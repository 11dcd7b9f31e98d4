"""``llm-locust sim --model-file``: the calibrated engine served over the wire."""

from __future__ import annotations

import itertools
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from llm_locust.config.engine_model import EngineModel, Param
from tests.simclient import chat_body, content_events, metric, request
from tests.simproc import running_sim

STEP = 0.03
OVERHEAD = 0.25


def _model(tmp_path: Path) -> Path:
    values = {
        "prefill_per_token": 0.0,
        "decode_base": STEP,
        "decode_per_seq": 0.0,
        "decode_per_ctx_token": 0.0,
        "max_num_seqs": 4,
        "kv_cache_tokens": 100_000,
        "overhead": OVERHEAD,
    }
    path = tmp_path / "model.yaml"
    EngineModel(params={n: Param(v, v, v) for n, v in values.items()}, runs=("r",)).dump(path)
    return path


def test_the_model_files_step_time_overhead_and_limits_are_served(tmp_path: Path) -> None:
    path = _model(tmp_path)
    with running_sim("--model-file", str(path)) as url:
        ex = request(url, "POST", "/v1/chat/completions", chat_body(20, stream=True), timeout=30)
        events = content_events(ex)
        gaps = [b[0] - a[0] for a, b in itertools.pairwise(events)]
        assert statistics.median(gaps) == pytest.approx(STEP, abs=0.01)
        # the overhead, then one step, before the first token
        assert OVERHEAD + STEP - 0.01 <= events[0][0] - ex.t_sent <= OVERHEAD + STEP + 0.1
        assert metric(url, "llm_sim_info", mode="engine", model_file=str(path)) == 1
        assert metric(url, "vllm:cache_config_info", kv_cache_tokens="100000") == 1


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (("--decode-base-ms", "5"), "--decode-base-ms"),
        (("--gpus", "4"), "--gpus"),
        (("--ttft-ms", "5"), "--ttft-ms"),
    ],
)
def test_flags_the_model_file_gives_are_refused_in_one_line(
    tmp_path: Path, extra: tuple[str, ...], flag: str
) -> None:
    cmd = [sys.executable, "-m", "llm_locust.sim", "--model-file", str(_model(tmp_path)), *extra]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.count("\n") == 1 and f"argument {flag}:" in res.stderr


def test_a_missing_model_file_is_one_line(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "llm_locust.sim", "--model-file", str(tmp_path / "none.yaml")]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "argument --model-file:" in res.stderr
