"""Tests started from the web UI's start form (issue 17 §1): typed values, one-line refusals.

Locust copies form fields into its options as strings when the option's default is ``None``
(``request_rate="4"`` then raised ``TypeError: 'str' / 'int'`` in the open-loop dispatcher and
no request was sent), and converts the others with their default's type (``float("abc")``: an
HTTP 500). Here one real ``locust`` with its web UI, against the real simulator, gets the
form's fields exactly as Locust's start page lists them (its ``templateArgs``): two bad values
are refused in one line each, a graded ramp with an SLO is started by an HTTP POST, and an
open-loop rate with a concurrency ceiling is typed into Locust's own start form in headless
Chromium (after a bad value there is refused). The records and the summaries of both tests
are checked.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.browser import DevTools, chromium_binary
from tests.locustproc import expect_exit
from tests.promproc import http_get
from tests.webproc import form_fields, post, rows_of, wait_for, web_ui

pytestmark = pytest.mark.slow
LIGHT = {"prompt_tokens": "16", "max_tokens": "4", "seed": "3"}
EXPECTED = "expected an http:// or https:// URL with a host, e.g. http://127.0.0.1:8000"
SIM = ("--ttft-ms", "20", "--tpot-ms", "2", "--output-tokens", "4")


#: Fill fields of Locust's start form (React inputs: set the value, fire input and change) and
#: press START. Field names are the options' destinations; the page names them in camelCase.
FILL_AND_START = """(values) => {
  const camel = (name) => name.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
  for (const [name, value] of Object.entries(values)) {
    const el = document.querySelector(`[name="${camel(name)}"]`);
    if (!el) throw new Error(`no field ${name} in the start form`);
    const proto = el.tagName === "SELECT" ? HTMLSelectElement.prototype : HTMLInputElement.prototype;
    Object.getOwnPropertyDescriptor(proto, "value").set.call(el, value);
    el.dispatchEvent(new Event("input", { bubbles: true }));
    el.dispatchEvent(new Event("change", { bubbles: true }));
  }
  document.querySelector('button[type="submit"]').click();
}"""
#: The start form is rendered by React after the page loaded.
FORM_READY = (
    "new Promise(ok => { const look = () => (document.forms.length ? ok() : setTimeout(look, 50)); look(); })"
)


def start_in_chromium(base: str, values: dict[str, str]) -> dict[str, Any]:
    """Headless Chromium opens Locust's page, fills its start form, presses START; /swarm's answer."""
    with DevTools(f"{base}/") as page:
        page.evaluate(FORM_READY)
        body = page.response_to(lambda: page.evaluate(f"({FILL_AND_START})({json.dumps(values)})"), "/swarm")
    return json.loads(body)


def page_has(condition: str) -> str:
    """A promise that resolves once ``condition`` holds in the page (polled every 100 ms)."""
    look = f"const look = () => ({condition}) ? ok() : setTimeout(look, 100); look();"
    return f"new Promise(ok => {{ {look} }})"


def _live_test(base: str, test: int, timeout: float = 20.0) -> dict[str, Any]:
    """``/llm/stats`` once test number ``test`` has started."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stats = json.loads(http_get(f"{base}/llm/stats"))
        if stats["run"]["test"] >= test:
            return stats
        time.sleep(0.1)
    raise AssertionError(f"test {test} did not start in {timeout} s")


def max_in_flight(rows: list[dict[str, Any]]) -> int:
    events = sorted([(r["start_time"], 1) for r in rows] + [(r["start_time"] + r["e2e"], -1) for r in rows])
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    return peak


