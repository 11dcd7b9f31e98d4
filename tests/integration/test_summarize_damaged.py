"""``llm-locust summarize DIR`` over a damaged ``requests.jsonl`` (issue 26 §5).

A crash mid-write or a full disk leaves a corrupt line in the middle of the file (here: a record
cut short and followed by NUL bytes) and a last line without its newline. Before, the corrupt
line raised ``orjson.JSONDecodeError`` out of ``summarize`` (a traceback, exit 1) and the torn
last line was dropped without a word. Now both are skipped and counted: one line on stderr
naming the file and the line numbers, the count in the rebuilt summary's ``skipped_lines``, and
the statistics over the records that were read, equal to those of the same file without the
damage. The command runs as a real process (exit code, stderr, no traceback).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.locustproc import expect_exit, llm_locust_cli


def rows() -> list[dict[str, Any]]:
    """Six successful records, 5 to 10 output tokens, 0.1 s TTFT, 10 ms between tokens."""
    out = []
    for i in range(6):
        n = 5 + i
        out.append(
            {
                "outcome": "ok",
                "start_time": 1000.0 + 0.5 * i,
                "ttft": 0.1,
                "tpot": 0.01,
                "e2e": 0.1 + 0.01 * (n - 1),
                "itl": [0.01] * (n - 1),
                "prompt_tokens": 20,
                "completion_tokens": n,
            }
        )
    return out


def summarize(folder: Path, text: str) -> tuple[Any, dict[str, Any]]:
    folder.mkdir()
    (folder / "requests.jsonl").write_text(text)
    proc = llm_locust_cli("summarize", str(folder), timeout=120)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    expect_exit(proc, 0)
    return proc, json.loads((folder / "summary.json").read_text())


def test_corrupt_and_torn_lines_are_skipped_counted_and_said(tmp_path: Path) -> None:
    lines = [json.dumps(r) for r in rows()]
    corrupt = '{"outcome": "ok", "start_time": 1001.7, "tt' + "\x00" * 40
    torn = lines[-1][:25]
    damaged = "\n".join([*lines[:3], corrupt, *lines[3:5], torn])  # the last line has no newline
    proc, summary = summarize(tmp_path / "damaged", damaged)
    _, clean = summarize(tmp_path / "clean", "\n".join(lines[:5]) + "\n")

    said = [line for line in proc.stderr.splitlines() if "unreadable" in line]
    path = tmp_path / "damaged" / "requests.jsonl"
    assert said == [
        f"llm-locust summarize: skipped 2 unreadable lines of {path} (lines 4, 7; the last one cut short): "
        "not JSON records, left out of every statistic"
    ], proc.stderr
    skipped = summary["rebuilt"]["skipped_lines"]
    assert (skipped["count"], skipped["file"], skipped["lines"], skipped["last_line_torn"]) == (
        2,
        "requests.jsonl",
        [4, 7],
        True,
    )
    assert "skipped_lines" not in clean["rebuilt"]
    # the statistics are those of the five records read: 5+6+7+8+9 output tokens
    assert summary["completed"] == 5 and summary["total_output_tokens"] == 35
    for key in ("completed", "total_output_tokens", "p99_ttft_ms", "p99_e2el_ms", "p50_itl_ms", "duration"):
        assert summary[key] == clean[key], key
    assert (tmp_path / "damaged" / "report.html").is_file()
