"""A results folder on a nearly full volume is refused at the start (issue 26 §13): the decision,
with the documented numbers written out (100 MiB needed; ~2.5 KiB a request), and its wiring."""

from __future__ import annotations

from collections import namedtuple
from pathlib import Path

import pytest

from llm_locust.results import writer
from llm_locust.results.writer import ResultsDirError, check_results_dir, space_problem

MIB = 1024 * 1024


def test_below_100_mib_free_is_refused_with_how_many_requests_would_fit() -> None:
    assert space_problem("/results/run1", 100 * MIB) is None
    assert space_problem("/results/run1", 5_000 * MIB) is None
    problem = space_problem("/results/run1", 50 * MIB)
    # 50 MiB / 2,600 bytes a row = 20,164 rows
    assert problem == (
        "--results-dir /results/run1: its volume is nearly full (50 MiB free, room for about 20,164 "
        "requests at ~2.5 KiB each; 100 MiB needed to start): free space or use a larger volume"
    )
    assert space_problem("/r", 100 * MIB - 1) is not None


def test_the_check_at_start_reads_the_folders_own_volume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = []
    usage = namedtuple("usage", "total used free")

    def disk_usage(path: Path) -> tuple[int, int, int]:
        seen.append(Path(path))
        return usage(1024 * MIB, 1000 * MIB, 24 * MIB)

    monkeypatch.setattr(writer.shutil, "disk_usage", disk_usage)
    with pytest.raises(ResultsDirError, match="nearly full \\(24 MiB free"):
        check_results_dir(tmp_path / "run1", overwrite=False)
    assert seen == [tmp_path / "run1"]
