"""Coalesced stream events (issue 27 §5): several SSE events in one read have gaps of 0 ms.

The share of such gaps is said per run and per stage (``itl_zero_gap_share``, the stage
table's ``ITL 0ms`` column) and, above 10 %, in a note at the end of the run.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from llm_locust.client.streaming import ClientConfig, StreamingClient
from llm_locust.record import RequestRecord
from llm_locust.results.columns import Columns, ColumnsBuilder
from llm_locust.results.report import end_of_run_text
from llm_locust.results.stats import ItlBudget
from llm_locust.results.summary import summarize
from llm_locust.results.summary_model import RunSummary, StageRow
from llm_locust.results.summary_text import format_stage_table
from tests.scripted_server import running_peer


@pytest.fixture(scope="module")
def peer() -> Iterator[str]:
    with running_peer() as base:
        yield base


def _row(i: int, itl: list[float]) -> dict:
    return {
        "request_id": f"r{i}",
        "start_time": 1000.0 + i,
        "outcome": "ok",
        "ttft": 0.1,
        "e2e": 0.1 + sum(itl),
        "tpot": 0.01,
        "itl": itl,
        "prompt_tokens": 10,
        "completion_tokens": len(itl) + 1,
        "token_source": "usage",
        "stage": None,
        "warmup": False,
    }


def test_events_in_one_read_have_zero_gaps_and_the_summary_counts_them(peer: str) -> None:
    """Over a real socket: the peer writes b, c, d in one write; their two gaps are 0 s and
    the summary's share counts them (2 of the 4 gaps on a quiet host)."""
    client = StreamingClient(ClientConfig(host=f"{peer}/coalesced", model="m", request_timeout=5.0))
    record = RequestRecord(request_id="c", wall_start=1000.0, t_sent=0.0)
    try:
        client.send({"model": "m", "messages": [], "stream": True}, record)
    finally:
        client.close()
    assert record.ok, record.message
    row = record.to_json()
    gaps = row["itl"]
    assert len(gaps) == 4
    # c and d came in b's read: 0 s; a and e 20 ms apart (0 too only if a busy host read late)
    assert gaps[1] == 0.0 and gaps[2] == 0.0, gaps
    zeros = sum(g == 0.0 for g in gaps)
    # The summary's count is what is tested from here on. A busy host can stall the client inside
    # this one request, and the inclusion rule then (rightly) leaves its latencies out of every
    # statistic (the share read None at load 14); that rule has its own tests (test_inclusion).
    row = {**row, "client_stall_s": 0.0}
    summary = summarize([row], 1.0)
    assert summary["itl_zero_gap_share"] == pytest.approx(zeros / 4)
    assert f"{zeros * 25} % of ITL gaps are 0 ms" in end_of_run_text(RunSummary.of(summary))


def test_share_is_counted_exactly_in_histogram_mode_too() -> None:
    """Past the exact budget the gaps fold into a histogram; the zeros are still counted."""
    rows = [_row(i, [0.0, 0.0, 0.02, 0.03, 0.0] if i % 2 else [0.02, 0.025, 0.03]) for i in range(40)]
    zeros = sum(g == 0.0 for r in rows for g in r["itl"])
    total = sum(len(r["itl"]) for r in rows)
    exact = Columns.from_rows(rows)
    builder = ColumnsBuilder(budget=ItlBudget(limit=10))
    for r in rows:
        builder.add(r)
    folded = builder.build()
    assert not folded.part().itl().exact
    for cols in (exact, folded):
        assert summarize(cols, 40.0)["itl_zero_gap_share"] == pytest.approx(zeros / total)


def test_no_note_at_or_under_ten_percent_and_none_without_gaps() -> None:
    # 1 zero in 10 gaps: exactly 10 %, said in the key, no note
    summary = summarize([_row(0, [0.0] + [0.02] * 9)], 1.0)
    assert summary["itl_zero_gap_share"] == pytest.approx(0.1)
    assert "ITL gaps are 0 ms" not in end_of_run_text(RunSummary.of(summary))
    one_token = {**_row(1, []), "completion_tokens": 1}
    assert summarize([one_token], 1.0)["itl_zero_gap_share"] is None


def test_stage_table_has_the_share_column() -> None:
    stage = {
        **summarize([_row(0, [0.0, 0.0, 0.0, 0.02])], 1.0),
        "label": "users=4",
        "kind": "users",
        "target": 4,
        "peak_users": 4,
    }
    table = format_stage_table([StageRow.of(s) for s in [stage]]).splitlines()
    column = table[0].index("ITL 0ms")
    end = column + len("ITL 0ms")
    assert table[2][column - 1 : end].strip() == "75%"
