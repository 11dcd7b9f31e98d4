"""A master's workers that quit while a test runs, and a test whose load ended before its plan did.

Locust's master drops a worker that quits (its process stopped, or was stopped: Ctrl-C, a pod
deleted) and moves its users to the workers left; when the last one quits it stops the test
("The last worker quit, stopping test."), and the run ended there with exit code 0 and nothing
said: a 2.4-s run read as the 18 s asked for. On a master now (the wiring:
:func:`llm_locust.runtime.stopping.mark_early_end`, the fleet's
:meth:`~llm_locust.runtime.fleet.MasterFleet.watch_departures`):

- each worker that quits during a test is a line in the log, an entry of the summary's
  ``workers_quit`` (with how many workers carried the load from then on) and a ``master:`` line of
  the end-of-run text;
- a test whose load ends before its plan's end for a reason other than the user's own stop
  (a signal, the web UI's stop button) is *interrupted* (:class:`~llm_locust.results.ending.EndCause`):
  the last worker quit, or the master's test stopped for none of llm-locust's reasons (headless, the
  shape still running); one line says what and how much of the run had load, and the exit code is
  :data:`LOAD_ENDED_EARLY_EXIT`, as when every worker stops answering (:mod:`llm_locust.runtime.silences`);
- in an open-loop run the workers left keep their own shares of the arrival schedule (none
  replays a past arrival, :mod:`llm_locust.runtime.openloop`): the departed worker's arrivals from
  its quit on are not sent, and the summary's ``arrivals_not_sent`` counts them
  (:func:`arrivals_not_sent`).

Pure module: no Locust, no network.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from llm_locust.config.jsontypes import JsonObject
from llm_locust.load.sources import ArrivalSource
from llm_locust.results.ending import EndCause, WorkerQuit

__all__ = ["LOAD_ENDED_EARLY_EXIT", "Departures", "arrivals_not_sent", "early_cause", "ended_line"]

#: The exit code of a master's test whose load ended early: every worker stopped answering or
#: quit, or the test stopped before its plan's end for another reason (and requests were recorded).
LOAD_ENDED_EARLY_EXIT = 8


class Departures:
    """The workers that quit during one test, from what the master sees (pure: states and times in)."""

    def __init__(self) -> None:
        self.quits: list[WorkerQuit] = []
        self._known: dict[str, tuple[int, bool]] = {}

    def observe(self, now: float, workers: Mapping[str, tuple[int, bool]]) -> list[WorkerQuit]:
        """``workers``: each worker the master knows now, ``(index, missing)``. A worker that
        answered when last seen and is no longer known quit (one the master forgets after a
        silence is a silence's, :mod:`llm_locust.runtime.silences`). The quits since the last call."""
        answering = sum(1 for _, missing in workers.values() if not missing)
        quits = [
            WorkerQuit(index=index, worker=worker, at=round(now, 3), workers_left=answering)
            for worker, (index, missing) in self._known.items()
            if worker not in workers and not missing
        ]
        self._known = dict(workers)
        self.quits += quits
        return quits

    @property
    def last_quit(self) -> bool:
        """Did the latest quit leave no worker answering?"""
        return bool(self.quits) and self.quits[-1].workers_left == 0

    def to_json(self) -> list[JsonObject]:
        return [q.to_json() for q in self.quits]


def early_cause(
    *, interrupted: bool, by_plan: bool, shape_running: bool, headless: bool, answering: int, last_quit: bool
) -> EndCause | None:
    """Why a master's test is stopping before its plan's end, or ``None``: it is not (its shape
    ended it: ``by_plan``), it is already ``interrupted`` (a signal, every request failed, a
    refusal), it is the user's (the web UI's stop button, not ``headless``), or no worker answers
    and none quit last (the silence's, said at the stop by :mod:`llm_locust.runtime.silences`)."""
    if interrupted or by_plan:
        return None
    if answering == 0:
        return EndCause.WORKERS_QUIT if last_quit else None
    if headless and shape_running:
        return EndCause.MASTER_STOPPED
    return None


def ended_line(
    cause: EndCause, last: WorkerQuit | None, start: float, at: float, planned_s: float | None, answering: int
) -> str:
    """What ended the load early, in one line (the summary's ``interrupted_by``)."""
    into = at - start
    ran = f"the load ran {into:.1f} s of {planned_s:.1f} s" if planned_s else f"the load ran {into:.1f} s"
    if cause is EndCause.WORKERS_QUIT:
        who = f"worker {last.index} ({last.worker})" if last is not None else "the last worker"
        return f"the last worker quit ({who}, {into:.1f} s into the test): {ran}"
    return (
        f"the master stopped the test before its planned end ({into:.1f} s into the test, "
        f"{answering} worker(s) answering): {ran}"
    )


def arrivals_not_sent(
    arrivals: ArrivalSource, quits: Sequence[WorkerQuit], workers: int, t0: float, span_s: float
) -> int:
    """The planned arrivals of the workers that quit, from when the master saw each quit to the end
    of a test that ran ``span_s`` from its ``t0``: worker ``index`` of ``workers`` had share
    ``index % workers`` of the schedule (:mod:`llm_locust.runtime.openloop`), which no worker left
    takes over. (Its last ones before that moment, after Ctrl-C and before the master saw the quit,
    up to ~0.1 s, are not counted.)"""
    workers = max(workers, 1)
    return sum(
        1
        for q in quits
        for offset, _ in arrivals.for_worker(q.index % workers, workers)
        if q.at - t0 <= offset < span_s
    )
