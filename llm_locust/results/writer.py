"""The results folder: ``requests.jsonl`` as requests finish, ``summary.json`` at the end.

Each record is appended and flushed the moment it arrives, so a crash loses at most the
requests still in flight. The summary is computed at the end by reading the file back,
which keeps the process's memory flat however long the run, and makes the summary a
pure function of what is on disk.

Without ``--results-dir`` the records go to a temporary spool file instead, so the
end-of-run table can still be computed exactly; the spool is deleted at exit.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["RESULT_FILES", "ResultsDirError", "ResultsWriter", "check_results_dir", "read_records"]

REQUESTS_FILE = "requests.jsonl"
SUMMARY_FILE = "summary.json"
RESULT_FILES = (REQUESTS_FILE, SUMMARY_FILE)


class ResultsDirError(ValueError):
    """The results directory cannot be used (holds results already, or is not writable)."""


def check_results_dir(path: str | os.PathLike[str], overwrite: bool) -> Path:
    """Create ``path`` if missing; refuse one that already holds results unless ``overwrite``."""
    directory = Path(path)
    if directory.exists() and not directory.is_dir():
        raise ResultsDirError(f"--results-dir {directory}: exists and is not a directory")
    existing = [name for name in RESULT_FILES if (directory / name).exists()]
    if existing and not overwrite:
        raise ResultsDirError(
            f"--results-dir {directory}: already holds results ({', '.join(existing)}); "
            "choose another directory or pass --overwrite"
        )
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / ".llm-locust-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise ResultsDirError(f"--results-dir {directory}: not writable ({exc.strerror})") from None
    return directory


class ResultsWriter:
    """Appends records to ``requests.jsonl`` (or a spool) and writes ``summary.json``."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        if directory is None:
            handle, name = tempfile.mkstemp(prefix="llm-locust-", suffix=".jsonl")
            os.close(handle)
            self.requests_path = Path(name)
        else:
            self.requests_path = directory / REQUESTS_FILE
        self._file = open(self.requests_path, "w", encoding="utf-8")  # noqa: SIM115 (kept open)
        self.count = 0

    def write(self, row: dict[str, Any]) -> None:
        self._file.write(json.dumps(row, separators=(",", ":")) + "\n")
        self._file.flush()
        self.count += 1

    @property
    def closed(self) -> bool:
        return self._file.closed

    def rows(self) -> Iterator[dict[str, Any]]:
        self._file.flush()
        return read_records(self.requests_path)

    def write_summary(self, summary: dict[str, Any]) -> Path | None:
        if self.directory is None:
            return None
        path = self.directory / SUMMARY_FILE
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(summary, indent=2, default=_jsonable) + "\n", encoding="utf-8")
        tmp.replace(path)
        return path

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()
        if self.directory is None:
            self.requests_path.unlink(missing_ok=True)


def read_records(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Rows of a ``requests.jsonl``; a torn last line (a crash mid-write) is skipped."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.endswith("\n"):
                break
            yield json.loads(line)


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)
