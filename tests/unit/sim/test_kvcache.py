"""The KV ledger and its prefix cache, against hand-worked block arithmetic (block size 4)."""

from __future__ import annotations

import pytest

from llm_locust.sim.engine import Seq
from llm_locust.sim.kvcache import KvCache, block_hashes

BS = 4


def _seq(ids: list[int], output: int = 2) -> Seq:
    return Seq(prompt_tokens=len(ids), output_tokens=output, block_hashes=block_hashes(ids, BS))


def test_block_hashes_are_chained_and_only_for_full_blocks() -> None:
    a = block_hashes([1, 2, 3, 4, 5, 6, 7, 8, 9], BS)
    assert len(a) == 2  # the 9th token is a partial block
    assert block_hashes([1, 2, 3, 4, 5, 6, 7, 8], BS) == a
    b = block_hashes([0, 2, 3, 4, 5, 6, 7, 8], BS)
    assert a[0] != b[0] and a[1] != b[1]  # block 1 is equal but follows a different block 0
    assert block_hashes([1, 2, 3], BS) == ()


def test_second_request_hits_the_prefix_but_computes_its_last_token() -> None:
    kv = KvCache(capacity=1000, block_size=BS, caching=True)
    ids = list(range(12))  # 3 full blocks
    first = _seq(ids)
    assert kv.admit(first) and first.cached_tokens == 0
    kv.prefilled(first)
    second = _seq(ids)
    assert kv.admit(second)
    # (12 - 1) // 4 = 2 blocks may hit: the last prompt token is always computed
    assert second.cached_tokens == 8
    assert (kv.queries, kv.hits) == (24, 8)
    # shared blocks count once: 14 tokens for the first, 14 - 8 for the second
    assert kv.used == 14 + 6


def test_no_hit_before_the_first_prefill_completes() -> None:
    kv = KvCache(capacity=1000, block_size=BS, caching=True)
    ids = list(range(16))
    first, second = _seq(ids), _seq(ids)
    assert kv.admit(first) and kv.admit(second)
    assert second.cached_tokens == 0  # nothing computed yet
    kv.prefilled(first)
    kv.prefilled(second)  # computed the same blocks twice: keeps the shared copy
    assert kv.used == 18 + 2  # one copy of the 4 blocks + both private tails/outputs
    kv.release(first)
    kv.release(second)
    assert kv.used == 0 and kv.cached_blocks == 4


def test_released_blocks_stay_cached_and_free_the_memory() -> None:
    kv = KvCache(capacity=100, block_size=BS, caching=True)
    ids = list(range(20))
    first = _seq(ids)
    kv.admit(first)
    kv.prefilled(first)
    kv.release(first)
    assert kv.used == 0 and kv.usage == 0.0  # usage counts held tokens only
    again = _seq(ids)
    kv.admit(again)
    assert again.cached_tokens == 16


def test_cached_blocks_are_evicted_least_recently_released_first() -> None:
    kv = KvCache(capacity=40, block_size=BS, caching=True)
    a, b = _seq(list(range(8))), _seq(list(range(100, 108)))
    for s in (a, b):
        kv.admit(s)
        kv.prefilled(s)
    kv.release(a)  # a's 2 blocks released first
    kv.release(b)
    assert kv.cached_blocks == 4
    big = Seq(prompt_tokens=30, output_tokens=2)  # needs 32 of 40: only 8 tokens of cache survive
    assert kv.admit(big)
    assert kv.cached_blocks == 2
    kv.release(big)
    late_b, late_a = _seq(list(range(100, 108))), _seq(list(range(8)))
    assert kv.admit(late_b) and kv.admit(late_a)
    assert late_b.cached_tokens == 4  # b's blocks survived (one may hit: (8 - 1) // 4)
    assert late_a.cached_tokens == 0  # a's were evicted


def test_admission_refused_when_held_tokens_would_exceed_capacity() -> None:
    kv = KvCache(capacity=20, block_size=BS)
    assert kv.admit(Seq(prompt_tokens=10, output_tokens=5))
    assert not kv.admit(Seq(prompt_tokens=4, output_tokens=2))
    assert kv.used == 15


def test_caching_off_never_hits() -> None:
    kv = KvCache(capacity=1000, block_size=BS, caching=False)
    ids = list(range(16))
    first = _seq(ids)
    kv.admit(first)
    kv.prefilled(first)
    second = _seq(ids)
    kv.admit(second)
    assert second.cached_tokens == 0 and kv.used == 36


def test_abort_mid_prefill_frees_everything_and_caches_nothing() -> None:
    kv = KvCache(capacity=1000, block_size=BS, caching=True)
    s = _seq(list(range(16)))
    kv.admit(s)
    kv.release(s)  # before prefilled(): its blocks were never computed
    assert kv.used == 0 and kv.cached_blocks == 0


def test_leak_reduces_capacity_and_shows_in_usage() -> None:
    kv = KvCache(capacity=100, block_size=BS)
    kv.leak(30)
    assert kv.usage == pytest.approx(0.3)
    assert not kv.admit(Seq(prompt_tokens=60, output_tokens=11))
    assert kv.admit(Seq(prompt_tokens=60, output_tokens=10))
    kv.leak(80)  # never more than the free room
    assert kv.leaked == 30 and kv.usage == 1.0
