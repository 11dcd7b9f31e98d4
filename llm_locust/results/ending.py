"""How a test ended before its plan did: the summary's ``interruption`` and ``workers_quit``.

A run is *interrupted* (``interrupted: true``, ``interrupted_by``: one line saying what and from
when) when something other than its plan ended the load: the user's own signal (SIGINT, SIGTERM),
every request failing, every worker of a master silent, the last worker of a master quitting, or a
master whose test stopped before its plan's end for none of these. ``interruption`` is the same
fact typed: its :class:`EndCause`, when (``at``, Unix time; ``after_s`` after ``config.start_time``), the span
the test was planned for (``planned_s``: ``-t`` or the stages' end; ``None``: open-ended) and the
span its rates are over (``measured_s``, the summary's ``measured_span.seconds``); ``early`` says
the load ended before it was asked to for a reason other than the user's own stop.

``workers_quit``: a master's workers that left during the test (Locust's ``quit``: the process
stopped or was stopped) while it ran, each with how many workers carried the load from then on.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from enum import StrEnum

from llm_locust.results.summary_blocks import Block

__all__ = ["EndCause", "Interruption", "WorkerQuit", "interruption_block", "quit_line"]


class EndCause(StrEnum):
    """What ended a test's load before its plan's end."""

    SIGNAL = "signal"  # SIGINT or SIGTERM: the user's own stop
    EVERY_REQUEST_FAILED = "every_request_failed"  # none succeeded for 10 s (runtime/failstop.py)
    WORKERS_SILENT = "workers_silent"  # no worker of the master answered (runtime/silences.py)
    WORKERS_QUIT = "workers_quit"  # the master's last worker quit
    MASTER_STOPPED = "master_stopped"  # the master's test stopped before its plan's end, none of these

    @property
    def early(self) -> bool:
        """Did the load end before it was asked to, for a reason other than the user's own stop?"""
        return self is not EndCause.SIGNAL


class Interruption(Block):
    """What interrupted the test (``interrupted_by`` says it in words)."""

    cause: EndCause
    early: bool
    at: float
    after_s: float
    planned_s: float | None = None
    measured_s: float | None = None


class WorkerQuit(Block):
    """A worker of the master that quit while the test ran (``at``: Unix time), and how many
    workers carried the load from then on (``workers_left``)."""

    index: int
    worker: str
    at: float
    workers_left: int


def interruption_block(
    cause: EndCause, at: float, start: float, planned_s: float | None, measured_s: float | None
) -> Interruption:
    """The summary's ``interruption`` of a test that began at ``start``."""
    return Interruption(
        cause=cause,
        early=cause.early,
        at=round(at, 3),
        after_s=round(max(at - start, 0.0), 3),
        planned_s=None if planned_s is None else round(planned_s, 3),
        measured_s=None if measured_s is None else round(measured_s, 3),
    )


def quit_line(q: WorkerQuit, start: float | None) -> str:
    """A worker that quit during the test, in one line (the end-of-run text's)."""
    when = f" {q.at - start:.1f} s into the run" if start is not None else ""
    if q.workers_left == 0:
        return f"worker {q.index} ({q.worker}) quit{when}, the last one: no load from then on"
    carried = f"{q.workers_left} worker{'s' if q.workers_left != 1 else ''}"
    return f"worker {q.index} ({q.worker}) quit{when}: {carried} carried the load from then on"
