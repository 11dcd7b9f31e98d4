"""A real simulator and a real Locust web UI against it, for the tests that start runs from the form.

    with web_ui(tmp_path, ("--ttft-ms", "20"), results=tmp_path / "r") as ui:
        fields = form_fields(ui.base)        # the start form's fields, as Locust's page lists them
        assert post(ui.base, {**fields, "ramp": "1,2"})["success"] is True
        summary = wait_for(tmp_path / "r" / "summary.json", 60)
    expect_exit(ui.proc, 0, ui.log())       # SIGTERM after the run ended: 0

The simulator and ``locust`` (web UI on a free loopback port, ``--stop-timeout 10``) are started,
the block runs once the UI answers, and both are stopped (SIGTERM) when it ends, also after a
failure. The helpers read the form from Locust's own page and POST it as the page would.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.locustproc import LOCUSTFILE
from tests.promproc import free_port, http_get, start_locust, stop_process
from tests.simproc import running_sim

__all__ = ["WebUI", "form_fields", "post", "rows_of", "wait_for", "wait_for_ui", "web_ui"]


@dataclass(frozen=True)
class WebUI:
    base: str  # the web UI, "http://127.0.0.1:PORT"
    url: str  # the simulator the runs target
    proc: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextlib.contextmanager
def web_ui(
    tmp_path: Path,
    sim_args: Sequence[str],
    *locust_args: str,
    results: Path | None = None,
    locustfile: Path = LOCUSTFILE,
) -> Iterator[WebUI]:
    """``llm-locust sim SIM_ARGS`` and ``locust -f locustfile --host SIM LOCUST_ARGS`` with its web
    UI; yields once the UI answers. The log is ``tmp_path / "locust.log"``."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = tmp_path / "locust.log"
    folder = ("--results-dir", str(results)) if results is not None else ()
    with running_sim(*sim_args) as url:
        proc = start_locust(
            locustfile,
            url,
            *("--web-host", "127.0.0.1", "--web-port", str(port), *folder, *locust_args),
            log_path=log_path,
        )
        try:
            wait_for_ui(base)
            yield WebUI(base, url, proc, log_path)
        finally:
            stop_process(proc)


def wait_for_ui(base: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            http_get(f"{base}/", timeout=2)
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("the web UI did not come up")


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
    """POST ``fields`` to ``/swarm`` as the start form does; Locust's JSON answer."""
    data = urllib.parse.urlencode(fields).encode()
    with urllib.request.urlopen(urllib.request.Request(f"{base}/swarm", data=data), timeout=10) as response:
        return json.loads(response.read())


def wait_for(path: Path, timeout: float) -> dict[str, Any]:
    """The JSON file ``path`` once it exists and parses (a run's summary)."""
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
