"""Headless Chromium for tests: a page's screenshot and its DOM after scripts ran.

Chromium runs with a throwaway profile, no network besides the page's own origin
(loopback in our tests), and a virtual-time budget, so timers and fetches of the page
settle before the screenshot or the DOM dump is taken.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["chromium_binary", "dump_dom", "screenshot"]

_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def chromium_binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _run(*args: str, budget_ms: int, timeout: float) -> subprocess.CompletedProcess[str]:
    binary = chromium_binary()
    assert binary is not None, "chromium is not on PATH"
    with tempfile.TemporaryDirectory(prefix="llm-locust-chromium-") as profile:
        return subprocess.run(
            [binary, *_FLAGS, f"--user-data-dir={profile}", f"--virtual-time-budget={budget_ms}", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def screenshot(
    url: str, path: Path, size: tuple[int, int] = (1400, 1000), budget_ms: int = 5000, timeout: float = 60
) -> Path:
    """Save a PNG of ``url`` at ``size`` to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    proc = _run(
        f"--screenshot={path}",
        f"--window-size={size[0]},{size[1]}",
        url,
        budget_ms=budget_ms,
        timeout=timeout,
    )
    if not path.exists():
        raise RuntimeError(f"chromium made no screenshot: {proc.stderr[-2000:]}")
    return path


def dump_dom(url: str, budget_ms: int = 5000, timeout: float = 60) -> str:
    """The serialized DOM of ``url`` after its scripts ran."""
    proc = _run("--dump-dom", "--window-size=1400,1000", url, budget_ms=budget_ms, timeout=timeout)
    if "<html" not in proc.stdout:
        raise RuntimeError(f"chromium dumped no DOM: {proc.stderr[-2000:]}")
    return proc.stdout
