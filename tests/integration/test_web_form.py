"""Tests started from the web UI's start form (issue 17 §1): typed values, one-line refusals.

Locust copies form fields into its options as strings when the option's default is ``None``
(``request_rate="4"`` then raised ``TypeError: 'str' / 'int'`` in the open-loop dispatcher and
no request was sent), and converts the others with their default's type (``float("abc")``: an
HTTP 500). Here one real ``locust`` with its web UI, against the real simulator, gets the
form's fields exactly as Locust's start page lists them (its ``templateArgs``): two bad values
are refused in one line each, a graded ramp with an SLO is started by an HTTP POST, and an
open-loop rate with a concurrency ceiling by headless Chromium submitting the form. The
records and the summaries of both tests are checked.
"""

from __future__ import annotations

import html
import json
import re
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.browser import chromium_binary, dump_dom
from tests.locustproc import LOCUSTFILE
from tests.promproc import free_port, http_get, start_locust, stop_process
from tests.simproc import running_sim

pytestmark = pytest.mark.slow
LIGHT = {"prompt_tokens": "16", "max_tokens": "4", "seed": "3"}


def form_fields(base: str) -> dict[str, str]:
    """The start form's fields and their initial values, from Locust's own page."""
    page = http_get(f"{base}/")
    match = re.search(r"window\.templateArgs = (\{.*?\})\s*$", page, re.M)
    assert match, "no templateArgs in Locust's page"
    args = json.loads(match.group(1))
    fields = {"user_count": "1", "spawn_rate": "1", "host": args.get("host") or "", "run_time": ""}
    for name, spec in args["extra_options"].items():
        value = spec["default_value"]
        fields[name] = "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
    return fields


def post(base: str, fields: dict[str, str]) -> dict[str, Any]:
    data = urllib.parse.urlencode(fields).encode()
    with urllib.request.urlopen(urllib.request.Request(f"{base}/swarm", data=data), timeout=10) as response:
        return json.loads(response.read())


def submit_in_chromium(base: str, fields: dict[str, str], page: Path) -> dict[str, Any]:
    """Headless Chromium submits an HTML form with ``fields`` to ``/swarm``; its response as shown."""
    inputs = "".join(
        f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">' for k, v in fields.items()
    )
    page.write_text(
        f'<html><body onload="document.forms[0].submit()"><form method="post" action="{base}/swarm">'
        f"{inputs}</form></body></html>"
    )
    dom = dump_dom(page.as_uri(), budget_ms=8000)
    match = re.search(r"<pre[^>]*>(.*?)</pre>", dom, re.S)
    assert match, dom[-2000:]
    return json.loads(html.unescape(match.group(1)))


def wait_for(path: Path, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            try:
                return json.loads(path.read_text())
            except ValueError:
                pass  # being written
        time.sleep(0.2)
    raise AssertionError(f"{path} did not appear in {timeout} s")


def rows_of(directory: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (directory / "requests.jsonl").read_text().splitlines()]


def max_in_flight(rows: list[dict[str, Any]]) -> int:
    events = sorted([(r["start_time"], 1) for r in rows] + [(r["start_time"] + r["e2e"], -1) for r in rows])
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    return peak


@pytest.mark.skipif(chromium_binary() is None, reason="chromium not on PATH (make system-deps)")
def test_tests_started_from_the_form(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    results = tmp_path / "r"
    with running_sim("--ttft-ms", "20", "--tpot-ms", "2", "--output-tokens", "4") as url:
        proc = start_locust(
            LOCUSTFILE,
            url,
            *("--web-host", "127.0.0.1", "--web-port", str(port), "--results-dir", str(results)),
            log_path=tmp_path / "locust.log",
        )
        try:
            _wait_for_ui(base)
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

            # a graded ramp with an SLO, by HTTP POST
            ramp = {**fields, **LIGHT, "ramp": "1,2", "step_time": "2s", "slo": "success>=90%,ttft_p95<=2s"}
            assert post(base, ramp)["success"] is True
            first = wait_for(results / "summary.json", 60)

            # an open-loop rate with a ceiling, from headless Chromium's form submission
            rate = {**fields, **LIGHT, "request_rate": "4", "max_concurrency": "2", "run_time": "3s"}
            shown = submit_in_chromium(base, rate, tmp_path / "form.html")
            assert shown["success"] is True, shown
            second = wait_for(Path(f"{results}-2") / "summary.json", 60)
        finally:
            stop_process(proc)
    log = (tmp_path / "locust.log").read_text()
    assert "Traceback" not in log, log[-3000:]
    assert "llm-locust: --request-rate 'abc': not a number" in log

    assert [s["target"] for s in first["stages"]] == [1, 2]
    assert [o["name"] for o in first["slo"]["objectives"]] == ["success", "ttft_p95"]
    rows = rows_of(results)
    assert {r["stage"] for r in rows} - {None} == {0, 1} and all(r["outcome"] == "ok" for r in rows)
    end = first["stages"][-1]["window"]["end"]
    assert all(r["start_time"] >= end - 0.5 for r in rows if r["stage"] is None)  # sent as the plan ended
    assert first["completed"] == len([r for r in rows if not r.get("warmup")])

    assert second["config"]["load_model"]["mode"] == "open"
    assert second["config"]["options"]["request_rate"] == 4.0
    assert second["config"]["options"]["max_concurrency"] == 2
    rows = rows_of(Path(f"{results}-2"))
    assert len(rows) >= 4 and all(r["outcome"] == "ok" for r in rows)
    assert all(r["send_lag"] is not None for r in rows), rows[0]  # sent on the arrival schedule
    assert max_in_flight(rows) <= 2


def _wait_for_ui(base: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            http_get(f"{base}/", timeout=2)
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("the web UI did not come up")
