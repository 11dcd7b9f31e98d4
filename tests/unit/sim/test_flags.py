"""Which mode a command line means (issue 9: no option silently ignored), and the time scale."""

from __future__ import annotations

import argparse

import pytest

from llm_locust.sim.app import SimConfig
from llm_locust.sim.cli import add_arguments, build_config
from llm_locust.sim.flags import FlagError, SimMode
from llm_locust.sim.server import replica_configs


def _config(*argv: str) -> SimConfig:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return build_config(parser.parse_args(list(argv)))


@pytest.mark.parametrize(
    ("argv", "mode"),
    [
        ((), "fixed"),
        (("--ttft-ms", "5"), "fixed"),
        (("--max-num-seqs", "8"), "engine"),
        (("--kv-cache-tokens", "1000"), "engine"),
        (("--no-prefix-caching",), "engine"),
        (("--gpus", "4", "--model", "70b"), "engine"),
        (("--mode", "engine"), "engine"),
        (("--mode", "fixed", "--tpot-ms", "3"), "fixed"),
    ],
)
def test_mode_follows_the_options_given(argv: tuple[str, ...], mode: str) -> None:
    assert _config(*argv).mode == mode
    assert _config(*argv).mode is SimMode(mode)  # the member, spelt as --mode spells it


def test_engine_only_option_selects_engine_mode_with_its_value() -> None:
    cfg = _config("--max-num-seqs", "8")
    assert cfg.mode == "engine" and cfg.engine.max_num_seqs == 8


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (("--max-num-seqs", "8", "--ttft-ms", "5"), "--ttft-ms"),
        (("--mode", "fixed", "--max-num-seqs", "8"), "--max-num-seqs"),
        (("--mode", "engine", "--tpot-ms", "3"), "--tpot-ms"),
        (("--mode", "fixed", "--gpus", "4"), "--gpus"),
        (("--gpus", "4", "--model", "70b", "--decode-base-ms", "3"), "--decode-base-ms"),
        (("--gpus", "8", "--tp", "4", "--model", "70b"), "--gpus"),
        (("--gpus", "1", "--model", "70b"), "--gpus"),
        (("--gpus", "4", "--model", "gpt-4o"), "--model"),
        (("--slowdown", "2", "--speedup", "2"), "--speedup"),
    ],
)
def test_contradictions_are_errors_naming_the_flag(argv: tuple[str, ...], flag: str) -> None:
    with pytest.raises(FlagError) as e:
        _config(*argv)
    assert e.value.flag == flag


def test_deployment_limits_may_be_overridden() -> None:
    cfg = _config("--gpus", "4", "--model", "70b", "--max-num-seqs", "32", "--no-prefix-caching")
    assert cfg.engine.max_num_seqs == 32 and not cfg.engine.prefix_caching
    assert cfg.engine.max_num_batched_tokens == 8192 and cfg.deployment is not None


def test_speedup_divides_every_simulated_time() -> None:
    slow, fast = (
        _config("--gpus", "4", "--model", "70b"),
        _config("--gpus", "4", "--model", "70b", "--speedup", "10"),
    )
    for name in ("decode_base", "decode_per_ctx_token", "compute_per_token"):
        assert getattr(fast.engine, name) == pytest.approx(getattr(slow.engine, name) / 10)
    assert fast.engine.kv_cache_tokens == slow.engine.kv_cache_tokens
    assert fast.speedup == 10 and slow.speedup == 1
    fixed = _config("--ttft-ms", "100", "--speedup", "4")
    assert fixed.ttft == pytest.approx(0.025)


def test_degradation_rates_are_per_wall_second() -> None:
    cfg = _config("--degrade-tpot-ms-per-min", "6", "--kv-leak-tokens-per-min", "600", "--speedup", "10")
    assert cfg.drift.tpot_per_s == pytest.approx(0.0001)  # 6 ms per 60 s, not scaled
    assert cfg.drift.kv_leak_per_s == pytest.approx(10.0)


def test_replicas_are_independent_and_reproducible() -> None:
    configs = replica_configs(_config("--seed", "7"), 3)
    assert [c.seed for c in configs] == [7, 8, 9] and [c.replica for c in configs] == [0, 1, 2]
    assert [c.seed for c in replica_configs(_config(), 2)] == [None, None]
