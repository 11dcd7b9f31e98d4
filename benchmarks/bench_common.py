"""Pieces the benchmarks share: a free loopback port, CPU pinning, another git ref's code, and a
sampler of a process's CPU.

Not a benchmark itself; the scripts import it as a sibling (``python benchmarks/x.py`` puts
``benchmarks/`` first on ``sys.path``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

__all__ = ["REPO", "ProcessSampler", "export", "free_port", "pinned", "write_result"]

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pinned(cpu: int | str | None) -> list[str]:
    """``taskset -c CPU`` in front of a command (``CPU`` may be a list, ``0,1``; nothing without
    a CPU, with ``none``, or without taskset)."""
    if cpu is None or str(cpu) == "none" or not shutil.which("taskset"):
        return []
    return ["taskset", "-c", str(cpu)]


def export(ref: str, into: Path) -> Path:
    """The package and locustfiles of git ``ref`` under ``into`` (``.``: the working tree, as is)."""
    if ref == ".":
        return REPO
    if into.exists():
        return into
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref, "llm_locust", "locustfiles"], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


class ProcessSampler(threading.Thread):
    """``(time, CPU seconds of pid, probe())`` every ``period`` s; a sample whose probe raises
    ``OSError`` or ``ValueError`` is skipped; the thread ends when the process does."""

    def __init__(self, pid: int, probe: Callable[[], float], period: float = 1.0, tree: bool = False) -> None:
        super().__init__(daemon=True)
        self.proc = psutil.Process(pid)
        self.probe = probe
        self.period = period
        self.tree = tree  # add the CPU of the process's children (locust --processes N)
        self.samples: list[tuple[float, float, float]] = []
        self.system: list[float] = []  # the kernel's share of each sample's CPU seconds, in step with samples
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(self.period):
            try:
                cpu, system = self.cpu_times()
                value = self.probe()
            except psutil.Error:
                return
            except (OSError, ValueError):
                continue
            self.samples.append((time.time(), cpu, value))
            self.system.append(system)

    def cpu_seconds(self) -> float:
        return self.cpu_times()[0]

    def cpu_times(self) -> tuple[float, float]:
        """CPU seconds of the process (and its children with ``tree``): all, and in the kernel."""
        procs = [self.proc, *(self.proc.children(recursive=True) if self.tree else ())]
        total = system = 0.0
        for proc in procs:
            try:
                times = proc.cpu_times()
            except psutil.NoSuchProcess:
                if proc is self.proc:
                    raise
                continue
            total += times.user + times.system
            system += times.system
        return total, system


def write_result(name: str, args: argparse.Namespace, runs: list[dict[str, Any]], **extra: Any) -> None:
    """``args.out``: the benchmark's name, its arguments, Python, the time and its runs, as JSON."""
    out = {
        "benchmark": name,
        **extra,
        "args": vars(args),
        "python": sys.version.split()[0],
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
        "runs": runs,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")
