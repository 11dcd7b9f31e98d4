"""Did each closed-loop stage run at its user count, from when, and for how long?

A stage plan says "48 users for 15 s"; what ran is another matter: users spawn at a rate,
a step down waits for stopped users to finish their request, a worker can go missing. The
:class:`LevelTracker` is fed the runner's user count (the master's total over its workers)
a few times a second and keeps, per ``users`` stage:

- ``peak_users``: the highest count seen while the stage ran;
- ``target_reached_s``: seconds from the stage's start to the first sample at its target
  (``None``: never reached);
- ``time_at_target_s``: the time the count was at the target (each sampling interval counts
  for the stage and the count of the sample that opened it; error under one interval).

A request sent before its stage reached its target is *ramp-up*: kept in ``requests.jsonl``,
out of the stage's statistics (:meth:`LevelTracker.ramp_up`). Rate stages (open loop) have
no user target; their validity comes from their records (``results.validity``).

Pure module: no Locust, no network. Times are wall-clock seconds (``time.time()``).
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_locust.config.jsontypes import JsonObject
from llm_locust.config.stage_kind import StageKind
from llm_locust.load.stages import StagePlan

__all__ = ["LevelTracker", "StageLevel"]


@dataclass
class StageLevel:
    """What the samples showed for one ``users`` stage."""

    target: int
    peak_users: int = 0
    reached_at: float | None = None  # wall clock
    time_at_target_s: float = 0.0
    samples: int = 0

    def to_json(self, stage_start: float) -> JsonObject:
        reached = None if self.reached_at is None else round(self.reached_at - stage_start, 3)
        return {
            "peak_users": self.peak_users,
            "target_reached_s": reached,
            "time_at_target_s": round(self.time_at_target_s, 3),
        }


class LevelTracker:
    """Per-stage user levels of one plan run, started at wall time ``t0``."""

    def __init__(self, plan: StagePlan, t0: float) -> None:
        self.plan = plan
        self.t0 = t0
        self.levels = {s.index: StageLevel(int(s.target)) for s in plan if s.kind is StageKind.USERS}
        self._last: tuple[float, int, int] | None = None  # (time, stage index, users)

    def observe(self, when: float, users: int) -> None:
        """One sample of the running user count at wall time ``when``."""
        if self._last is not None:
            self._close_interval(when)
        elapsed = when - self.t0
        if elapsed < 0:
            return
        stage, _ = self.plan.stage_at(elapsed)
        if stage is not None and stage.index not in self.levels and stage.kind is StageKind.USERS:
            self.levels[stage.index] = StageLevel(int(stage.target))  # a plan that grew (a search)
        if stage is None or stage.index not in self.levels:
            self._last = None
            return
        level = self.levels[stage.index]
        level.samples += 1
        level.peak_users = max(level.peak_users, users)
        if users == level.target and level.reached_at is None:
            level.reached_at = when
        self._last = (when, stage.index, users)

    def _close_interval(self, now: float) -> None:
        """Credit the time since the last sample to its stage, if it was at its target."""
        assert self._last is not None
        then, index, users = self._last
        level = self.levels[index]
        if users == level.target:
            stage_end = self.t0 + self.plan[index].end_s
            level.time_at_target_s += max(0.0, min(now, stage_end) - then)

    def finish(self, when: float) -> None:
        """The load stopped at ``when``: close the last interval."""
        if self._last is not None:
            self._close_interval(when)
            self._last = None

    def level(self, index: int | None) -> StageLevel | None:
        return None if index is None else self.levels.get(index)

    def ramp_up(self, index: int | None, sent_at: float) -> bool:
        """Was a request of stage ``index`` sent before that stage reached its target?"""
        level = self.level(index)
        if level is None:
            return False
        return level.reached_at is None or sent_at < level.reached_at

    def facts(self, index: int) -> JsonObject:
        """``peak_users``, ``target_reached_s``, ``time_at_target_s`` of a ``users`` stage ({} else)."""
        level = self.levels.get(index)
        if level is None:
            return {}
        return level.to_json(self.t0 + self.plan[index].start_s)
