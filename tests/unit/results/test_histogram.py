"""Mergeable histograms: quantile error bound, exact merging, serialization."""

from __future__ import annotations

import bisect
import json
import math

import msgpack
import numpy as np
import pytest

from llm_locust.results.bucket_counts import FixedBucketCounts
from llm_locust.results.histogram import LOG_SLOTS_FROM, LogHistogram

QS = [0.0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1.0]


def _lognormal(seed: int, n: int, mu: float = -1.0, sigma: float = 1.5) -> np.ndarray:
    return np.random.default_rng(seed).lognormal(mu, sigma, n)


@pytest.mark.parametrize(
    ("seed", "mu", "sigma", "n"), [(1, -1.0, 1.5, 50_000), (2, -4.0, 0.5, 7), (3, 1.0, 2.5, 20_001)]
)
def test_quantiles_within_relative_error_of_numpy(seed: int, mu: float, sigma: float, n: int) -> None:
    values = np.clip(_lognormal(seed, n, mu, sigma), 1e-5, 3600.0)  # inside the guaranteed range
    hist = LogHistogram()
    hist.add_many(values)
    exact = np.quantile(values, QS)
    estimate = np.asarray(hist.quantiles(QS))
    bound = hist.relative_error * (1 + 1e-9)
    assert np.all(np.abs(estimate - exact) <= bound * exact)
    assert hist.quantile(0.0) == values.min() and hist.quantile(1.0) == values.max()
    assert hist.count == n and hist.min == values.min() and hist.max == values.max()
    assert hist.mean == pytest.approx(values.mean(), rel=1e-12)


def test_merge_of_parts_equals_whole() -> None:
    values = _lognormal(4, 30_000)
    values[:5] = [0.0, 1e-7, 5000.0, 1e-5, 3600.0]  # underflow, overflow and edge cases too
    whole = LogHistogram()
    whole.add_many(values)
    parts = [LogHistogram() for _ in range(4)]
    for i, part in enumerate(parts):
        chunk = values[i::4]
        if i % 2:
            for v in chunk:
                part.add(float(v))
        else:
            part.add_many(chunk)
    merged = LogHistogram()
    for part in reversed(parts):
        merged.merge(part)
    assert merged == whole
    assert np.array_equal(merged.counts, whole.counts)
    assert merged.sum == pytest.approx(whole.sum, rel=1e-12)
    assert merged.quantiles(QS) == whole.quantiles(QS)


def test_add_and_add_many_agree_on_bucket_edges() -> None:
    probe = LogHistogram()
    edges = np.asarray(probe._edge_list)
    values = np.concatenate([edges, np.nextafter(edges, 0), np.nextafter(edges, np.inf)])
    one, many = LogHistogram(), LogHistogram()
    for v in values:
        one.add(float(v))
    many.add_many(values)
    assert one == many


@pytest.mark.parametrize("layout", [(), (1e-4, 3600.0, 0.01), (1e-3, 10.0, 0.05), (0.5, 2.0, 0.3)])
def test_add_many_slots_every_value_as_bisect_does(layout: tuple[float, ...]) -> None:
    """add_many's slots (from the logarithm, then checked against the edges) are bisect's, for
    values on, just under and just over every edge, 0 (coalesced chunks), negatives, values
    outside the range and a random spread."""
    hist = LogHistogram(*layout)
    edge_list = hist._edge_list
    edges = np.asarray(edge_list)
    rng = np.random.default_rng(7)
    values = np.concatenate(
        [
            edges,
            np.nextafter(edges, -np.inf),
            np.nextafter(edges, np.inf),
            [0.0, -0.0, -1.0, 1e-300, 1e12],
            rng.lognormal(-3.0, 2.0, 20_000),
        ]
    )
    hist.add_many(values)
    expected = np.zeros(len(edge_list) + 1, dtype=np.int64)
    for v in values.tolist():
        expected[bisect.bisect_right(edge_list, v)] += 1
    assert hist.counts.tolist() == expected.tolist()


@pytest.mark.parametrize("size", [1, 199, LOG_SLOTS_FROM - 1, LOG_SLOTS_FROM, 3 * LOG_SLOTS_FROM])
def test_both_slot_paths_give_bisects_slots(size: int) -> None:
    """Below ``LOG_SLOTS_FROM`` values ``add_many`` finds slots by ``searchsorted``, from it by the
    logarithm: the counts are bisect's either side of the switch."""
    hist = LogHistogram()
    edge_list = hist._edge_list
    rng = np.random.default_rng(size)
    values = np.concatenate([np.asarray(edge_list), rng.lognormal(-3.0, 2.0, size)])[-size:]
    hist.add_many(values)
    expected = np.zeros(len(edge_list) + 1, dtype=np.int64)
    for v in values.tolist():
        expected[bisect.bisect_right(edge_list, v)] += 1
    assert hist.counts.tolist() == expected.tolist()


def test_merge_rejects_other_layouts() -> None:
    with pytest.raises(ValueError, match="layout"):
        LogHistogram().merge(LogHistogram(relative_error=0.01))
    with pytest.raises(ValueError, match="layout"):
        FixedBucketCounts([1.0, 2.0]).merge(FixedBucketCounts([1.0, 3.0]))


