"""Open-loop arrivals as one strategy: rate schedules and trace rows, shared out among workers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from llm_locust.load.arrivals import poisson
from llm_locust.load.sources import RateArrivals, TraceArrivals
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
