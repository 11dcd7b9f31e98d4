"""Built-in profiles reproduce their traces: quantiles and the input/output relation."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from llm_locust.workload.profiles import PROFILE_DIR, PROFILES, load_profile

TRACES = Path(__file__).resolve().parents[4] / "shared/data/traces"
FILES = {
    "chat": "AzureLLMInferenceTrace_conv.csv",
    "code": "AzureLLMInferenceTrace_code.csv",
    "long-context": "conversation_trace.jsonl",
    "sharegpt": "sharegpt_8k_filtered_stats_llama2_tokenizer.csv",
}
LEVELS = [10, 25, 50, 75, 90, 95, 99]
N = 60_000

pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason=f"traces not found at {TRACES}")


def _trace(name: str) -> tuple[np.ndarray, np.ndarray]:
    path = TRACES / FILES[name]
    if path.suffix == ".jsonl":
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        return np.array([r["input_length"] for r in rows]), np.array([r["output_length"] for r in rows])
    with path.open(newline="") as f:
        rows = list(csv.reader(f))[1:]
    col = (1, 2) if "Azure" in path.name else (0, 1)
    return np.array([int(r[col[0]]) for r in rows]), np.array([int(r[col[1]]) for r in rows])


def _sample(name: str) -> tuple[np.ndarray, np.ndarray]:
    prof, rng = load_profile(name), np.random.default_rng(7)
    draws = [prof.draw(rng) for _ in range(N)]
    return np.array([d.input_tokens for d in draws]), np.array([d.output_tokens for d in draws])


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    rx, ry = np.argsort(np.argsort(x)), np.argsort(np.argsort(y))
    return float(np.corrcoef(rx, ry)[0, 1])


@pytest.fixture(scope="module", params=PROFILES)
def pair(request: pytest.FixtureRequest) -> tuple[str, tuple, tuple]:
    return request.param, _trace(request.param), _sample(request.param)


def _close(sample: np.ndarray, trace: np.ndarray, level: float) -> bool:
    """Within 5 % of the trace's quantile, or inside the trace's p-1..p+1 band (steep spots)."""
    got, want = np.percentile(sample, level), np.percentile(trace, level)
    lo, hi = np.percentile(trace, [max(level - 1, 0), min(level + 1, 100)])
    return abs(got - want) <= 0.05 * want or lo <= got <= hi


def test_quantiles_match_trace(pair: tuple) -> None:
    name, (ti, to), (si, so) = pair
    for col, s, t in (("input", si, ti), ("output", so, to)):
        bad = [lvl for lvl in LEVELS if not _close(s, t, lvl)]
        assert not bad, f"{name} {col}: p{bad} off: {np.percentile(s, bad)} vs {np.percentile(t, bad)}"


def test_joint_relation_kept(pair: tuple) -> None:
    name, (ti, to), (si, so) = pair
    assert abs(_spearman(si, so) - _spearman(ti, to)) < 0.05, name
    # conditional medians of output by input quartile follow the trace
    for q_lo, q_hi in ((0, 25), (75, 100)):
        lo, hi = np.percentile(ti, [q_lo, q_hi])
        want = np.median(to[(ti >= lo) & (ti <= hi)])
        got = np.median(so[(si >= lo) & (si <= hi)])
        assert abs(got - want) <= max(0.1 * want, 3), (name, q_lo, got, want)


def test_long_context_reuse_fraction() -> None:
    prof, rng = load_profile("long-context"), np.random.default_rng(1)
    draws = [prof.draw(rng) for _ in range(20_000)]
    reused = sum(min(d.reused_blocks * 512, d.input_tokens) for d in draws) / sum(
        d.input_tokens for d in draws
    )
    assert abs(reused - prof.meta["prefix"]["reused_token_fraction"]) < 0.05


def test_profile_files_are_small() -> None:
    assert sum(p.stat().st_size for p in PROFILE_DIR.iterdir()) < 1_000_000
    assert (PROFILE_DIR / "NOTICE.md").is_file()
