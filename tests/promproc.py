"""A real Prometheus server on loopback for tests, and the locust processes it scrapes.

    with running_prometheus(tmp_path, [f"127.0.0.1:{port}"]) as prom:
        ...
        prom.query("sum(rate(llm_locust_generation_tokens_total[10s]))", at=t)

Prometheus gets a temporary config (1 s scrape interval) and data directory, listens on
a free loopback port, and is stopped (SIGTERM, then SIGKILL) when the block ends.
:func:`write_locustfile` writes a locustfile that installs the exporter, the server
metrics scraper and the web UI page itself (for runs before ``run.py`` calls them;
every install function is idempotent, so it keeps working after).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.locustproc import BIN, REPO, env, expect_exit

__all__ = [
    "Prometheus",
    "free_port",
    "http_get",
    "prometheus_binary",
    "run_to_end",
    "running_prometheus",
    "start_locust",
    "stop_process",
    "write_locustfile",
]

LOCUSTFILE = """
import locust  # noqa: F401  (gevent monkey-patching first)

from llm_locust.runtime.user import LLMUser  # the exporter, server metrics and /llm come with it


class ChatUser(LLMUser):
    pass
"""


def write_locustfile(directory: Path) -> Path:
    path = directory / "live_locustfile.py"
    path.write_text(LOCUSTFILE)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_get(url: str, timeout: float = 5.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read().decode()


def start_locust(locustfile: Path, host: str, *args: str, log_path: Path) -> subprocess.Popen[bytes]:
    """``locust -f locustfile --host host ARGS`` in the background; output goes to ``log_path``."""
    cmd = [str(BIN / "locust"), "-f", str(locustfile), "--host", host, "--stop-timeout", "10", *args]
    log = open(log_path, "wb")  # noqa: SIM115 (closed by the child's exit; small)
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env(), cwd=str(REPO))


def stop_process(proc: subprocess.Popen[Any], timeout: float = 10.0) -> int:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def run_to_end(locustfile: Path, host: str, *args: str, log_path: Path, timeout: float) -> str:
    """A headless ``locust`` run (:func:`start_locust`) waited for, stopped if it outlives
    ``timeout``; asserts exit code 0 and no traceback, and returns its log."""
    proc = start_locust(locustfile, host, *args, log_path=log_path)
    try:
        proc.wait(timeout)
    finally:
        stop_process(proc)
    log = log_path.read_text()
    expect_exit(proc, 0, log)
    return log


def prometheus_binary() -> str | None:
    return shutil.which("prometheus")


class Prometheus:
    def __init__(self, url: str) -> None:
        self.url = url

    def api(self, path: str, **params: Any) -> Any:
        query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        body = json.loads(http_get(f"{self.url}/api/v1/{path}?{query}", timeout=10))
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """Instant vector (or scalar as one item) at ``at`` (unix seconds; default now)."""
        data = self.api("query", query=expr, time=at)
        if data["resultType"] in ("scalar", "string"):
            return [{"metric": {}, "value": data["result"]}]
        return data["result"]

    def value(self, expr: str, at: float | None = None) -> float:
        result = self.query(expr, at)
        assert len(result) == 1, (expr, result)
        return float(result[0]["value"][1])

    def targets_up(self) -> bool:
        targets = self.api("targets")["activeTargets"]
        return bool(targets) and all(t["health"] == "up" for t in targets)


_CONFIG = """global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: llm-locust
    static_configs:
      - targets: {targets}
"""


@contextlib.contextmanager
def running_prometheus(workdir: Path, targets: list[str], timeout: float = 30.0) -> Iterator[Prometheus]:
    binary = prometheus_binary()
    assert binary is not None, "prometheus is not on PATH"
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "prometheus.yml"
    config.write_text(_CONFIG.format(targets=json.dumps(targets)))
    port = free_port()
    log = open(workdir / "prometheus.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    prom = Prometheus(f"http://127.0.0.1:{port}")
    try:
        _wait_ready(prom, proc, workdir, timeout)
        yield prom
    finally:
        stop_process(proc)
        log.close()


def _wait_ready(prom: Prometheus, proc: subprocess.Popen[bytes], workdir: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"prometheus exited: {(workdir / 'prometheus.log').read_text()[-2000:]}")
        with contextlib.suppress(OSError):
            if "Ready" in http_get(f"{prom.url}/-/ready", timeout=1):
                return
        time.sleep(0.2)
    raise RuntimeError("prometheus did not become ready")
