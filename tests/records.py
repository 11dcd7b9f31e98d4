"""Test helpers for records: rebuild a :class:`RequestRecord` from its ``requests.jsonl`` row.

The results side never rebuilds records (it reads rows into columns, :mod:`llm_locust.results.columns`);
tests that build rows from known marks and want the record's own arithmetic back use this.
"""

from __future__ import annotations

from typing import Any

from llm_locust.record import RequestRecord

__all__ = ["record_from_row"]


def record_from_row(row: dict[str, Any]) -> RequestRecord:
    """A record from its JSONL form (marks relative to a zero send)."""
    return RequestRecord.from_json(row)
