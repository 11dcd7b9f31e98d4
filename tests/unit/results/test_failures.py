"""The most frequent failure messages per class and the users' pauses (issue 9 §3)."""

from __future__ import annotations

from llm_locust.results.failures import MESSAGE_CHARS, TOP, FailureTally, failure_lines, tally_of
from llm_locust.results.summary_model import RunSummary
from llm_locust.results.summary_text import format_table


def test_messages_are_counted_per_class_most_frequent_first() -> None:
    tally = FailureTally()
    for _ in range(3):
        tally.add(
            {
                "outcome": "http_4xx",
                "message": "HTTP 404: model 'x' not found",
                "pause_s": 0.1,
                "pause_reason": "backoff",
            }
        )
    tally.add(
        {"outcome": "http_4xx", "message": "HTTP 401: bad key", "pause_s": 0.2, "pause_reason": "backoff"}
    )
    tally.add({"outcome": "connect", "message": "connection refused"})
    tally.add({"outcome": "http_429", "message": "slow down", "pause_s": 2.0, "pause_reason": "retry_after"})
    tally.add({"outcome": "ok", "message": ""})
    tally.add({"outcome": "incomplete", "message": "stopped"})
    summary = tally.to_summary()
    assert summary["error_messages"] == {
        "connect": [["connection refused", 1]],
        "http_429": [["slow down", 1]],
        "http_4xx": [["HTTP 404: model 'x' not found", 3], ["HTTP 401: bad key", 1]],
    }
    assert summary["waits"] == {
        "backoff": {"pauses": 4, "total_s": 0.5},
        "retry_after": {"pauses": 1, "total_s": 2.0},
    }


def test_only_the_top_messages_are_kept_and_long_ones_cut() -> None:
    tally = FailureTally()
    for i in range(TOP + 3):
        for _ in range(i + 1):
            tally.add({"outcome": "stream_error", "message": f"m{i}" + "x" * 500})
    kept = tally.to_summary()["error_messages"]["stream_error"]
    assert len(kept) == TOP and kept[0][1] == TOP + 3 and all(len(m) == MESSAGE_CHARS for m, _ in kept)


def test_the_end_of_run_table_names_the_messages_and_the_waits() -> None:
    tally = FailureTally()
    tally.add(
        {
            "outcome": "http_4xx",
            "message": "HTTP 404: model 'x' not found",
            "pause_s": 0.1,
            "pause_reason": "backoff",
        }
    )
    summary = {"errors": {"http_4xx": 1}, **tally.to_summary()}
    assert failure_lines(RunSummary.of(summary)) == [
        "  http_4xx x1: HTTP 404: model 'x' not found",
        "  users paused for backoff: 1 times, 0.1 s in all",
    ]
    table = format_table(RunSummary.of(summary))
    assert "HTTP 404: model 'x' not found" in table and "users paused for backoff" in table


def test_rows_read_back_give_the_same_tally() -> None:
    rows = [{"outcome": "connect", "message": "refused", "pause_s": 0.1, "pause_reason": "backoff"}] * 3
    assert tally_of(rows).to_summary() == {
        "error_messages": {"connect": [["refused", 3]]},
        "waits": {"backoff": {"pauses": 3, "total_s": 0.3}},
    }
