"""A trace's prefix reuse: sessions, the hit ceiling, sessions kept on one worker and one replica."""

from __future__ import annotations

import pytest

from llm_locust.load.replicas import Balancer
from llm_locust.load.sources import TraceArrivals
from llm_locust.load.trace_reuse import hit_ceiling, with_sessions
from llm_locust.load.traces import Trace, TraceEntry


def _e(t: float, n: int, ids: tuple[int, ...]) -> TraceEntry:
    return TraceEntry(t, n, 4, ids)


def test_ceiling_counts_leading_blocks_computed_before_and_stops_at_the_first_miss() -> None:
    rows = [
        _e(0, 250, (1, 2, 3)),  # blocks of 100: 100, 100, 50 (nothing before)
        _e(1, 300, (1, 2, 3)),  # 1, 2 whole; 3: 50 of its 100 computed before, the run stops there
        _e(2, 260, (1, 9, 3)),  # 1 hits; 9 new: the run stops, 3 after it does not count
        _e(3, 120, (1, 2)),  # 1 whole, then 20 tokens of 2 (100 computed before)
    ]
    reusable, prompt = hit_ceiling(rows, 100)
    assert prompt == 250 + 300 + 260 + 120
    assert reusable == (0) + (100 + 100 + 50) + (100) + (100 + 20)


def test_sessions_follow_the_first_block_no_conversation_shares() -> None:
    # block 0 is everyone's system prompt; each conversation then has its own blocks
    rows = []
    for turn in range(3):
        for conv in range(4):
            own = tuple(100 * (conv + 1) + j for j in range(turn + 1))
            rows.append(_e(turn * 10 + conv, 64 * (len(own) + 1) + 10, (0, *own, 9000 + 10 * conv + turn)))
    trace, reuse = with_sessions(Trace(rows, "mooncake", "t.jsonl"), 64)
    assert reuse is not None and reuse.sessions == 4
    sessions = [e.session for e in trace.entries]
    assert sessions == [0, 1, 2, 3] * 3
    arrivals = TraceArrivals(trace, reuse)
    for worker in (0, 1):  # whole sessions per worker: 0 and 2 on worker 0, 1 and 3 on worker 1
        mine = [entry.session for _, entry in arrivals.for_worker(worker, 2)]
        assert sorted(set(mine)) == [worker, worker + 2] and len(mine) == 6
    assert arrivals.describe()["trace"]["prefix_reuse"]["hit_ceiling"] == pytest.approx(reuse.ceiling)


def test_a_trace_without_hash_ids_keeps_round_robin() -> None:
    trace = Trace([TraceEntry(float(i), 10, 2) for i in range(6)], "azure", "t.csv")
    same, reuse = with_sessions(trace, 512)
    assert reuse is None and same is trace
    assert [e.offset_s for _, e in TraceArrivals(trace).for_worker(1, 2)] == [1.0, 3.0, 5.0]


def test_a_sessions_replica_is_the_same_in_every_process() -> None:
    urls = ("http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3")
    first, second = Balancer(urls, "least-in-flight", 0), Balancer(urls, "round-robin", 2)
    for k in range(30):
        sid = f"trace-{k}"
        a, b = first.acquire_for(sid), second.acquire_for(sid)
        assert a == b and first.acquire_for(sid) == a  # whatever the policy or the start
    assert all(n > 0 for n in first.picked)
