"""The report's verdict block says a run was interrupted, and that its load ended early, as the
summary and the end-of-run text do (before, report.html said nothing of either)."""

from __future__ import annotations

import json
from pathlib import Path

from llm_locust.report.data import load_run
from llm_locust.report.tables import verdict_block
from llm_locust.results.columns import Columns
from llm_locust.results.ending import EndCause
from llm_locust.results.finalize import build_summary
from tests.unit.results.test_ending import QUIT, _rows, facts


def _verdict(tmp: Path, cause: EndCause | None, why: str | None) -> str:
    rows = _rows(20)
    summary = build_summary(Columns.from_rows(rows), facts(cause, why))
    (tmp / "summary.json").write_text(json.dumps(summary))
    (tmp / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return verdict_block(load_run(tmp))


def test_an_early_end_is_said_first_with_how_much_of_the_plan_ran(tmp_path: Path) -> None:
    html = _verdict(tmp_path, EndCause.WORKERS_QUIT, QUIT)
    assert html.startswith(
        f'<p class="warn">Interrupted by {QUIT}. The load ended early: 2.4 s into the test of the 18.0 s '
        "planned.</p>"
    ), html[:400]


def test_a_signal_is_said_without_an_early_end_and_a_whole_run_says_neither(tmp_path: Path) -> None:
    assert _verdict(tmp_path, EndCause.SIGNAL, "SIGINT").startswith(
        '<p class="warn">Interrupted by SIGINT.</p>'
    )
    (tmp_path / "b").mkdir()
    assert "Interrupted" not in _verdict(tmp_path / "b", None, None)
