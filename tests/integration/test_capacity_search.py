"""The SLO capacity search in one run, against an engine-mode simulator whose boundary is known.

The simulator's decode step lasts ``decode_base + decode_per_seq x running`` (``--decode-base-ms
20 --decode-ms-per-seq 40``), far below its batch limit, so N closed-loop users see a TPOT of at
most 20 + 40 N ms: 100 ms at 2 users, 140 at 3. A user is out of the batch between two requests
(its next request waits for the next step: about half a step in six), which lowers the batch
below N by up to about 10 %, so the threshold sits a third of the way up: ``tpot_p90<=0.114s``
holds at 2 users (14 ms to spare) and breaks at 3 (at 129 ms or more). The search from 1 must
probe 1, 2, 4, then bisect to 3 and answer 2.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from llm_locust.load.search import SearchSpec, replay
from tests.locustproc import LocustResult, expect_exit, llm_locust_cli, run_locust
from tests.simproc import running_sim

# steps judged valid or short by their timings, not by a saturated client
pytestmark = pytest.mark.host_timing

ENGINE = ("--mode", "engine", "--max-num-seqs", "64", "--decode-base-ms", "20", "--decode-ms-per-seq", "40")
ENGINE += ("--prefill-ms-per-token", "0.01", "--output-tokens", "5")
LIGHT = ("--prompt-tokens", "16", "--max-tokens", "5")


def _search(url: str, results: Path, *args: str, timeout: float = 400.0):
    return run_locust(url, *LIGHT, *args, results_dir=results, users=None, run_time=None, timeout=timeout)


@pytest.fixture(scope="module")
def boundary_search(tmp_path_factory: pytest.TempPathFactory) -> LocustResult:
    """One search from 1 user against the simulator whose boundary is 2 users."""
    with running_sim(*ENGINE) as url:
        return _search(
            url,
            tmp_path_factory.mktemp("search") / "r",
            "--search",
            "users",
            "--search-min",
            "1",
            "--slo",
            "success>=90%,tpot_p90<=0.114s",
            "--step-time",
            "8s",
            "--warmup",
            "1s",
            "--demand",
            "users=2",
        )


@pytest.mark.slow
def test_the_search_finds_the_tpot_boundary_by_the_documented_probes(boundary_search: LocustResult) -> None:
    res = boundary_search
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Traceback" not in res.stdout + res.stderr
    search = res.summary["search"]
    steps = search["steps"]
    levels = [p["level"] for p in steps]
    spec = SearchSpec("users", 1, precision=0.10, max_steps=12, max_extensions=2)
    decisions = replay(spec, [(p["level"], p["verdict"], p["extensions"]) for p in steps])
    assert [d.level for d in decisions[:-1]] == levels  # every probe was the algorithm's choice
    assert decisions[-1].reason == search["stop_reason"] == "precision"
    lo, hi = search["highest_pass"]["level"], search["upper"]["level"]
    assert (lo, hi) == (2, 3) and levels == [1, 2, 4, 3], levels  # the boundary, exactly
    for p in steps:  # the measured TPOT follows the model: 20 + 40 N ms at most
        assert p["median_tpot_ms"] <= 20 + 40 * p["level"] + 5, p
        assert p["verdict"] != "pass" or p["terms"][1]["interval"][1] <= 0.114
    assert search["broke_first"] == "tpot_p90"
    stages = res.summary["stages"]  # the end-of-run table holds every step as a stage
    assert [s["label"] for s in stages][: len(steps)] == [p["label"] for p in steps]
    assert "capacity search (users from 1, 10% precision):" in res.stdout
    assert f"capacity: capacity {int(lo)} users within the SLO" in res.stdout


@pytest.mark.slow
def test_summarize_rebuilds_the_search_block_from_the_records_and_the_steps(
    boundary_search: LocustResult, tmp_path: Path
) -> None:
    """``llm-locust summarize`` on a search's folder (without its summary) gives the same probes,
    verdicts and answer as the run: the steps' windows and verdicts are in ``search.json``."""
    assert boundary_search.results_dir is not None and boundary_search.returncode == 0
    folder = tmp_path / "copy"
    shutil.copytree(boundary_search.results_dir, folder)
    (folder / "summary.json").unlink()
    expect_exit(llm_locust_cli("summarize", str(folder), timeout=120), 0)
    rebuilt = json.loads((folder / "summary.json").read_text())
    ran = boundary_search.summary
    search = dict(rebuilt["search"])
    assert search.pop("rebuilt") == {"from": "search.json", "mismatches": []}
    assert search == ran["search"]  # every probe, every number, the bracket and the stop reason
    assert rebuilt["capacity"] == ran["capacity"] and "search.json" in rebuilt["rebuilt"]["from"]
    assert [(s["label"], s["verdict"]) for s in rebuilt["stages"]] == [
        (s["label"], s["verdict"]) for s in ran["stages"]
    ]
    assert rebuilt["demand"] == ran["demand"] and ran["demand"]["meets"] is True


def test_a_step_too_short_for_its_percentile_is_never_a_pass(tmp_path: Path) -> None:
    """Still short of the requests a P99 needs after running on for 4 step times: the run does
    not hold the step as a measurement (issue 22 §3): invalid, run once more, then the answer
    withheld (exit 6), never a pass, a fail or a capacity."""
    with running_sim(*ENGINE) as url:
        res = _search(
            url,
            tmp_path / "r",
            "--search",
            "users",
            "--search-min",
            "4",
            "--search-extensions",
            "0",
            "--slo",
            "tpot_p99<=1s",  # every request meets it, but no 2 s step has the 368 a P99 needs
            "--step-time",
            "2s",
            timeout=120.0,
        )
    assert res.returncode == 6, res.stderr[-3000:]
    assert "Traceback" not in res.stdout + res.stderr
    search = res.summary["search"]
    assert [(p["level"], p["verdict"], p["judged_as"]) for p in search["steps"]] == [
        (4, "invalid", "inconclusive"),
        (4, "invalid", "inconclusive"),
    ]
    assert all(
        p["reason"].startswith("too few requests after 4 step times")
        and "cannot bound a P99 from above (it needs at least 368)" in p["reason"]
        for p in search["steps"]
    )
    assert search["capacity"] is None and search["stop_reason"] == "invalid"
    # the cause first, then what to do, then which step (a3c4651's order)
    assert search["withheld"].startswith("answer withheld: too few requests after 4 step times")
    assert "; lengthen the step (--step-time) (users=4 invalid 2 times" in search["withheld"]
    assert f"capacity: {search['withheld']}" in res.stdout
