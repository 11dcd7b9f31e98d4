"""Unit tests for the pure continuous-batching model (no sockets, no clock)."""

from __future__ import annotations

import pytest

from llm_locust.sim.engine import Engine, EngineConfig, Seq, SeqState


def _run(engine: Engine, max_steps: int = 100_000) -> list[tuple[float, list[Seq]]]:
    """Step until idle; returns (step end time, batch) per step."""
    t = 0.0
    out = []
    for _ in range(max_steps):
        if not engine.has_work:
            return out
        result = engine.step()
        t += result.duration
        out.append((t, result.batch))
    raise AssertionError("engine did not drain")


def _first_token_times(steps: list[tuple[float, list[Seq]]]) -> dict[int, float]:
    seen: dict[int, float] = {}
    for t, batch in steps:
        for s in batch:
            seen.setdefault(id(s), t)
    return seen


def test_batch_limit_respected_and_excess_waits() -> None:
    engine = Engine(EngineConfig(max_num_seqs=4, kv_cache_tokens=10**9))
    seqs = [Seq(prompt_tokens=10, output_tokens=5) for _ in range(10)]
    for s in seqs:
        engine.add(s)
    first = engine.step()
    assert len(first.batch) == 4
    assert len(engine.waiting) == 6
    steps = [(0.0, first.batch), *_run(engine)]
    assert max(len(b) for _, b in steps) == 4
    assert all(s.state == "finished" and s.generated == 5 for s in seqs)


def test_queueing_makes_ttft_explode_past_max_num_seqs() -> None:
    cfg = EngineConfig(max_num_seqs=8, kv_cache_tokens=10**9)
    engine = Engine(cfg)
    seqs = [Seq(prompt_tokens=100, output_tokens=50) for _ in range(24)]
    for s in seqs:
        engine.add(s)
    firsts = _first_token_times(_run(engine))
    ttft = [firsts[id(s)] for s in seqs]
    # The first wave gets a token after one step; the third wave waits for two full generations.
    assert max(ttft[:8]) < 0.1
    assert min(ttft[16:]) > 2 * 49 * cfg.decode_base
    assert ttft == sorted(ttft)  # FIFO


def test_kv_budget_respected() -> None:
    engine = Engine(EngineConfig(max_num_seqs=100, kv_cache_tokens=1000))
    seqs = [Seq(prompt_tokens=200, output_tokens=100) for _ in range(6)]  # 300 KV each
    for s in seqs:
        engine.add(s)
    result = engine.step()
    assert len(result.batch) == 3  # 3 * 300 <= 1000 < 4 * 300
    assert engine.kv_reserved == 900
    while engine.has_work:
        engine.step()
        assert engine.kv_reserved <= 1000
    assert engine.kv_reserved == 0


def test_request_larger_than_cache_is_rejected() -> None:
    engine = Engine(EngineConfig(kv_cache_tokens=100))
    with pytest.raises(ValueError, match="KV cache"):
        engine.add(Seq(prompt_tokens=90, output_tokens=20))


def test_fifo_head_of_line_blocks() -> None:
    engine = Engine(EngineConfig(max_num_seqs=10, kv_cache_tokens=1000))
    big, small_a, small_b = Seq(600, 10), Seq(500, 10), Seq(10, 10)
    for s in (big, small_a, small_b):
        engine.add(s)
    engine.step()
    assert big.state == "running"
    assert small_a.state == "waiting" and small_b.state == "waiting"  # small_b waits behind small_a


def test_decode_step_time_grows_with_batch() -> None:
    cfg = EngineConfig(decode_base=0.008, decode_per_seq=0.00025, prefill_per_token=0.0)

    def steady_step(n: int) -> float:
        engine = Engine(cfg)
        for _ in range(n):
            engine.add(Seq(prompt_tokens=10, output_tokens=10))
        engine.step()
        return engine.step().duration

    d1, d32, d64 = steady_step(1), steady_step(32), steady_step(64)
    assert d1 < d32 < d64
    assert d64 == pytest.approx(0.008 + 64 * 0.00025)


def test_prefill_cost_only_in_admission_step() -> None:
    cfg = EngineConfig(decode_base=0.01, decode_per_seq=0.0, prefill_per_token=0.001)
    engine = Engine(cfg)
    engine.add(Seq(prompt_tokens=100, output_tokens=3))
    assert engine.step().duration == pytest.approx(0.01 + 0.1)
    assert engine.step().duration == pytest.approx(0.01)


def test_abort_frees_slot_and_kv() -> None:
    engine = Engine(EngineConfig(max_num_seqs=1, kv_cache_tokens=10**6))
    a, b = Seq(10, 100), Seq(10, 100)
    assert a.state is SeqState.NEW
    engine.add(a)
    engine.add(b)
    engine.step()
    assert (a.state, b.state) == (SeqState.RUNNING, SeqState.WAITING)
    assert b.state == "waiting"  # a state spells as it did
    engine.abort(a)
    assert engine.kv_reserved == 0 and a.state is SeqState.ABORTED
    result = engine.step()
    assert result.batch == [b]
    engine.abort(b)
    engine.abort(b)  # idempotent
    assert not engine.has_work and b.state is SeqState.ABORTED


