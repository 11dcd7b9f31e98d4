"""A test that recorded not one request measured nothing: it says so and exits 7, never 0.

Seen once in the suite on a busy host (load average 13): a master with two workers exited 0 with
an empty ``requests.jsonl``. Without an SLO the exit code was Locust's own, and Locust counts no
failure among no requests: 0, "done". Now the summary's ``records.total == 0`` is exit code 7 and
a line on stdout, whatever the cause (no request sent, or none that reached the results). The
same rule holds for ``llm-locust summarize`` (the same end of run, rebuilt from the records),
which is how these tests reach it as a real process.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.locustproc import expect_exit, llm_locust_cli

SAID = "llm-locust: no request was recorded: the run measured nothing"
RECORD = {
    "outcome": "ok",
    "start_time": 1000.0,
    "ttft": 0.1,
    "tpot": 0.01,
    "e2e": 0.14,
    "itl": [0.01] * 4,
    "prompt_tokens": 20,
    "completion_tokens": 5,
}


def _summarize(folder: Path, text: str) -> tuple[object, dict]:
    folder.mkdir()
    (folder / "requests.jsonl").write_text(text)
    proc = llm_locust_cli("summarize", str(folder), "--no-report", timeout=120)
    return proc, json.loads((folder / "summary.json").read_text())


def test_a_results_folder_without_one_record_exits_7_and_says_so(tmp_path: Path) -> None:
    for name, text in (("empty", ""), ("unreadable", '{"outcome": "ok", "st\n')):
        proc, summary = _summarize(tmp_path / name, text)
        expect_exit(proc, 7)
        assert SAID in proc.stdout.splitlines(), proc.stdout[-2000:]
        assert summary["records"]["total"] == 0 and summary["completed"] == 0
    # one record, even a failed one, is a measurement: not this exit code, not this line
    failed = {**RECORD, "outcome": "http_error", "status": 500, "ttft": None, "tpot": None, "itl": []}
    for name, row in (("one", RECORD), ("one-failed", failed)):
        proc, summary = _summarize(tmp_path / name, json.dumps(row) + "\n")
        assert proc.returncode != 7 and SAID not in proc.stdout, (name, proc.returncode, proc.stdout[-2000:])
        assert summary["records"]["total"] == 1, name