def _plain(obj: object) -> bool:
    if isinstance(obj, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in obj.items())
    if isinstance(obj, list):
        return all(_plain(v) for v in obj)
    return obj is None or type(obj) in (int, float, str)


def test_serialization_round_trip_is_sparse_and_plain() -> None:
    hist = LogHistogram()
    hist.add_many(_lognormal(5, 10_000))
    hist.add(0.0)
    hist.add(1e6)
    data = hist.to_dict()
    assert _plain(data)
    assert len(data["index"]) == np.count_nonzero(hist.counts) < hist.num_buckets
    for wire in (json.loads(json.dumps(data)), msgpack.unpackb(msgpack.packb(data))):
        back = LogHistogram.from_dict(wire)
        assert back == hist and back.sum == hist.sum
        assert back.quantiles(QS) == hist.quantiles(QS)
    empty = LogHistogram.from_dict(LogHistogram().to_dict())
    assert empty.count == 0 and empty.min is None and empty.quantile(0.5) is None


def test_from_dict_rejects_inconsistent_data() -> None:
    data = LogHistogram().to_dict() | {"count": 3, "index": [10], "counts": [2], "min": 1.0, "max": 1.0}
    with pytest.raises(ValueError, match="add up"):
        LogHistogram.from_dict(data)
    with pytest.raises(ValueError):
        LogHistogram.from_dict(FixedBucketCounts([1.0]).to_dict())


def test_fixed_bucket_counts_le_semantics_at_exact_edges() -> None:
    values = [0.1, 0.1, 0.5, 5.0, 0.0999, 0.10000001, 5.0000001, 99.0]
    counts, vec = FixedBucketCounts([0.1, 0.5, 5.0]), FixedBucketCounts([0.1, 0.5, 5.0])
    for v in values:
        counts.add(v)
    vec.add_many(values)
    assert counts.cumulative() == [3, 5, 6, 8]  # a value equal to an edge counts in that edge
    assert vec == counts
    assert counts.count == 8 and counts.sum == pytest.approx(math.fsum(values), rel=1e-12)


def test_fixed_bucket_counts_merge_serialize_take() -> None:
    edges = [0.3, 0.5, 1.0, 5.0, 60.0]
    values = _lognormal(7, 5_000, mu=0.0, sigma=1.0)
    whole, a, b = FixedBucketCounts(edges), FixedBucketCounts(edges), FixedBucketCounts(edges)
    whole.add_many(values)
    a.add_many(values[:1234])
    b.add_many(values[1234:])
    merged = FixedBucketCounts.from_dict(json.loads(json.dumps(a.take().to_dict())))
    merged.merge(FixedBucketCounts.from_dict(msgpack.unpackb(msgpack.packb(b.to_dict()))))
    assert merged == whole and a.count == 0
    assert merged.cumulative() == [int((values <= e).sum()) for e in edges] + [len(values)]
    assert _plain(whole.to_dict())
    with pytest.raises(ValueError):
        FixedBucketCounts([1.0, 1.0])
    with pytest.raises(ValueError):
        FixedBucketCounts([1.0, math.inf])


def test_log_histogram_cumulative_counts() -> None:
    values = _lognormal(8, 20_000)
    hist = LogHistogram()
    hist.add_many(values)
    edges = [1e-6, 0.01, 0.1, 0.5, 1.0, 5.0, float(values.max()), 1e9]
    got = hist.cumulative_counts(edges)
    exact = [int((values <= e).sum()) for e in edges]
    assert got[0] == 0 and got[-2:] == exact[-2:]
    assert got == sorted(got)
    # only observations within one bucket of an edge can be misplaced
    for e, g, x in zip(edges, got, exact, strict=True):
        near = int(
            (
                (values > e / (1 + 2 * hist.relative_error)) & (values <= e * (1 + 2 * hist.relative_error))
            ).sum()
        )
        assert abs(g - x) <= near


def test_memory_is_constant_in_observations() -> None:
    small, large = LogHistogram(), LogHistogram()
    small.add_many(_lognormal(9, 10))
    large.add_many(_lognormal(10, 200_000))
    assert small.num_buckets == large.num_buckets == large.counts.size
    assert large.counts.nbytes == small.counts.nbytes < 20_000
    assert len(large.to_dict()["index"]) <= large.num_buckets


def test_out_of_range_and_invalid_values() -> None:
    hist = LogHistogram(min_value=1e-3, max_value=10.0)
    hist.add_many([0.0, 5e-4, 20.0, 30.0])
    assert hist.counts[0] == 2 and hist.counts[-1] == 2
    assert hist.quantile(0.0) == 0.0 and hist.quantile(1.0) == 30.0
    assert 0.0 <= hist.quantile(0.25) <= 1e-3
    assert 20.0 <= hist.quantile(0.75) <= 30.0
    with pytest.raises(ValueError):
        hist.add(math.nan)
    with pytest.raises(ValueError):
        hist.add_many([1.0, math.inf])
    with pytest.raises(ValueError):
        hist.quantile(1.5)
    assert LogHistogram().quantiles([0.5, 0.9]) == [None, None]
    assert LogHistogram().mean is None
