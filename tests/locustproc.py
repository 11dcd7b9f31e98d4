"""Run real ``locust`` / ``llm-locust`` processes from tests and read what they left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "REPO",
    "LocustResult",
    "expect_exit",
    "free_port",
    "llm_locust_cli",
    "processes",
    "run_distributed",
    "run_locust",
    "run_paused",
]

REPO = Path(__file__).resolve().parent.parent
LOCUSTFILE = REPO / "locustfiles" / "chat.py"
BIN = Path(sys.executable).parent


@dataclass
class LocustResult:
    returncode: int
    stdout: str
    stderr: str
    results_dir: Path | None

    @property
    def summary(self) -> dict[str, Any]:
        assert self.results_dir is not None
        return json.loads((self.results_dir / "summary.json").read_text())

    @property
    def rows(self) -> list[dict[str, Any]]:
        assert self.results_dir is not None
        with open(self.results_dir / "requests.jsonl") as f:
            return [json.loads(line) for line in f]


def expect_exit(run: Any, code: int, *logs: str) -> None:
    """``run`` ended with exit code ``code`` and printed no Python traceback.

    ``run`` is anything with a ``returncode`` (a ``CompletedProcess``, a :class:`LocustResult`,
    a finished ``Popen``); its ``stdout``/``stderr`` are read when they are text, ``logs`` are
    the text of files the process wrote instead (a ``Popen`` to a log file). A crashed user
    task, a greenlet that died or a listener that raised leaves a traceback even when the
    exit code looks right: every subprocess test calls this.
    """
    texts = [
        t for t in (getattr(run, "stdout", None), getattr(run, "stderr", None), *logs) if isinstance(t, str)
    ]
    output = "\n".join(texts)
    assert run.returncode == code, f"exit code {run.returncode}, expected {code}:\n{output[-3000:]}"
    assert "Traceback" not in output, output[output.index("Traceback") :][:3000]


def _rows_of(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def run_paused(
    cmd: list[str], results_dir: Path, rows: int, settle_s: float, pause_s: float, timeout: float = 180.0
) -> tuple[LocustResult, float, float]:
    """Run ``cmd`` (a headless locust writing to ``results_dir``), paused with SIGSTOP for
    ``pause_s`` once ``rows`` records are written and ``settle_s`` more passed; returns the run
    and when the pause began and ended (wall clock)."""
    import signal
    import time

    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(), cwd=REPO
    )
    try:
        deadline = time.time() + 60
        while len(_rows_of(results_dir / "requests.jsonl")) < rows:  # requests flow
            assert time.time() < deadline and proc.poll() is None, "no records"
            time.sleep(0.05)
        time.sleep(settle_s)
        paused = time.time()
        os.kill(proc.pid, signal.SIGSTOP)
        time.sleep(pause_s)  # the stimulus: the process does not run
        resumed = time.time()
        os.kill(proc.pid, signal.SIGCONT)
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
    return LocustResult(proc.returncode, out, err, results_dir), paused, resumed


def processes(n: int) -> tuple[str, ...]:
    """``--processes n`` on a free master port (Locust's default 5557 is shared by every run on the
    machine: two concurrent runs would take each other's workers)."""
    port = str(free_port())
    return ("--processes", str(n), "--master-bind-port", port, "--master-port", port)


def env() -> dict[str, str]:
    e = dict(os.environ)
    e.pop("OPENAI_API_KEY", None)
    e["PYTHONPATH"] = str(REPO) + os.pathsep + e.get("PYTHONPATH", "")
    return e


def run_locust(
    host: str,
    *args: str,
    results_dir: Path | None = None,
    users: int = 4,
    run_time: str = "8s",
    timeout: float = 120.0,
    extra_env: dict[str, str] | None = None,
    spawn_rate: float | str | None = "users",
    stop_timeout: str | None = "30",
) -> LocustResult:
    """``locust -f locustfiles/chat.py --headless`` against ``host``; waits for it to exit.

    ``-r`` defaults to ``users`` (``spawn_rate=None`` leaves it out, as a user who never
    sets it); ``stop_timeout=None`` leaves ``--stop-timeout`` out.
    """
    cmd = locust_command(host, users, run_time, spawn_rate, stop_timeout, results_dir, *args)
    e = env()
    e.update(extra_env or {})
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e, cwd=str(REPO))
    return LocustResult(proc.returncode, proc.stdout, proc.stderr, results_dir)


def locust_command(
    host: str,
    users: int | None,
    run_time: str | None,
    spawn_rate: float | str | None,
    stop_timeout: str | None,
    results_dir: Path | None,
    *args: str,
) -> list[str]:
    """The headless ``locust`` command line of :func:`run_locust` (``None`` leaves a flag out)."""
    cmd = [str(BIN / "locust"), "-f", str(LOCUSTFILE), "--host", host, "--headless"]
    if users is not None:
        cmd += ["-u", str(users)]
    rate = users if spawn_rate == "users" else spawn_rate
    if rate is not None:
        cmd += ["-r", str(rate)]
    if run_time is not None:
        cmd += ["-t", run_time]
    if stop_timeout is not None:
        cmd += ["--stop-timeout", stop_timeout]
    if results_dir is not None:
        cmd += ["--results-dir", str(results_dir)]
    return cmd + list(args)


def llm_locust_cli(
    *args: str, timeout: float = 60.0, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "llm-locust"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**env(), **(extra_env or {})},
        cwd=str(REPO),
    )


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_distributed(
    host: str,
    *args: str,
    results_dir: Path,
    workers: int = 2,
    users: int = 4,
    run_time: str = "10s",
    timeout: float = 180.0,
    worker_args: tuple[str, ...] = (),
    master_args: tuple[str, ...] = (),
) -> LocustResult:
    """A real master and ``workers`` real worker processes on loopback; waits for the master."""
    port = free_port()
    common = [str(BIN / "locust"), "-f", str(LOCUSTFILE), "--host", host]
    results_dir.parent.mkdir(parents=True, exist_ok=True)
    paths = [results_dir.parent / f"{results_dir.name}-worker{i}.log" for i in range(workers)]
    logs = [open(path, "wb") for path in paths]  # noqa: SIM115 (closed below)
    master = subprocess.Popen(
        [
            *common,
            "--master",
            "--master-bind-host",
            "127.0.0.1",
            "--master-bind-port",
            str(port),
            "--headless",
            "--expect-workers",
            str(workers),
            "-u",
            str(users),
            "-r",
            str(users),
            "-t",
            run_time,
            "--stop-timeout",
            "30",
            "--results-dir",
            str(results_dir),
            *args,
            *master_args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
        cwd=str(REPO),
    )
    procs = [
        subprocess.Popen(
            [
                *common,
                "--worker",
                "--master-host",
                "127.0.0.1",
                "--master-port",
                str(port),
                *args,
                *worker_args,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env(),
            cwd=str(REPO),
        )
        for log in logs
    ]
    try:
        out, err = master.communicate(timeout=timeout)
    finally:
        for p in [master, *procs]:
            if p.poll() is None:
                p.kill()
            p.wait()
        for log in logs:
            log.close()
    # the workers' output joins the master's stderr: a traceback on a worker shows in expect_exit
    for i, path in enumerate(paths):
        err += f"\n--- worker {i} ---\n" + path.read_text(errors="replace")
    return LocustResult(master.returncode, out, err, results_dir)
