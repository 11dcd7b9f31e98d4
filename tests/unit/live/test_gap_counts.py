"""The live view's second tier: a worker's batch of gaps, counted, merges into a master's
aggregate as the same histograms its own fills make; the run's histograms are its seconds,
merged as each ends (one fill per value)."""

from __future__ import annotations

import random

import msgpack
import numpy as np
import orjson
import pytest

from llm_locust.config.slo import parse_slo
from llm_locust.live import catalog as metrics
from llm_locust.live.aggregate import LATENCIES, LiveAggregate
from llm_locust.live.gap_counts import CHUNK, GapCounts, gap_edges
from llm_locust.record import RawJson
from llm_locust.results.bucket_counts import FixedBucketCounts
from llm_locust.results.histogram import same_counts
from tests.unit.live.test_aggregate import Clock, failed_row, ok_row, random_rows

EDGES = gap_edges(None, searching=False)
assert EDGES is not None
URLS = ["http://a:8000", "http://b:8000"]


def _rows(n: int, seed: int) -> list[dict]:
    """Successful, failed, client-stalled rows over two replicas and none; gaps on the ``le`` edges
    and beside them, a non-finite one."""
    rng = random.Random(seed)
    rows = random_rows(n, seed)
    for row in rows:
        row["replica"] = rng.choice([*URLS, None])
        if row["outcome"] == "ok" and rng.random() < 0.1:
            row["client_stall_s"] = 0.2  # counted, its latencies not
        if row["itl"] and rng.random() < 0.3:
            row["itl"] = [*row["itl"], 0.05, float(np.nextafter(0.05, 1)), 0.1, float(np.nextafter(0.1, 0))]
    rows.append(ok_row(n=4, itl=[0.01, float("nan"), 0.02], replica=URLS[0]))
    return rows


def _through_the_wire(counts: GapCounts) -> GapCounts:
    return GapCounts.from_data(msgpack.unpackb(msgpack.packb(counts.to_data()), raw=False))


def _counted_by_workers(rows: list[dict], clock: Clock, agg: LiveAggregate, per_second: int) -> None:
    """``rows`` as a master gets them from its workers: each second's batch counted by its worker,
    each row's gaps as JSON text."""
    for start in range(0, len(rows), per_second):
        batch = rows[start : start + per_second]
        counts = GapCounts(EDGES)
        for row in batch:
            counts.add(row)
        for row in batch:
            agg.add({**row, "itl": RawJson(orjson.dumps(row["itl"]))})
        agg.add_counts(_through_the_wire(counts))
        clock.t += 1.0


def _fed_directly(rows: list[dict], clock: Clock, agg: LiveAggregate, per_second: int) -> None:
    for start in range(0, len(rows), per_second):
        for row in rows[start : start + per_second]:
            agg.add(row)
        clock.t += 1.0


def test_a_workers_counts_merge_into_the_histograms_the_masters_own_fills_make() -> None:
    rows = _rows(600, seed=3)
    direct_clock, tier_clock = Clock(), Clock()
    direct = LiveAggregate(clock=direct_clock, window_s=5, endpoints=URLS)
    tiered = LiveAggregate(clock=tier_clock, window_s=5, endpoints=URLS)
    _fed_directly(rows, direct_clock, direct, per_second=50)
    _counted_by_workers(rows, tier_clock, tiered, per_second=50)
    for name in LATENCIES:
        assert same_counts(direct.overall[name], tiered.overall[name]), name
        assert same_counts(direct.buckets[name], tiered.buckets[name]), name
    assert direct.overall["itl"].sum == pytest.approx(tiered.overall["itl"].sum)
    assert direct.endpoints is not None and tiered.endpoints is not None
    for label, part in direct.endpoints.items():
        assert same_counts(part.buckets["itl"], tiered.endpoints[label].buckets["itl"]), label
    recent = direct.recent_histograms(direct_clock.t - 1), tiered.recent_histograms(tier_clock.t - 1)
    assert all(same_counts(recent[0][name], recent[1][name]) for name in LATENCIES)
    assert direct.snapshot(direct_clock.t - 1)["totals"] == tiered.snapshot(tier_clock.t - 1)["totals"]
    stalled = sum(1 for r in rows if r["outcome"] == "ok" and not r.get("client_stall_s"))
    assert direct.overall["ttft"].count == stalled  # the stalled rows' latencies are left out


