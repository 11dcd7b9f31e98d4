"""The results folder: ``run.json`` at the start, ``requests.jsonl`` as requests finish,
``health.jsonl`` as the client's health intervals close, ``summary.json`` at the end.

Each record is appended and flushed the moment it arrives, so a crash loses at most the
requests still in flight. ``run.json`` is the run's context (when it started, its stages and
their level samples, the SLO, the ``config`` block), rewritten atomically as stages end. The
summary is computed at the end by reading ``requests.jsonl`` back in one streaming pass,
which keeps the process's memory flat however long the run, and makes the summary a pure
function of what is on disk: ``llm-locust summarize DIR`` rebuilds it from the same
files after a master was killed (:mod:`llm_locust.results.rebuild`). ``health.jsonl`` holds
one line per second per load process (:mod:`llm_locust.client.health`: CPU, event-loop lag, stalls;
``worker`` names the process on a master), the input of the client-saturation verdicts.

Without ``--results-dir`` the records go to a temporary spool file instead, so the
end-of-run table can still be computed exactly; the spool is deleted at exit.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llm_locust.record import json_line
from llm_locust.results.summary_model import RunSummary, jsonable

if TYPE_CHECKING:
    from llm_locust.results.search_model import SearchLog

__all__ = [
    "HEALTH_FILE",
    "MIN_FREE_BYTES",
    "REQUESTS_FILE",
    "RESULT_FILES",
    "ROW_BYTES",
    "RUN_FILE",
    "SEARCH_FILE",
    "SUMMARY_FILE",
    "ResultsDirError",
    "ResultsWriter",
    "check_results_dir",
    "space_problem",
    "write_json",
    "write_summary",
]

REQUESTS_FILE = "requests.jsonl"
SUMMARY_FILE = "summary.json"
RUN_FILE = "run.json"
SEARCH_FILE = "search.json"
HEALTH_FILE = "health.jsonl"
RESULT_FILES = (REQUESTS_FILE, SUMMARY_FILE, RUN_FILE, HEALTH_FILE)
log = logging.getLogger("llm_locust")
MIB = 2**20
#: About what one request's row takes in requests.jsonl: ~0.8 KiB plus ~8 bytes per output token
#: (2,445 MiB for 1,000,000 requests of 50-400 output tokens, benchmarks/README.md). Sizing only.
ROW_BYTES = 2_600
#: A results folder on a volume with less free space than this is refused at the start: the run
#: would lose its records when the volume fills (100 MiB: about 40,000 such requests).
MIN_FREE_BYTES = 100 * MIB


def space_problem(directory: str | os.PathLike[str], free_bytes: int) -> str | None:
    """Why a results folder whose volume has ``free_bytes`` left is refused, or ``None``."""
    if free_bytes >= MIN_FREE_BYTES:
        return None
    return (
        f"--results-dir {directory}: its volume is nearly full ({free_bytes / MIB:.0f} MiB free, room for "
        f"about {free_bytes // ROW_BYTES:,} requests at ~{ROW_BYTES / 1024:.1f} KiB each; "
        f"{MIN_FREE_BYTES // MIB} MiB needed to start): free space or use a larger volume"
    )


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
    problem = space_problem(directory, shutil.disk_usage(directory).free)
    if problem is not None:
        raise ResultsDirError(problem)
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
        # health.jsonl: opened (emptied) with the folder, so a rerun never reads an old one
        self._health = None if directory is None else open(directory / HEALTH_FILE, "w", encoding="utf-8")  # noqa: SIM115
        self.count = 0

    def write(self, row: dict[str, Any]) -> None:
        self._file.write(json_line(row))
        self._file.flush()
        self.count += 1

    def write_health(self, interval: Mapping[str, float | str]) -> None:
        """One health interval (``health.jsonl``; nothing without a results folder)."""
        if self._health is None or self._health.closed:
            return
        self._health.write(json.dumps(interval) + "\n")
        self._health.flush()

    @property
    def closed(self) -> bool:
        return self._file.closed

    def flush(self) -> None:
        self._file.flush()

    def write_summary(self, summary: Mapping[str, object]) -> RunSummary:
        """The summary's model, written to ``summary.json`` (with a results folder)."""
        if self.directory is None:
            model, _ = RunSummary.checked(summary)
            return model
        return write_summary(self.directory / SUMMARY_FILE, summary)

    def write_run(self, run: Mapping[str, object]) -> Path | None:
        """``run.json``: the run's context (see the module docstring)."""
        if self.directory is None:
            return None
        return write_json(self.directory / RUN_FILE, run)

    def write_search(self, log: SearchLog) -> Path | None:
        """``search.json``: a capacity search's steps so far (:mod:`llm_locust.results.search_log`)."""
        if self.directory is None:
            return None
        return write_json(self.directory / SEARCH_FILE, log.to_json())

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()
        if self._health is not None:
            self._health.close()
        if self.directory is None:
            self.requests_path.unlink(missing_ok=True)


def write_summary(path: Path, summary: Mapping[str, object] | RunSummary) -> RunSummary:
    """``summary.json`` through its model (:class:`RunSummary`: ``schema_version``, every typed
    key checked); returns the model. A summary its model refuses is still written as computed (a
    run never loses its summary), with a warning naming the key (the model returned leaves that
    key out): the schema tests exist to make that never happen."""
    if isinstance(summary, RunSummary):
        write_json(path, summary.to_json())
        return summary
    model, problem = RunSummary.checked(summary)
    if problem is not None:
        log.warning("llm-locust: %s does not match its schema (written as computed): %s", path.name, problem)
    write_json(path, model.to_json() if problem is None else summary)
    return model


def write_json(path: Path, data: Mapping[str, object]) -> Path:
    """Write ``data`` to ``path`` atomically (a reader never sees half a file)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=jsonable) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
