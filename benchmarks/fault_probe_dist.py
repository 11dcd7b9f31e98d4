"""The distributed cases of :mod:`fault_probe` (issue 26 items 1 and 11): a real master and one
real worker of the installed ``llm-locust`` on loopback, a process paused or killed mid-run."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

LIGHT = ("--prompt-tokens", "32", "--max-tokens", "16", "--skip-preflight", "--model", "m")


def closed_port() -> int:
    """A free loopback port (bound once, released): the master's, or a refused one nobody listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rows(path: Path) -> list[dict]:
    rows = []
    for line in path.read_text().splitlines() if path.exists() else []:
        if line.endswith("}"):
            rows.append(json.loads(line))
    return rows


def _wait(pred: Callable[[], bool], limit: float) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.1)
    return False


def cluster(
    binary: Path, base: str, d: Path, run_time: str, workers: int = 1
) -> tuple[subprocess.Popen, list[subprocess.Popen]]:
    port = str(closed_port())
    common = [str(binary), "run", "--host", f"{base}/ok", *LIGHT]
    master = [*common, "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", port]
    master += [
        "--headless",
        "--expect-workers",
        "1",
        "-u",
        "2",
        "-r",
        "2",
        "-t",
        run_time,
        "--results-dir",
        "res",
    ]
    worker = [*common, "--worker", "--master-host", "127.0.0.1", "--master-port", port]
    m = subprocess.Popen(master, stdout=(d / "m.out").open("w"), stderr=subprocess.STDOUT, cwd=d)
    logs = [(d / f"w{i}.out").open("w") for i in range(workers)]
    return m, [subprocess.Popen(worker, stdout=f, stderr=subprocess.STDOUT, cwd=d) for f in logs]


def _end(*procs: subprocess.Popen) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def worker_paused(workers: int) -> Callable[[Path, str, Path], tuple[int | None, str, list[dict], str]]:
    """SIGSTOP the first of ``workers`` workers 6 s once records flow, then SIGCONT."""

    def run(binary: Path, base: str, d: Path) -> tuple[int | None, str, list[dict], str]:
        m, ws = cluster(binary, base, d, "18s", workers)
        try:
            if not _wait(lambda: len(_rows(d / "res" / "requests.jsonl")) >= 5, 25):
                return m.poll(), "no records before the pause", [], "0 setup failed"
            ws[0].send_signal(signal.SIGSTOP)
            time.sleep(6)
            ws[0].send_signal(signal.SIGCONT)
            resumed = time.time()
            m.wait(timeout=40)
            left = _wait(lambda: all(w.poll() is not None for w in ws), 20)
        finally:
            _end(m, *ws)
        rows = _rows(d / "res" / "requests.jsonl")
        after = {r["worker"] for r in rows if r["start_time"] > resumed + 1}
        text = "\n".join((d / n).read_text() for n in ["m.out", *(f"w{i}.out" for i in range(workers))])
        note = (
            f"{len(after)} of {workers} workers sent requests after the resume (master exit {m.returncode})"
        )
        return m.returncode, text, rows, note + ("" if left else "; a worker outlived the master by 20 s")

    return run


def master_killed(binary: Path, base: str, d: Path) -> tuple[int | None, str, list[dict], str]:
    """SIGKILL the master once records flow; (worker exit, text, rows, how long the worker lived)."""
    m, (w,) = cluster(binary, base, d, "60s")
    try:
        if not _wait(lambda: len(_rows(d / "res" / "requests.jsonl")) >= 5, 25):
            return w.poll(), "no records before the kill", [], "setup failed"
        m.kill()
        killed = time.monotonic()
        lived = "worker alive 30 s after the kill"
        if _wait(lambda: w.poll() is not None, 30):
            lived = f"worker exited {time.monotonic() - killed:.1f} s after the kill"
    finally:
        _end(m, w)
    return w.returncode, (d / "w0.out").read_text(), _rows(d / "res" / "requests.jsonl"), lived