def test_gaps_are_counted_a_chunk_at_a_time_and_all_of_them_by_the_batchs_end() -> None:
    counts = GapCounts(EDGES)
    counts.add(ok_row(n=CHUNK // 2))
    assert counts.log.count == 0  # waiting for more
    counts.add(ok_row(n=CHUNK // 2 + 2))
    assert counts.log.count == CHUNK  # a chunk: counted
    counts.add(ok_row(n=11))
    counts.add(failed_row())  # no latencies counted
    counts.add(ok_row(n=5, itl=["x", 0.5, None, 0.25]))  # a malformed row: its numbers
    data = _through_the_wire(counts)
    assert data.log.count == CHUNK + 10 + 2 and sum(c.count for c in data.le.values()) == data.log.count


def test_le_counts_of_an_array_are_the_slots_of_one_value_at_a_time() -> None:
    rng = np.random.default_rng(5)
    edges = np.asarray(EDGES)
    values = np.concatenate(
        [edges, np.nextafter(edges, 0), np.nextafter(edges, 1), rng.uniform(0, 100, 2000), [0.0, 1e-9, 1e9]]
    )
    many, one = FixedBucketCounts(EDGES), FixedBucketCounts(EDGES)
    many.add_many(values)
    for v in values.tolist():
        one.add(v)
    assert same_counts(many, one)
    searched = np.bincount(np.searchsorted(edges, values, side="left"), minlength=len(EDGES) + 1)
    assert many.counts.tolist() == searched.tolist()


def test_the_master_counts_itself_when_it_needs_the_values() -> None:
    assert gap_edges(None, searching=False) == metrics.buckets_with_thresholds(
        metrics.INTER_TOKEN_LATENCY.buckets or (), ()
    )
    assert gap_edges(None, searching=True) is None  # a capacity search judges steps on the gaps
    assert gap_edges(parse_slo("itl_p99<=50ms"), searching=False) is None  # checked per request
    assert gap_edges(parse_slo("ttft_p99<=500ms"), searching=False) == EDGES


def test_counts_that_are_not_counts_are_refused() -> None:
    good = GapCounts(EDGES)
    good.add(ok_row(n=20, replica=URLS[0]))
    data = good.to_data()
    for bad in (
        None,
        {**data, "log": {**data["log"], "layout": [1e-4, 3600.0, 0.01]}},  # another layout
        {**data, "log": {**data["log"], "count": 3}},  # counts that do not add up
        {**data, "le": {URLS[0]: {**data["le"][URLS[0]], "index": [99]}}},  # past the last edge
        {"edges": data["edges"]},
    ):
        with pytest.raises(ValueError, match="gap counts"):
            GapCounts.from_data(bad)
    agg = LiveAggregate(thresholds={"itl": [0.033]})
    with pytest.raises(ValueError, match="other le edges"):
        agg.add_counts(good)


def test_the_runs_histograms_are_its_seconds_merged_as_each_ends() -> None:
    clock = Clock()
    agg = LiveAggregate(clock=clock, window_s=2)
    for second in range(7):  # the ring of two slots wraps three times
        for _ in range(3):
            agg.add(ok_row(ttft=0.1 + second / 100, n=2))
        clock.t += 1.0
    assert agg.overall["ttft"].count == 21 and agg.overall["itl"].count == 21
    clock.t -= 5.0  # the clock steps back: the values go into the last second
    agg.add(ok_row(ttft=0.5, n=2))
    clock.t += 10.0
    agg.add(ok_row(ttft=0.6, n=2))
    assert agg.overall["ttft"].count == 23 and agg.overall["ttft"].max == pytest.approx(0.6)
    assert agg.recent()["latency"]["ttft"]["count"] == 1  # only the last second is in the window
    snap = agg.snapshot()
    assert snap["latency"]["ttft"]["count"] == 23
