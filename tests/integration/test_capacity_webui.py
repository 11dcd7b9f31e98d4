"""A capacity search started from the web UI's start form: its steps appear as stages as it goes."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.integration.test_web_form import LIGHT, _wait_for_ui, form_fields, post, wait_for
from tests.locustproc import LOCUSTFILE
from tests.promproc import free_port, http_get, start_locust, stop_process
from tests.simproc import running_sim

pytestmark = pytest.mark.slow


def test_a_search_from_the_form_grows_its_stages_live(tmp_path: Path) -> None:
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
        finally:
            stop_process(proc)
    log = (tmp_path / "locust.log").read_text()
    assert "Traceback" not in log, log[-3000:]
    assert seen[0] == ["users=2"] and ["users=2", "users=4"] in seen, seen  # one stage, then two
    result = summary["search"]
    assert [p["level"] for p in result["steps"]] == [2, 4] and result["stop_reason"] == "maximum"
    assert result["capacity"] == 4 and summary["config"]["options"]["search"] == "users"
