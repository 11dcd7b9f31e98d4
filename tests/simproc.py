"""Start the bundled simulator as a real subprocess, for tests that need a server.

    from tests.simproc import running_sim, start_sim, stop_sim

    with running_sim("--ttft-ms", "5", "--tpot-ms", "1") as base_url:
        ...  # base_url is "http://127.0.0.1:PORT"

    proc, base_url = start_sim("--mode", "engine")
    try: ...
    finally: stop_sim(proc)

The simulator binds ``--port 0`` and announces its real port on its one stdout line.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["LISTEN_PREFIX", "running_sim", "start_sim", "stop_sim"]

LISTEN_PREFIX = "llm-locust sim listening on "
_REPO = Path(__file__).resolve().parent.parent


def start_sim(
    *args: str,
    timeout: float = 15.0,
    command: Sequence[str] = (),
    env: dict[str, str] | None = None,
    cwd: Path = _REPO,
) -> tuple[subprocess.Popen[str], str]:
    """Launch ``python -m llm_locust.sim --port 0 ARGS``; returns (process, base_url).

    ``--host 127.0.0.1 --port 0`` come first, so ``args`` may override them. ``command``
    replaces ``python -m llm_locust.sim`` (an installed ``llm-locust sim``, or one run inside
    a network namespace), ``env`` the environment (default: this one, with the repository on
    ``PYTHONPATH``). Raises ``RuntimeError`` (with the process's stderr) if it does not announce
    itself.
    """
    cmd = [
        *(command or (sys.executable, "-m", "llm_locust.sim")),
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        *args,
    ]
    if env is None:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(_REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(cwd), env=env
    )
    line = _readline(proc, timeout)
    if not line.startswith(LISTEN_PREFIX):
        stop_sim(proc)
        err = proc.stderr.read() if proc.stderr else ""
        raise RuntimeError(f"simulator did not start: {line!r} {err.strip()}")
    return proc, line[len(LISTEN_PREFIX) :].strip()


def _readline(proc: subprocess.Popen[str], timeout: float) -> str:
    result: list[str] = []
    reader = threading.Thread(target=lambda: result.append(proc.stdout.readline() if proc.stdout else ""))
    reader.daemon = True
    reader.start()
    reader.join(timeout)
    return result[0] if result else ""


def stop_sim(proc: subprocess.Popen[str], timeout: float = 10.0) -> int:
    """SIGTERM, wait, SIGKILL as a last resort. Returns the exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    return proc.returncode


@contextlib.contextmanager
def running_sim(*args: str) -> Iterator[str]:
    """Context manager around :func:`start_sim`; yields the base URL."""
    proc, base_url = start_sim(*args)
    try:
        yield base_url
    finally:
        stop_sim(proc)
