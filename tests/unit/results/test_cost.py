"""The cost arithmetic of a capacity answer (pure)."""

from __future__ import annotations

import pytest

from llm_locust.results.cost import (
    cost_per_million,
    headroom,
    interpolate,
    per_gpu,
    scaling_efficiency,
    tokens_per_user,
)


def test_cost_per_million_output_tokens() -> None:
    # 4 GPUs at $2.50/h = $10/h; 1000 tok/s = 3.6M tok/h -> $2.78 per 1M
    assert cost_per_million(2.5, 4, 1000.0) == pytest.approx(10 / 3.6)
    assert cost_per_million(2.5, 8, 887.0) == pytest.approx(20.0 / (887 * 3600 / 1e6))
    assert cost_per_million(2.5, 4, 0.0) is None and cost_per_million(2.5, 4, None) is None
    assert cost_per_million(0.0, 4, 100.0) == 0.0


def test_per_gpu_tokens_per_user_and_headroom() -> None:
    assert per_gpu(887.0, 8) == pytest.approx(110.875) and per_gpu(None, 8) is None
    assert tokens_per_user(0.040) == pytest.approx(25.0) and tokens_per_user(None) is None
    assert tokens_per_user(0.0) is None
    assert headroom(64, 50) == pytest.approx(0.28) and headroom(36, 50) == pytest.approx(-0.28)
    assert headroom(None, 50) is None


def test_interpolation_between_measured_points_never_above_the_highest() -> None:
    points = [(16.0, 300.0), (32.0, 500.0), (24.0, 420.0)]
    assert interpolate(points, 8.0) == pytest.approx(150.0)  # from the origin
    assert interpolate(points, 28.0) == pytest.approx(460.0)
    assert interpolate(points, 32.0) == pytest.approx(500.0)
    assert interpolate(points, 33.0) is None
    assert interpolate([], 1.0) is None


def test_scaling_efficiency() -> None:
    assert scaling_efficiency(24, 4, 48, 8) == pytest.approx(1.0)  # C (2x4) vs A (1x4): linear
    assert scaling_efficiency(24, 4, 56, 8) == pytest.approx(56 / 48)  # superlinear: more KV cache
    assert scaling_efficiency(24, 1, 36, 2) == pytest.approx(0.75)
