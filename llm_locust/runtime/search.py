"""The capacity search in a run: steps that wait for their level, hold it, settle, and are judged.

Runs where the load shape runs (the local runner, or the master; workers follow the user
counts Locust dispatches, and for ``--search rate`` the steps the master announces). Each step:

1. **reach**: the level is applied (users spawn; a rate takes effect ``RATE_LEAD`` s after it is
   announced, so every worker has it); a user step has reached its level when the runner's
   count first equals it (``load/levels.py``);
2. **hold**: ``--step-time`` from the later of reaching the level and the end of ``--warmup``:
   the step's measured window, as for a ramp's stages;
3. **settle**: the level is held on while the requests sent in the window finish (they are
   the slowest: judging without them would flatter the step), up to ``settle_limit`` (the
   larger of the step time and 30 s); a step judged with some still in flight cannot pass;
4. **judge**: the stage entry of ``results/stages.py`` over the window (the same evaluation as
   the end-of-run stage table) with a 95 % interval per SLO line (``results/probe.py``); then
   :func:`llm_locust.load.search.decide`: extend the step (by the time it needs to have the
   requests its undecided SLO lines need, or one step time: ``results.probe.extension_s``),
   probe the next level, or stop. A step that has fewer requests than an SLO line needs to
   pass at all (a 99 % success ratio needs 381) first runs on until it has them, up to
   ``MAX_WINDOW_STEPS`` step times (``results.probe.sample_extension_s``), without spending
   one of ``--search-extensions``: those are for intervals that straddle a threshold.

The plan's stages grow as the search decides: step ``i``'s stage runs at its level through its
settle, and step ``i+1``'s begins when its level is applied. Requests sent after step ``i``'s
window (while it settled) belong to no stage: they count for the whole run only, as do those
sent after a stopped search's last window (records completing during a settle are held until
the decision says where they belong, then written). The end-of-run stage table is the steps'
windows (:meth:`SearchDriver.stage_entries`), so it shows what each probe was judged on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from llm_locust.config.model import RunConfig
from llm_locust.config.slo import SloSpec
from llm_locust.config.stage_kind import StageKind
from llm_locust.load.levels import LevelTracker
from llm_locust.load.plan import FOREVER, LoadPlan
from llm_locust.load.search import Action, Decision, Phase, Probe, SearchSpec, SearchStages, Verdict, decide
from llm_locust.load.stages import Stage
from llm_locust.results.columns import Columns
from llm_locust.results.probe import extension_s, gate, sample_extension_s
from llm_locust.results.saturation import ClientFigures, client_block
from llm_locust.results.search_log import (
    KEPT_STAGES,
    judge_rows,
    judged_row,
    search_log,
    search_stage_entries,
    step_record,
)
from llm_locust.results.search_model import JudgedStep, SearchLog, SearchResult
from llm_locust.results.search_progress import SearchProgress
from llm_locust.results.search_result import search_result

__all__ = ["RATE_LEAD", "SearchDriver", "SearchFleet", "SearchRun"]

log = logging.getLogger("llm_locust")
#: A new rate takes effect this long after the master announces it.
RATE_LEAD = 0.5


class SearchFleet(Protocol):
    """What the driver asks of every process (the node's fleet)."""

    def worker_count(self) -> int: ...

    def in_flight_before(self, when: float) -> int | None: ...

    def health_intervals(self, start: float | None = None) -> Sequence[Mapping[str, float | str]]: ...

    def announce_rate_steps(self, steps: Sequence[Sequence[float]], stopped_at: float | None) -> None: ...


class SearchRun(Protocol):
    """What the driver needs of the node where the shape runs (the master, the local runner)."""

    @property
    def plan(self) -> LoadPlan: ...
    @property
    def run_config(self) -> RunConfig: ...
    @property
    def cli_spawn_rate(self) -> float | None: ...
    @property
    def levels(self) -> LevelTracker | None: ...
    @property
    def fleet(self) -> SearchFleet: ...

    def write_search(self, log: SearchLog) -> None: ...

    def deliver(self, row: dict[str, Any]) -> None: ...


@dataclass
class Step:
    """One search step as it runs (wall-clock times)."""

    index: int
    level: float
    phase: str
    begin: float  # where its stage starts in the plan
    applied: float  # when its level took effect
    window_end: float | None = None
    extensions: int = 0  # --search-extensions spent (its intervals straddled a threshold)
    sample_extensions: int = 0  # times it ran on because it had too few requests to judge
    settle_deadline: float | None = None
    record: dict[str, Any] | None = None  # what search.json holds of it


class SearchDriver:
    """Drives one search over one test; the run hands it every record and every shape tick."""

    def __init__(self, run: SearchRun, spec: SearchSpec, t0: float) -> None:
        load = run.run_config.load
        self.run, self.spec, self.t0 = run, spec, t0
        self.step_time, self.warmup = load.step_time, load.warmup
        self.spawn_rate = run.cli_spawn_rate
        # progress lines in deployment time against a sped-up target (its files: the wall clock)
        self.progress = SearchProgress(run.run_config.results.target_speedup, spec.kind is StageKind.RATE)
        self.settle_limit = max(self.step_time, 30.0)
        self.reach_limit = max(self.step_time, 30.0)
        self.stages: list[Stage] = []
        self.steps: list[Step] = []
        self.probes: list[JudgedStep] = []
        self.stop_reason: str | None = None
        self.done = False
        self._rows: dict[int, list[dict[str, Any]]] = {}
        self._held: list[dict[str, Any]] = []
        applied = t0 + (RATE_LEAD if spec.kind is StageKind.RATE else 0.0)
        self._begin(Decision(Action.PROBE, spec.level(spec.minimum), Phase.START), t0, applied)

    # -- the plan ----------------------------------------------------------------------
    def _plan(self) -> SearchStages:
        """The run's stage plan: a search's, which grows as the search decides."""
        stages = self.run.plan.stages
        assert isinstance(stages, SearchStages)
        return stages

    def _begin(self, decision: Decision, begin: float, applied: float) -> None:
        assert decision.level is not None
        index = len(self.steps)
        self.steps.append(Step(index, decision.level, decision.phase, begin, applied))
        warmup = self.warmup + (applied - begin)
        plan = self._plan()
        self.stages.append(plan.stage(decision.level, FOREVER, warmup, begin - self.t0, index))
        self._publish()
        self._record(self.steps[-1])
        label = self.stages[-1].label
        log.info("llm-locust: %s", self.progress.begun(index + 1, label, decision.level, str(decision.phase)))

    def _set_end(self, step: Step, end: float) -> None:
        """Close (or move) the step's window end; its stage ends there in the plan."""
        step.window_end = end
        self._stage_until(step, end)

    def _stage_until(self, step: Step, end: float) -> None:
        """The step's stage ends at ``end`` in the plan: its window's end, or, once the next step
        is decided, when the next level is applied (the settle ran at this step's level)."""
        self.stages[step.index] = replace(self.stages[step.index], duration_s=end - step.begin)
        self._publish()

    def _publish(self) -> None:
        """The run's plan (and its level tracker) follow the stages; workers the rate steps."""
        self._plan().set(self.stages)  # SearchStages: the one plan every reader shares
        if self.spec.kind is StageKind.RATE:
            self.run.fleet.announce_rate_steps(self.rate_steps(), self.stopped_at())

    def rate_steps(self) -> list[tuple[float, float]]:
        """``(applies at, rate)`` of every step, as offsets from ``t0`` (the workers' clock too)."""
        return [(s.applied - self.t0, s.level) for s in self.steps]

    def stopped_at(self) -> float | None:
        end = self.steps[-1].window_end
        return None if not self.done or end is None else end - self.t0

    # -- the shape's tick --------------------------------------------------------------
    def tick(self, now: float | None = None) -> tuple[int, float] | None:
        """The load for now: ``(users, spawn rate)``, or ``None`` once the search has stopped."""
        now = time.time() if now is None else now
        if self.done:
            return None
        step = self.steps[-1]
        if step.window_end is None:
            reached = self._reached(step)
            if reached is not None:
                start = max(step.begin + self.stages[step.index].warmup_s, reached)
                self._set_end(step, start + self.step_time)
            elif now - step.applied > self.reach_limit:
                self._set_end(step, now)  # it will be judged invalid: it never reached its level
        if step.window_end is not None and now >= step.window_end and step.settle_deadline is None:
            step.settle_deadline = now + self.settle_limit
        if step.settle_deadline is not None:
            assert step.window_end is not None  # a settle begins once the window has closed
            unsettled = self.run.fleet.in_flight_before(step.window_end)
            if unsettled == 0 or now >= step.settle_deadline:
                self._judge(step, now, unsettled or 0)
                if self.done:
                    return None
        return self._load(self.steps[-1])

    def _reached(self, step: Step) -> float | None:
        if self.spec.kind is StageKind.RATE:
            return step.applied if time.time() >= step.applied else None
        level = self.run.levels.level(step.index) if self.run.levels is not None else None
        return None if level is None else level.reached_at

    def _load(self, step: Step) -> tuple[int, float]:
        if self.spec.kind is StageKind.RATE:
            dispatchers = max(self.run.fleet.worker_count(), 1)
            return dispatchers, float(dispatchers)
        users = int(step.level)
        if self.spawn_rate is not None:
            return users, float(self.spawn_rate)
        previous = self.steps[-2].level if len(self.steps) > 1 else 0
        return users, float(max(1.0, abs(users - previous)))

    # -- judging -----------------------------------------------------------------------
    def _judge(self, step: Step, now: float, unsettled: int) -> None:
        assert step.window_end is not None
        probe = self.judge(step, unsettled)
        if self.probes and self.probes[-1].index == step.index:
            self.probes[-1] = probe
        else:
            self.probes.append(probe)
        more = sample_extension_s(probe, self.step_time)
        if more is not None:  # too few requests to judge yet: run on, no extension spent
            step.sample_extensions += 1
            step.settle_deadline = None
            self._set_end(step, step.window_end + more)
            log.info("llm-locust: %s", self.progress.short(probe, more))
            self._release()
            return
        decision = decide(self.spec, [Probe(p.level, p.verdict, p.extensions) for p in self.probes])
        log.info("llm-locust: %s", self.progress.judged(probe, decision))
        if decision.action == Action.EXTEND:
            step.extensions += 1
            step.settle_deadline = None
            self._set_end(step, step.window_end + extension_s(probe, self.step_time))
        elif decision.action in (Action.PROBE, Action.RERUN):
            applied = now + (RATE_LEAD if self.spec.kind is StageKind.RATE else 0.0)
            self._stage_until(step, applied)
            self._begin(decision, applied, applied)
        else:
            self.stop_reason, self.done = decision.reason, True
            self._publish()
            self._record(step)
        self._release()

    def judge(self, step: Step, unsettled: int = 0) -> JudgedStep:
        """The probe of ``step`` from the records of its stage and the two before it (its window
        is closed); written to ``search.json`` with what it was judged on."""
        assert step.window_end is not None
        stage = self.stages[step.index]
        rows = (r for rows in self._rows.values() for r in rows)
        how = {
            "extensions": step.extensions,
            "unsettled": unsettled,
            "phase": step.phase,
            "sample_extensions": step.sample_extensions,
        }
        slo = self.run.run_config.slo
        assert slo is not None  # the configuration refuses a search without an SLO
        probe = judge_rows(rows, stage, step.begin, step.window_end, slo, self.run.levels, how)
        probe = gate(probe, self.client(probe), self.step_time)
        self._record(step, probe)
        return probe

    def client(self, probe: JudgedStep) -> ClientFigures | None:
        """The load processes' health over the step's measured window (``None``: none measured)."""
        window = probe.window
        if window is None:
            return None
        intervals = self.run.fleet.health_intervals(window.start)
        return client_block(intervals, window.start, window.end) if intervals else None

    def failstop_applies(self) -> bool:
        """Does "every request has failed" stop the run now? Not while a step above every level
        that passed runs (such a step is a failing step, judged as one); yes at a level that
        passed before (the server broke), or at the lowest level the search may try."""
        if self.done:
            return True
        level = self.steps[-1].level
        passed = [p.level for p in self.probes if p.verdict == Verdict.PASS]
        return level <= self.spec.floor or any(level <= p for p in passed)

    def _record(self, step: Step, probe: JudgedStep | None = None) -> None:
        """``search.json`` brought up to date: ``step`` as it stands (judged by ``probe``)."""
        if probe is not None or step.record is None:
            judged_at = None if probe is None else time.time()
            stage = self.stages[step.index]
            step.record = step_record(stage, step.begin, step.applied, step.window_end, probe, judged_at)
        records = [s.record for s in self.steps if s.record is not None]
        self.run.write_search(search_log(self.spec, self.step_time, self.t0, records, self.stop_reason))

    # -- records -----------------------------------------------------------------------
    def place(self, row: dict[str, Any]) -> bool:
        """Give ``row`` its stage and warm-up flag from the search's plan; ``False``: hold it (it
        was sent after the running step's window closed, and the step is not judged yet)."""
        step = self.steps[-1]
        sent = row["start_time"]
        if not self.done and step.window_end is not None and sent >= step.window_end:
            return False
        stage, in_stage = self._plan().stage_at(max(sent - self.t0, 0.0))
        warmup = stage is not None and stage.in_warmup(in_stage)
        if stage is not None:
            end = self.steps[stage.index].window_end
            if end is not None and sent >= end:  # sent while its step settled: no step's window
                stage, warmup = None, False
        row["stage"] = None if stage is None else stage.index
        row["warmup"] = warmup
        return True

    def hold(self, row: dict[str, Any]) -> None:
        self._held.append(row)

    def observe(self, row: dict[str, Any]) -> None:
        """A written record: kept (its judged fields) while its step or the next can still use it."""
        index = row.get("stage")
        if index is None:
            return
        self._rows.setdefault(index, []).append(judged_row(row))
        for old in [i for i in self._rows if i < len(self.steps) - 1 - KEPT_STAGES]:
            del self._rows[old]

    def _release(self) -> None:
        held, self._held = self._held, []
        for row in held:
            self.run.deliver(row)

    def finish(self) -> None:
        """The run is ending: nothing is held any longer (records go to disk as placed now)."""
        self.done = True
        self._release()

    def stage_entries(
        self, cols: Columns, stop: float, slo: SloSpec, levels: LevelTracker | None
    ) -> list[dict[str, Any]]:
        """The end-of-run stage table of a search (:func:`search_stage_entries`)."""
        steps = [(self.stages[s.index], s.begin, s.window_end) for s in self.steps]
        return search_stage_entries(steps, cols, stop, slo, levels)

    def result(self) -> SearchResult:
        """The ``search`` block of ``summary.json``."""
        out = search_result(self.spec, self.probes, self.stop_reason, self.step_time)
        out.passed = out.capacity is not None and self.stop_reason is not None
        return out

    def live(self) -> dict[str, Any]:
        """For the web UI, in deployment time against a sped-up target (as the progress lines):
        a row per judged step, the step running now, and the answer as it forms
        (:meth:`~llm_locust.results.search_progress.SearchProgress.live`)."""
        step = self.steps[-1]
        running = None if self.done else (self.stages[step.index].label, step.level)
        return self.progress.live(self.result(), running, self.done)
