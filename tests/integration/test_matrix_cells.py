"""A test matrix whose cells change the workload (issue 17 §5): each stage sends its cell's lengths."""

from __future__ import annotations

from pathlib import Path

from tests.locustproc import expect_exit, run_locust
from tests.simproc import running_sim


def test_each_matrix_cell_sends_its_own_lengths(tmp_path: Path) -> None:
    with running_sim("--ttft-ms", "5", "--tpot-ms", "1", "--output-tokens", "64") as url:
        res = run_locust(
            url,
            *("--matrix", "users=2;input=16,32;output=3,6", "--step-time", "2s", "--seed", "4"),
            results_dir=tmp_path / "r",
            run_time="30s",
        )
    expect_exit(res, 0)
    assert "Traceback" not in res.stdout + res.stderr
    stages = res.summary["stages"]
    assert [(s["input"], s["output"]) for s in stages] == [("16", "3"), ("16", "6"), ("32", "3"), ("32", "6")]
    # a user draws its next request just before sending it: one drawn as a stage ends may leave
    # just after the next began, so the first half second of each stage is not judged
    starts = {s["index"]: s["window"]["start"] for s in stages}
    by_stage: dict[int, set[tuple[int, int]]] = {}
    for row in res.rows:
        if row["stage"] is not None and row["start_time"] >= starts[row["stage"]] + 0.5:
            by_stage.setdefault(row["stage"], set()).add(
                (row["target_input_tokens"], row["target_output_tokens"])
            )
    assert by_stage == {0: {(16, 3)}, 1: {(16, 6)}, 2: {(32, 3)}, 3: {(32, 6)}}
    staged = [r for r in res.rows if r["stage"] is not None]
    assert all(r["outcome"] == "ok" and r["completion_tokens"] == r["target_output_tokens"] for r in staged)
