"""``llm-locust report`` reads ``summary.json`` through its model (issue 22 item 2): a file written
before ``schema_version`` existed still makes a report and a comparison; a file whose numbers are
not numbers is one line naming the key, exit 2, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_locust.report.cli import main
from llm_locust.report.data import load_run
from tests.unit.report.test_report import _folder


def test_an_old_summary_without_a_version_makes_a_report_and_a_comparison(tmp_path: Path) -> None:
    a, b = _folder(tmp_path, "a"), _folder(tmp_path, "b", scale=1.2, seed=2)
    old = json.loads((a / "summary.json").read_text())
    assert "schema_version" not in old  # written as before the version existed
    run = load_run(a)
    assert run.model.schema_version is None
    assert run.model.ttft is not None and run.model.ttft.p(95) == old["p95_ttft_ms"]
    assert [s.ms("p95", "e2el") for s in run.model.stages or []] == [s["p95_e2el_ms"] for s in old["stages"]]
    assert main([str(a)]) == 0 and (a / "report.html").is_file()
    out = tmp_path / "compare.html"
    assert main(["--compare", str(a), str(b), "-o", str(out)]) == 0 and out.is_file()


@pytest.mark.parametrize(
    ("where", "value", "named"),
    [
        ("p95_ttft_ms", "fast", "p95_ttft_ms"),
        ("completed", "many", "completed"),
        ("stage_p99.9_e2el_ms", [1], "stages.1.p99.9_e2el_ms"),
    ],
)
def test_a_summary_whose_numbers_are_not_numbers_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str, value: object, named: str
) -> None:
    folder = _folder(tmp_path, "a")
    summary = json.loads((folder / "summary.json").read_text())
    if where.startswith("stage_"):
        summary["stages"][1][where.removeprefix("stage_")] = value
    else:
        summary[where] = value
    (folder / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(SystemExit) as exit_:
        main([str(folder)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"summary.json does not match its schema ({named}: " in err, err
    assert not (folder / "report.html").exists()
