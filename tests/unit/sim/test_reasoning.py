"""``--reasoning-tokens``: the spec grammar and the per-request draw."""

from __future__ import annotations

import random

import pytest

from llm_locust.sim.reasoning import ReasoningKind, parse_reasoning


def test_zero_means_no_reasoning() -> None:
    assert parse_reasoning("0") is None and parse_reasoning("0%") is None


def test_fixed_and_ratio_leave_at_least_one_answer_token() -> None:
    rng = random.Random(0)
    fixed, ratio = parse_reasoning("200"), parse_reasoning("40%")
    assert fixed is not None and ratio is not None
    assert (fixed.kind, ratio.kind) == (ReasoningKind.FIXED, ReasoningKind.RATIO)
    assert fixed.draw(rng, 1000) == 200 and fixed.draw(rng, 50) == 49
    assert ratio.draw(rng, 1000) == 400 and ratio.draw(rng, 5) == 2
    assert fixed.draw(rng, 1) == 0


def test_distribution_uses_the_workload_grammar_and_is_seeded() -> None:
    def draws(seed: int) -> list[int]:
        spec = parse_reasoning("uniform:100,400")
        assert spec is not None and spec.kind is ReasoningKind.DIST
        rng = random.Random(seed)
        return [spec.draw(rng, 10_000) for _ in range(200)]

    a = draws(1)
    assert a == draws(1) and min(a) >= 100 and max(a) <= 400 and len(set(a)) > 50


@pytest.mark.parametrize("text", ["100%", "-5%", "x%", "normal:mean=10", "abc"])
def test_bad_specs_raise_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        parse_reasoning(text)
