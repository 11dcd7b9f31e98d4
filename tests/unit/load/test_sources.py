"""Open-loop arrivals as one strategy: rate schedules and trace rows, shared out among workers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from llm_locust.config.build import build_config
from llm_locust.load.arrivals import poisson
from llm_locust.load.plan import FOREVER, LoadPlan, build_load_plan
from llm_locust.load.sources import RateArrivals, TraceArrivals, before_end
from llm_locust.load.stages import parse_rate_ramp
from llm_locust.load.traces import load_trace


def _mooncake(tmp_path, rows: list[dict]) -> str:
    path = tmp_path / "trace.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_trace_rows_round_robin_over_workers(tmp_path) -> None:
    rows = [{"timestamp": 100 * i, "input_length": i, "output_length": 1} for i in range(7)]
    trace = load_trace(_mooncake(tmp_path, rows))
    source = TraceArrivals(trace)
    parts = [list(source.for_worker(i, 3)) for i in range(3)]
    assert sorted(entry.input_tokens for p in parts for _, entry in p) == list(range(7))
    assert all(offset == entry.offset_s for p in parts for offset, entry in p)
    assert source.describe()["trace"]["requests"] == 7
    with pytest.raises(ValueError):
        list(source.for_worker(3, 3))


def test_rate_arrivals_of_all_workers_are_the_single_process_schedule() -> None:
    stages = parse_rate_ramp("5,20", "10s")
    source = RateArrivals(poisson(1.0), stages, seed=3)
    whole = [offset for offset, entry in source.for_worker(0, 1)]
    assert all(entry is None for _, entry in source.for_worker(0, 1))
    for workers in (2, 3):
        union = sorted(o for i in range(workers) for o, _ in source.for_worker(i, workers))
        assert np.array_equal(union, whole)
    assert 150 < len(whole) < 350  # 5/s and 20/s for 10 s each
    assert source.describe() == {"arrival": {"kind": "poisson", "burstiness": 1.0}}
    assert json.dumps(source.describe()) == '{"arrival": {"kind": "poisson", "burstiness": 1.0}}'
    assert type(source.describe()["arrival"]["kind"]) is str  # type: ignore[index]  # plain JSON, no enum


def test_a_workers_share_cut_at_the_masters_end_is_the_masters_share() -> None:
    """Locust passes workers none of its own options: a worker's ``--request-rate`` plan has no
    ``-t``, its rate stage runs "forever" (2026-12-02: a distributed ``-t 8s`` run went on sending
    for 21 s more, while requests were in flight). Cut at the master's end, each worker's share is
    the master's plan's share, arrival for arrival, and nothing after the end."""
    master = build_load_plan(build_config({"request_rate": "20", "run_time": "8s"}, environ={}).load)
    worker = build_load_plan(build_config({"request_rate": "20"}, environ={}).load)
    end = master.schedule_end
    assert end == 8.0 and worker.schedule_end == FOREVER
    assert master.arrivals is not None and worker.arrivals is not None
    for index in range(2):
        planned = list(master.arrivals.for_worker(index, 2))
        cut = list(before_end(worker.arrivals.for_worker(index, 2), end))
        assert cut == planned and 60 < len(cut) < 100  # ~80 each: 20/s for 8 s on two workers
        assert max(offset for offset, _ in cut) < end


def test_before_end_stops_at_the_first_arrival_due_at_the_end_or_after() -> None:
    arrivals = [(0.0, None), (1.0, None), (2.0, None), (3.0, None)]
    assert list(before_end(iter(arrivals), 2.0)) == arrivals[:2]  # a stage is [start, end)
    assert list(before_end(iter(arrivals), None)) == arrivals  # no end said: the plan's own
    assert list(before_end(iter(arrivals), 0.0)) == []


def test_a_search_and_locusts_own_options_have_no_schedule_end() -> None:
    assert LoadPlan().schedule_end is None
    search = build_load_plan(
        build_config({"search": "rate", "slo": "e2e_p95<=3.2s", "run_time": "60s"}, environ={}).load
    )
    assert search.search is not None and search.schedule_end is None
