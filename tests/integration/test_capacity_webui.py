"""A capacity search started from the web UI's start form: its steps appear as stages, and in the
/llm page's probe table, as it goes."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.browser import DevTools, chromium_binary
from tests.integration.test_web_form import LIGHT, SIM, start_in_chromium
from tests.locustproc import expect_exit
from tests.promproc import http_get
from tests.webproc import form_fields, post, wait_for, web_ui

pytestmark = [pytest.mark.slow, pytest.mark.host_timing]  # a search's steps, live


# its steps' validity reads the host's CPU, which the parallel part's other workers fill ("host
# overloaded: other processes used 92 % of 2 cores", the 12:22 fresh clone of 2026-12-03; the suite's
# own load is no busy host, so a plain failure): alone, in the serial part
@pytest.mark.serial
def test_a_search_from_the_form_grows_its_stages_live(tmp_path: Path) -> None:
    results = tmp_path / "r"
    with web_ui(tmp_path, SIM, results=results) as ui:
        base = ui.base
        fields = form_fields(base)
        search = {"search": "users", "search_min": "2", "search_max": "4", "step_time": "3s"}
        slo = {"slo": "success>=90%,ttft_p50<=1s"}
        assert post(base, {**fields, **LIGHT, **search, **slo})["success"] is True
        seen: list[list[str]] = []
        deadline = time.monotonic() + 60
        while not (results / "summary.json").exists() and time.monotonic() < deadline:
            marks = json.loads(http_get(f"{base}/llm/stats"))["marks"]["stages"]
            labels = [m["label"] for m in marks]
            if labels and (not seen or labels != seen[-1]):
                seen.append(labels)
            time.sleep(0.3)
        summary = wait_for(results / "summary.json", 30)
        # a second search in the same process, into the folder named in its form; the first keeps its steps
        second = Path(f"{results}-second")
        assert post(base, {**fields, **LIGHT, **search, **slo, "results_dir": str(second)})["success"] is True
        wait_for(second / "summary.json", 60)
    expect_exit(ui.proc, 0, ui.log())  # SIGTERM after the searches ended: 0
    for folder in (results, second):  # each search.json is its own test's
        run = json.loads((folder / "run.json").read_text())
        assert json.loads((folder / "search.json").read_text())["t0"] == run["t0"], folder
    assert seen[0] == ["users=2"] and ["users=2", "users=4"] in seen, seen  # one stage, then two
    result = summary["search"]
    assert [p["level"] for p in result["steps"]] == [2, 4] and result["stop_reason"] == "maximum"
    assert result["capacity"] == 4 and summary["config"]["options"]["search"] == "users"


#: The probe table's rows and the answer line of the /llm page, as the page shows them.
READ_TABLE = """(() => ({
  hidden: document.getElementById("search").hidden,
  running: document.getElementById("search-running").textContent,
  rows: [...document.querySelectorAll("#probes tbody tr")]
    .map((tr) => [...tr.cells].map((td) => td.textContent)),
  answer: document.getElementById("search-answer").textContent,
}))()"""


# the same: a fresh clone at JOBS=6 read its step at 2 users "host overloaded: other processes used
# 95 % of 2 cores" twice beside the parallel part's workers (14:11 UTC, 2026-12-03): serial
@pytest.mark.serial
@pytest.mark.skipif(chromium_binary() is None, reason="chromium not on PATH (make system-deps)")
def test_the_llm_page_shows_the_probe_table_as_the_search_goes(tmp_path: Path) -> None:
    """Started in Locust's form in headless Chromium; /llm in a second page shows a row per judged
    step while the search runs, then the answer; the rows are the summary's search steps."""
    seen: list[dict] = []
    results = tmp_path / "r"
    with web_ui(tmp_path, SIM, results=results) as ui:
        base = ui.base
        search = {"search": "users", "search_min": "2", "search_max": "8", "step_time": "3s"}
        started = start_in_chromium(base, {**LIGHT, **search, "slo": "success>=90%,ttft_p50<=1s"})
        assert started["success"] is True, started
        with DevTools(f"{base}/llm") as page:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                shown = page.evaluate(READ_TABLE)
                if not seen or (shown["rows"], shown["answer"]) != (seen[-1]["rows"], seen[-1]["answer"]):
                    seen.append(shown)
                if shown["running"] == "stopped" and shown["answer"]:
                    break
                time.sleep(0.3)
        summary = wait_for(results / "summary.json", 30)
    expect_exit(ui.proc, 0, ui.log())
    steps = summary["search"]["steps"]
    # a step the run held invalid (a busy host) is run once more at its level: judged levels only
    judged = [p["level"] for p in steps if p["verdict"] != "invalid"]
    assert judged == [2, 4, 8] and summary["search"]["stop_reason"] == "maximum", steps
    # while it ran: the table grew a row at a time, the step running named above it
    running = [s for s in seen if s["running"] != "stopped"]
    growing = [len(s["rows"]) for s in running]
    assert growing == sorted(growing) and {1, 2} <= set(growing), [s["rows"] for s in seen]
    assert any(s["running"].startswith("running users=") for s in running)
    # the decision as it forms: after the first judged step, before the search stopped
    forming = [s["answer"] for s in running if s["rows"]]
    assert forming and all(a.startswith("so far: highest pass: ") for a in forming), forming
    assert any(a.startswith(f"so far: highest pass: {steps[0]['label']}; ") for a in forming), forming
    final = seen[-1]
    assert final["running"] == "stopped" and not final["hidden"]
    assert [(r[0], r[1], r[6]) for r in final["rows"]] == [
        (str(i), p["label"], p["verdict"]) for i, p in enumerate(steps, 1)
    ]
    for row, probe in zip(final["rows"], steps, strict=True):  # req/s and the P95s, as the page rounds them
        assert float(row[2]) == pytest.approx(probe["request_throughput"], rel=0.01, abs=0.01)
        assert float(row[4]) == pytest.approx(probe["p95_e2el_ms"] / 1000, rel=0.01, abs=0.01)
        assert row[8] == f"{probe['sample_extensions']} / {probe['extensions']}"
    best = summary["search"]["highest_pass"]["label"]
    assert final["answer"].startswith(f"highest pass: {best}; lowest fail: none")
    assert final["answer"].endswith(f"stopped: {summary['search']['stop']}")


