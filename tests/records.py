"""Test helpers for records: rebuild a :class:`RequestRecord` from its ``requests.jsonl`` row.

The results side never rebuilds records (it reads rows into columns, :mod:`llm_locust.results.columns`);
tests that build rows from known marks and want the record's own arithmetic back use this.
"""

from __future__ import annotations

import math
from typing import Any

from llm_locust.record import RequestRecord

__all__ = ["linear_percentile", "record_from_row"]


def record_from_row(row: dict[str, Any]) -> RequestRecord:
    """A record from its JSONL form (marks relative to a zero send)."""
    return RequestRecord.from_json(row)


def linear_percentile(values: list[float], q: float) -> float:
    """The linear-interpolated percentile written out (rank q/100*(n-1) between its neighbours),
    to check the results side's numbers independently of numpy."""
    ordered = sorted(values)
    rank = q / 100 * (len(ordered) - 1)
    lo = math.floor(rank)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (rank - lo)
