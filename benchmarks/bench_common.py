"""Pieces the benchmarks share: a free loopback port, CPU pinning, another git ref's code.

Not a benchmark itself; the scripts import it as a sibling (``python benchmarks/x.py`` puts
``benchmarks/`` first on ``sys.path``).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

__all__ = ["REPO", "export", "free_port", "pinned"]

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pinned(cpu: int | None) -> list[str]:
    """``taskset -c CPU`` in front of a command (nothing without a CPU or without taskset)."""
    return ["taskset", "-c", str(cpu)] if cpu is not None and shutil.which("taskset") else []


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
