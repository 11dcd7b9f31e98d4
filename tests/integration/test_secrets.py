"""The key goes to the target only (issue 10 §2, §3): every way in, every way out, grepped.

A key is set through each way in (``LLM_LOCUST_API_KEY``, ``--api-key``, a ``--header`` value,
credentials in the ``--host`` URL), each a distinct random string, and real runs are made
against the real simulator (which demands the key): headless, with the web UI, and distributed
(a master, a real worker and a rogue worker, ``tests/rogue_worker.py``, that connects to the
master's port with Locust's own RPC classes and prints every message it is sent). Every output
(stdout, stderr, log), every file written (results, ``--html``, ``--csv``), every page and JSON
endpoint of the web UI, its Prometheus ``/metrics`` and the master -> worker messages are
searched for every key. The simulator's accepting the requests shows the key reached the target.
"""

from __future__ import annotations

import ast
import json
import secrets
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.locustproc import BIN, LOCUSTFILE, REPO, env, expect_exit, run_locust
from tests.promproc import free_port, http_get, stop_process
from tests.simproc import running_sim

pytestmark = pytest.mark.slow
LIGHT = ("--prompt-tokens", "8", "--max-tokens", "4")
SIM = ("--ttft-ms", "5", "--tpot-ms", "1", "--output-tokens", "4")


def _key(name: str) -> str:
    return f"sk-{name}-{secrets.token_hex(8)}"


def _files_text(root: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in sorted(root.rglob("*")) if p.is_file())


def _assert_absent(keys: list[str], where: str, text: str) -> None:
    leaked = [k for k in keys if k in text]
    assert not leaked, f"{leaked} in {where}"


def _listening_on(port: int) -> set[str]:
    """The local addresses a TCP socket listens on at ``port`` (``ss``)."""
    command = ["ss", "-ltnH", f"sport = :{port}"]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return {line.split()[3].rsplit(":", 1)[0] for line in out.splitlines() if line.strip()}


def _with_credentials(url: str, secret: str) -> str:
    return url.replace("http://", f"http://user:{secret}@", 1)


def test_headless_run_writes_and_prints_no_key(tmp_path: Path) -> None:
    key, header, userinfo = _key("flag"), _key("header"), _key("url")
    with running_sim(*SIM, "--api-key", key) as url:
        res = run_locust(
            _with_credentials(url, userinfo),
            *LIGHT, "--api-key", key, "--header", f"X-Api-Key: {header}",
            "--html", str(tmp_path / "report.html"), "--csv", str(tmp_path / "stats"),
            results_dir=tmp_path / "r", users=2, run_time="3s",
        )  # fmt: skip
    expect_exit(res, 0)
    assert "Traceback" not in res.stdout + res.stderr
    rows = res.rows
    assert rows and {r["outcome"] for r in rows} == {"ok"}  # the key reached the simulator
    keys = [key, header, userinfo]
    _assert_absent(keys, "stdout/stderr", res.stdout + res.stderr)
    _assert_absent(keys, "the files written", _files_text(tmp_path))
    config = res.summary["config"]
    assert config["target"] == url and config["options"]["headers"] == {"X-Api-Key": "<redacted>"}
    assert "the credentials in --host were removed" in res.stderr


def _post(base: str, fields: dict[str, str]) -> dict[str, Any]:
    data = urllib.parse.urlencode(fields).encode()
    with urllib.request.urlopen(urllib.request.Request(f"{base}/swarm", data=data), timeout=30) as reply:
        return json.loads(reply.read())


def _wait(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} within {timeout} s")


def _up(base: str) -> bool:
    try:
        http_get(f"{base}/", timeout=2)
        return True
    except OSError:
        return False