def test_a_sequence_that_reaches_its_length_is_finished() -> None:
    engine = Engine(EngineConfig())
    seq = Seq(10, 2)
    engine.add(seq)
    while engine.has_work:
        engine.step()
    assert seq.state is SeqState.FINISHED and engine.kv_reserved == 0
    engine.abort(seq)  # a finished sequence is left as it is
    assert seq.state is SeqState.FINISHED


def test_cli_converts_ms_to_seconds_with_slowdown() -> None:
    import argparse

    from llm_locust.sim.cli import add_arguments, build_config

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    cfg = build_config(parser.parse_args(["--ttft-ms", "100", "--tpot-ms", "20", "--slowdown", "2"]))
    assert cfg.ttft == pytest.approx(0.2) and cfg.tpot == pytest.approx(0.04)
    assert cfg.engine.decode_base == pytest.approx(0.016)
    assert cfg.mode == "fixed" and cfg.model == "llm-locust/sim-8b" and cfg.max_model_len == 32768


# -- chunked prefill, prefix caching, the roofline step -----------------------------------------


def test_chunked_prefill_splits_a_long_prompt_and_the_first_token_waits_for_the_last_chunk() -> None:
    cfg = EngineConfig(
        decode_base=0.01, decode_per_seq=0.0, prefill_per_token=0.001, max_num_batched_tokens=100
    )
    engine = Engine(cfg)
    s = Seq(prompt_tokens=250, output_tokens=3)
    engine.add(s)
    durations, tokens = [], []
    while engine.has_work:
        r = engine.step()
        durations.append(r.duration)
        tokens.append(len(r.batch))
    # chunks of 100, 100, 50; the third step carries the first token, then two decode steps
    assert durations == pytest.approx([0.11, 0.11, 0.06, 0.01, 0.01])
    assert tokens == [0, 0, 1, 1, 1]


def test_decodes_take_budget_first_and_a_new_prompt_gets_what_is_left() -> None:
    cfg = EngineConfig(
        max_num_batched_tokens=10, prefill_per_token=0.001, decode_base=0.0, decode_per_seq=0.0
    )
    engine = Engine(cfg)
    runners = [Seq(prompt_tokens=1, output_tokens=50) for _ in range(4)]
    for s in runners:
        engine.add(s)
    engine.step()  # all four prefilled (4 tokens) and got their first token
    late = Seq(prompt_tokens=20, output_tokens=2)
    engine.add(late)
    r = engine.step()
    assert len(r.batch) == 4 and r.prefill_tokens == 6  # 10 - 4 decodes
    r = engine.step()
    assert r.prefill_tokens == 6 and late not in r.batch
    r = engine.step()
    assert r.prefill_tokens == 6
    r = engine.step()
    assert r.prefill_tokens == 2 and late in r.first  # 6 + 6 + 6 + 2 = 20


def test_prefix_cache_hit_skips_prefill_time() -> None:
    cfg = EngineConfig(
        decode_base=0.0, decode_per_seq=0.0, prefill_per_token=0.001, prefix_caching=True, block_size=16
    )
    engine = Engine(cfg)
    ids = tuple(range(10))  # stand-in hashes of 10 full blocks = 160 tokens
    a = Seq(prompt_tokens=161, output_tokens=1, block_hashes=ids)
    engine.add(a)
    assert engine.step().duration == pytest.approx(0.161)
    b = Seq(prompt_tokens=161, output_tokens=1, block_hashes=ids)
    engine.add(b)
    r = engine.step()
    assert b.cached_tokens == 160 and r.prefill_tokens == 1
    assert r.duration == pytest.approx(0.001)
    assert (engine.kv.queries, engine.kv.hits) == (322, 160)


def test_abort_mid_prefill_frees_kv_and_the_slot() -> None:
    engine = Engine(EngineConfig(max_num_seqs=1, max_num_batched_tokens=10, kv_cache_tokens=1000))
    a, b = Seq(100, 5), Seq(10, 5)
    engine.add(a)
    engine.add(b)
    engine.step()
    assert a.state == "running" and a.computed == 10 and engine.kv_reserved == 105
    engine.abort(a)
    assert engine.kv_reserved == 0 and engine.kv_usage == 0.0
    engine.step()
    assert b.state == "running"


def test_roofline_step_is_the_slower_of_memory_and_compute() -> None:
    cfg = EngineConfig(
        decode_base=0.010,
        decode_per_ctx_token=1e-6,
        compute_per_token=1e-4,
        decode_per_seq=0.0,
        prefill_per_token=0.0,
    )
    # batch 8, context 2000: memory 12 ms, compute 0.8 ms -> memory-bound
    assert cfg.step_duration(8, 0, 2000) == pytest.approx(0.012)
    # plus a 1000-token prefill chunk: compute 100.8 ms -> compute-bound
    assert cfg.step_duration(8, 1000, 2000) == pytest.approx(0.1008)


def test_a_step_never_admits_a_request_sent_after_it_began() -> None:
    engine = Engine(EngineConfig())
    early, late = Seq(10, 2, arrival=0.0), Seq(10, 2, arrival=1.0)
    engine.add(early)
    engine.add(late)
    assert engine.step(now=0.5).admitted == [early]
    assert engine.step(now=1.0).admitted == [late]
