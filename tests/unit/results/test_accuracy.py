"""Length accuracy from the records' columns: input error against the target, requested vs actual output."""

from __future__ import annotations

import pytest

from llm_locust.record import RequestRecord
from llm_locust.results.accuracy import input_length_error


def test_input_length_error() -> None:
    recs = [
        RequestRecord(
            "a",
            0.0,
            0.0,
            prompt_tokens=100,
            target_input_tokens=100,
            completion_tokens=10,
            target_output_tokens=10,
        ),
        RequestRecord(
            "b",
            0.0,
            0.0,
            prompt_tokens=110,
            target_input_tokens=100,
            completion_tokens=5,
            target_output_tokens=10,
        ),
        RequestRecord("c", 0.0, 0.0),
    ]
    out = input_length_error([r.to_json() for r in recs])
    assert out["input"]["count"] == 2 and out["input"]["mean"] == pytest.approx(0.05)
    assert out["input"]["exact_fraction"] == 0.5
    assert out["output"]["requested_mean"] == 10 and out["output"]["actual_mean"] == 7.5
    assert input_length_error([])["input"]["count"] == 0