@pytest.mark.skipif(chromium_binary() is None, reason="chromium not on PATH (make system-deps)")
def test_tests_started_from_the_form(tmp_path: Path) -> None:
    results = tmp_path / "r"
    with web_ui(tmp_path, SIM, results=results) as ui:
        base, url = ui.base, ui.url
        fields = form_fields(base)
        assert {"request_rate", "max_concurrency", "ramp", "slo", "workload"} <= set(fields)

        # bad values: one line back, nothing started (time_scale's default is a float: Locust
        # would have raised in float("abc") before any check of ours)
        for name, value, line in (
            ("request_rate", "abc", "--request-rate 'abc': not a number"),
            ("time_scale", "abc", "--time-scale 'abc': not a number"),
            ("ramp", "1,x", "--ramp '1,x': 'x' is not a number"),
        ):
            answer = post(base, {**fields, name: value})
            assert answer == {"success": False, "message": line, "host": url}
        assert json.loads(http_get(f"{base}/stats/requests"))["state"] == "ready"

        # an open-loop rate with a ceiling, typed into Locust's own start form in headless
        # Chromium (the page shows the form while no test has run); a bad value first
        rate = {**LIGHT, "request_rate": "4", "max_concurrency": "2", "run_time": "3s"}
        refused = start_in_chromium(base, {**rate, "max_concurrency": "two"})
        assert refused == {
            "success": False,
            "message": "--max-concurrency 'two': not a whole number",
            "host": url,
        }
        shown = start_in_chromium(base, rate)
        assert shown["success"] is True, shown
        opened = wait_for(results / "summary.json", 60)

        # then a graded ramp with an SLO, by HTTP POST with the form's fields: into the folder
        # of the first test it is refused (never renamed), into a folder named anew it starts
        ramp = {**fields, **LIGHT, "ramp": "1,2", "step_time": "2s", "slo": "success>=90%,ttft_p95<=2s"}
        refused = post(base, {**ramp, "results_dir": str(results)})
        assert refused["success"] is False
        assert refused["message"].startswith(f"--results-dir {results}: already holds results (")
        assert post(base, {**ramp, "results_dir": f"{results}-graded"})["success"] is True
        graded = wait_for(Path(f"{results}-graded") / "summary.json", 60)

        # a third test whose POST leaves the load model's and the SLO's fields out (as an API
        # client may): it runs as the command line says (-u), not with the second's --ramp
        plain = {**LIGHT, "user_count": "1", "spawn_rate": "1", "host": url, "run_time": "2s"}
        graded_live = json.loads(http_get(f"{base}/llm/stats"))
        assert graded_live["result"]["slo_passed"] is not None and graded_live["history"]
        last_t = graded_live["history"][-1]["t"]
        with DevTools(f"{base}/llm") as page:  # the /llm page open across the two tests
            page.evaluate(page_has("points.length > 0 && !document.getElementById('answer').hidden"))
            assert post(base, {**plain, "results_dir": f"{results}-plain"})["success"] is True
            live = _live_test(base, graded_live["run"]["test"] + 1)
            # /llm starts clean: no verdict of the second test, none of its chart points
            assert live["result"] is None
            assert all(p["t"] > last_t for p in live["history"])
            page.evaluate(page_has(f"test === {live['run']['test']} && points.length > 0"))
            shown = page.evaluate(
                "({first: points[0].t, hidden: document.getElementById('answer').hidden, "
                "verdict: document.getElementById('verdict').textContent})"
            )
        # no point of the second test; its SLO verdict gone (the third has no SLO: hidden while it
        # runs, "No SLO" once it ended)
        assert shown["first"] > last_t and (shown["hidden"] or shown["verdict"] == "No SLO"), shown
        third = wait_for(Path(f"{results}-plain") / "summary.json", 60)
    log = ui.log()
    expect_exit(ui.proc, 0, log)  # SIGTERM after the second test ended: 0
    assert "llm-locust: --request-rate 'abc': not a number" in log

    assert opened["config"]["load_model"]["mode"] == "open"
    assert opened["config"]["options"]["request_rate"] == 4.0
    assert opened["config"]["options"]["max_concurrency"] == 2
    rows = rows_of(results)
    assert len(rows) >= 4 and all(r["outcome"] == "ok" for r in rows)
    assert all(r["send_lag"] is not None for r in rows), rows[0]  # sent on the arrival schedule
    assert max_in_flight(rows) <= 2

    assert [s["target"] for s in graded["stages"]] == [1, 2]
    salts = [s["config"]["options"]["prompt_salt"] for s in (opened, graded)]
    assert None not in salts and salts[0] != salts[1]  # each test of the UI its own prompt salt
    assert [o["name"] for o in graded["slo"]["objectives"]] == ["success", "ttft_p95"]
    assert graded["config"]["options"]["request_rate"] is None  # the form's field, cleared
    rows = rows_of(Path(f"{results}-graded"))
    assert not Path(f"{results}-2").exists()
    assert {r["stage"] for r in rows} - {None} == {0, 1} and all(r["outcome"] == "ok" for r in rows)
    end = graded["stages"][-1]["window"]["end"]
    assert all(r["start_time"] >= end - 0.5 for r in rows if r["stage"] is None)  # sent as the plan ended
    assert graded["completed"] + graded["failed"] + sum(graded["excluded"].values()) == len(rows)
    options = third["config"]["options"]
    assert (options["ramp"], options["step_time"], options["slo"]) == (None, 60.0, None), options
    assert not third.get("stages") and third.get("slo") is None and third["completed"] > 0


def test_a_malformed_host_in_the_form_is_refused(tmp_path: Path) -> None:
    """Issue 26 §4: with ``--allowed-hosts '*'`` the form's ``'not a url'`` started a test whose
    requests raised inside the HTTP client; ``ftp://`` was spoken to over HTTP. Each is refused in
    one line naming the value and what is expected, and nothing starts."""
    with web_ui(tmp_path, SIM, "--allowed-hosts", "*") as ui:
        base, url = ui.base, ui.url
        fields = form_fields(base)
        for host, reason in (
            ("not a url", "contains blanks"),
            ("ftp://127.0.0.1:9", "scheme 'ftp' is not http or https"),
            ("127.0.0.1:9", "no scheme"),
            ("http://[::1", "not a URL (invalid ipv6 url)"),
        ):
            line = f"--host '{host}': {reason}: {EXPECTED}"
            answer = post(base, {**fields, **LIGHT, "host": host, "run_time": "2s"})
            assert answer == {"success": False, "message": line, "host": url}
            assert json.loads(http_get(f"{base}/stats/requests"))["state"] == "ready"
    log = ui.log()
    expect_exit(ui.proc, 0, log)
    assert "llm-locust: --host 'not a url': contains blanks" in log and "Traceback" not in log