#: The probe table's note on its clock, and its rows.
READ_CLOCK = """(() => ({
  running: document.getElementById("search-running").textContent,
  clock: (document.getElementById("search-clock") || {}).textContent || "",
  rows: [...document.querySelectorAll("#probes tbody tr")]
    .map((tr) => [...tr.cells].map((td) => td.textContent)),
}))()"""


@pytest.mark.skipif(chromium_binary() is None, reason="chromium not on PATH (make system-deps)")
def test_the_probe_table_of_a_sped_up_target_is_in_deployment_time_and_says_so(tmp_path: Path) -> None:
    """Against a target 10x faster than its deployment (``--target-speedup 10``) the table showed the
    wall clock beside progress lines, a report and capacity.json in deployment time."""
    results = tmp_path / "r"
    with web_ui(tmp_path, SIM, "--target-speedup", "10", results=results) as ui:  # not on the form
        search = {"search": "users", "search_min": "2", "search_max": "4", "step_time": "3s"}
        form = {**LIGHT, **search, "slo": "success>=90%,ttft_p50<=10s"}
        started = start_in_chromium(ui.base, form)
        assert started["success"] is True, started
        shown: dict = {}
        with DevTools(f"{ui.base}/llm") as page:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                shown = page.evaluate(READ_CLOCK)
                if shown["running"] == "stopped" and shown["rows"]:
                    break
                time.sleep(0.3)
        summary = wait_for(results / "summary.json", 30)
    assert summary["config"]["time_scale"] == {"clock": "wall", "target_speedup": 10}  # the file: wall clock
    assert shown["clock"].startswith("deployment time: the target ran 10x faster; latencies x 10, rates / 10")
    steps = summary["search"]["steps"]
    assert [r[1] for r in shown["rows"]] == [p["label"] for p in steps]
    for row, probe in zip(shown["rows"], steps, strict=True):  # the wall clock's numbers, converted
        assert float(row[2]) == pytest.approx(probe["request_throughput"] / 10, rel=0.01, abs=0.01)
        assert float(row[4]) == pytest.approx(probe["p95_e2el_ms"] * 10 / 1000, rel=0.01, abs=0.01)
    expect_exit(ui.proc, 0, ui.log())  # last: on a busy host a step is invalid and the answer withheld (6)