class Trap:
    """A listening socket that counts the connections made to it (an attacker's host)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        self._stop = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop = True
        self._thread.join(2)
        self.sock.close()


def test_web_ui_shows_no_key_and_cannot_be_turned_against_its_user(tmp_path: Path) -> None:
    key, header, userinfo = _key("env"), _key("header"), _key("url")
    web = free_port()
    base = f"http://127.0.0.1:{web}"
    results = tmp_path / "runs" / "first"
    (tmp_path / "runs" / "old").mkdir(parents=True)
    (tmp_path / "runs" / "old" / "summary.json").write_text("{}")  # an earlier run's results
    trap = Trap()
    log_path = tmp_path / "locust.log"
    with running_sim(*SIM, "--api-key", key) as url:
        cmd = [
            str(BIN / "locust"), "-f", str(LOCUSTFILE), "--host", _with_credentials(url, userinfo),
            "--web-port", str(web), "--header", f"X-Api-Key: {header}", "--results-dir", str(results),
            "--stop-timeout", "10", *LIGHT,
        ]  # fmt: skip
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, env={**env(), "LLM_LOCUST_API_KEY": key}, cwd=REPO
            )
        try:
            _wait(lambda: _up(base), 30, "the web UI is up")
            assert _listening_on(web) == {"127.0.0.1"}  # a key is set: loopback only
            page = http_get(f"{base}/")
            assert "set and not shown" in page
            args = json.loads(page.split("window.templateArgs = ", 1)[1].split("\n", 1)[0])
            fields = {"user_count": "1", "spawn_rate": "1", "host": args["host"], "run_time": "2s"}
            for name, spec in args["extra_options"].items():
                value = spec["default_value"]
                fields[name] = (
                    "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
                )
            assert fields["api_key"] == "" and args["host"] == url

            attack = _post(base, {**fields, "host": trap.url})
            assert attack["success"] is False and "not an allowed target" in attack["message"], attack
            for where in ("../../evil", "/tmp/llm-locust-evil", str(tmp_path / "elsewhere" / "x")):
                refused = _post(base, {**fields, "results_dir": where})
                assert refused["success"] is False and "outside the results root" in refused["message"], where
            overwrite = _post(base, {**fields, "results_dir": str(tmp_path / "runs" / "old")})
            assert overwrite["success"] is False and "already holds results" in overwrite["message"]
            assert json.loads(http_get(f"{base}/stats/requests"))["state"] == "ready"

            started = _post(base, fields)  # the key field empty: the configured key is kept
            assert started["success"] is True, started
            _wait(lambda: (results / "summary.json").exists(), 60, "the run's summary")
            seen = [page, json.dumps(attack), json.dumps(started)]
            for path in (
                "/",
                "/llm",
                "/llm/stats",
                "/stats/requests",
                "/logs",
                "/stats/report",
                "/exceptions",
            ):
                seen.append(http_get(f"{base}{path}"))
        finally:
            stop_process(proc)
            trap.close()
    text = log_path.read_text()
    assert "Traceback" not in text, text[-3000:]
    assert "the web UI listens on 127.0.0.1 only" in text
    assert trap.connections == 0  # the form could not send the key (or anything) to another host
    rows = [json.loads(line) for line in (results / "requests.jsonl").read_text().splitlines()]
    assert rows and {r["outcome"] for r in rows} == {"ok"}
    assert (
        not (tmp_path / "elsewhere").exists()
        and json.loads((tmp_path / "runs" / "old" / "summary.json").read_text()) == {}
    )
    keys = [key, header, userinfo]
    _assert_absent(keys, "the pages and endpoints", "\n".join(seen))
    _assert_absent(keys, "the log", text)
    _assert_absent(keys, "the files written", _files_text(tmp_path))


def test_distributed_run_sends_no_key_to_workers(tmp_path: Path) -> None:
    key, header = _key("flag"), _key("header")
    port = free_port()
    results = tmp_path / "r"
    master_log, worker_log = tmp_path / "master.log", tmp_path / "worker.log"
    with running_sim(*SIM, "--api-key", key) as url:
        master_cmd = [
            str(BIN / "locust"), "-f", str(LOCUSTFILE), "--master", "--headless", "--expect-workers", "2",
            "--master-bind-port", str(port), "--host", url, "-u", "2", "-r", "2", "-t", "4s",
            "--api-key", key, "--header", f"X-Api-Key: {header}", "--results-dir", str(results),
            "--stop-timeout", "10", *LIGHT,
        ]  # fmt: skip
        with open(master_log, "wb") as log:
            master = subprocess.Popen(master_cmd, stdout=log, stderr=subprocess.STDOUT, env=env(), cwd=REPO)
        rogue = subprocess.Popen(
            [sys.executable, "-m", "tests.rogue_worker", str(port)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env(), cwd=REPO,
        )  # fmt: skip
        # the real worker reads the key and the header from its own environment, as a pod from its Secret
        worker_env = {**env(), "LLM_LOCUST_API_KEY": key, "LLM_LOCUST_HEADER": f"X-Api-Key: {header}"}
        worker_cmd = [str(BIN / "locust"), "-f", str(LOCUSTFILE), "--worker", "--master-port", str(port)]
        with open(worker_log, "wb") as log:
            worker = subprocess.Popen(
                worker_cmd, stdout=log, stderr=subprocess.STDOUT, env=worker_env, cwd=REPO
            )
        try:
            _wait(lambda: bool(_listening_on(port)), 30, "the master listens")
            assert _listening_on(port) == {"127.0.0.1"}  # not every interface
            assert master.wait(120) == 0, master_log.read_text()[-3000:]
            worker.wait(30)
            channel = rogue.communicate(timeout=30)[0]
        finally:
            for proc in (rogue, worker, master):
                stop_process(proc)
    spawns = [line for line in channel.splitlines() if line.startswith("spawn\t")]
    assert spawns, channel  # the rogue was sent the options
    options = ast.literal_eval(spawns[0].split("\t", 1)[1])["parsed_options"]
    assert options["model"] is None and options["prompt_tokens"] == "8"  # the other options do travel
    _assert_absent([key, header], "the master -> worker messages", channel)
    for path in (master_log, worker_log):
        text = path.read_text()
        assert "Traceback" not in text, text[-3000:]
        _assert_absent([key, header], path.name, text)
    assert "the master accepts workers on 127.0.0.1 only" in master_log.read_text()
    rows = [json.loads(line) for line in (results / "requests.jsonl").read_text().splitlines()]
    assert rows and {r["outcome"] for r in rows} == {"ok"}  # the worker had the key from its environment
    _assert_absent([key, header], "the files written", _files_text(tmp_path))
