"""How a request ended is one enum (``record.Outcome``), written to ``requests.jsonl`` as its
plain string, and documented: every failure class in docs/metrics.md's list, every member there."""

from __future__ import annotations

import json
import re
from pathlib import Path

from llm_locust.record import NOT_FAILED, Outcome, RequestRecord, json_line

DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


def test_a_record_writes_its_outcome_as_the_plain_string_and_reads_back_equal() -> None:
    record = RequestRecord(request_id="r1", wall_start=0.0, t_sent=0.0)
    record.outcome = Outcome.STREAM_BROKEN
    row = json.loads(json_line(record.to_json()))
    assert row["outcome"] == "stream_broken" and type(row["outcome"]) is str
    assert row["outcome"] == Outcome.STREAM_BROKEN  # a row read back compares equal to its member


def test_the_ends_that_are_not_failures() -> None:
    assert {o.value for o in NOT_FAILED} == {"ok", "incomplete", "cancelled"}


def test_every_failure_class_is_documented() -> None:
    text = DOCS.read_text()
    section = text[text.index("## Failure classes") :]
    section = section[: section.index("\n## ", 3)]
    documented = set(re.findall(r"`([a-z_0-9]+)`", section))
    failures = {o.value for o in Outcome} - {o.value for o in NOT_FAILED}
    assert failures <= documented, failures - documented
