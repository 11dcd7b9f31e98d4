"""The end of a run writes report.html only for a folder the report can hold in memory."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from llm_locust.report.build import REPORT_FILE, report_after_run


def test_a_folder_too_large_for_the_report_gets_one_line_not_a_report(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "requests.jsonl").write_text('{"request_id": "0"}\n' * 100)
    with caplog.at_level(logging.WARNING, logger="llm_locust"):
        assert report_after_run(tmp_path, max_bytes=1000) is None
    assert not (tmp_path / REPORT_FILE).exists()
    assert "report.html not written" in caplog.text and "llm-locust report" in caplog.text


def test_below_the_limit_the_report_is_attempted(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """(No summary.json here: the attempt fails with its own one line, never an exception.)"""
    (tmp_path / "requests.jsonl").write_text('{"request_id": "0"}\n')
    with caplog.at_level(logging.WARNING, logger="llm_locust"):
        assert report_after_run(tmp_path, max_bytes=1000) is None
    assert "no summary.json" in caplog.text
