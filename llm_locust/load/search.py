"""SLO capacity search: from the steps judged so far, the next load level or why to stop.

``--search users`` (closed loop) or ``--search rate`` (open loop) runs one step at a time and
asks :func:`decide` at the end of each. The algorithm (read from vLLM's ``bench sweep
serve_sla``, AIPerf's max-concurrency-under-SLA recipe and GuideLLM's goodput profile, not
taken from them):

1. **Double** from ``--search-min`` while steps pass (capped at ``--search-max`` if given);
   if the very first step fails, **halve** instead until one passes (down to 1 user, or to
   1/16 of ``--search-min`` req/s).
2. Once there is a highest passing level ``lo`` and a lowest failing level ``hi``,
   **bisect**: probe the midpoint (users: ``(lo + hi) // 2``; rates: ``(lo + hi) / 2``).
3. **Stop** when the bracket is within the precision, ``hi - lo <= precision * lo`` (users
   also when ``hi - lo <= 1``: no whole number lies between), or after ``--search-max-steps``
   probes, or when the maximum passes, or the lowest level fails. With a demand and a
   ``settled_precision`` (``--search-settled-precision``), a plan already shown short of the
   demand (a level at or below it not shown to pass) is bracketed to that coarser precision
   instead: a finer capacity cannot change whether it meets the demand, and the stop reason
   (``settled``) says the capacity is the bracket's lower end at that precision.

A step's verdict (:class:`Verdict`) is ``pass``, ``fail``, ``inconclusive`` or ``invalid``.
A step where every request failed is a ``fail`` like any other (the level is beyond what the
server serves). An ``inconclusive`` step (too few requests for the SLO's percentile, or an
interval straddling a threshold) is **extended** (the same level runs on) up to
``max_extensions`` times; still inconclusive, it is never read as a pass: it bounds the
search from above as a failure does (``hi`` is the lowest level *not shown to pass*), and
is reported as inconclusive, not as a failure.

An ``invalid`` step (the run does not hold it as a measurement: the load generator saturated
or stalled, the level was not reached, too few requests) is **neither a pass nor a fail**: it
never enters the bracket. The search **re-runs** it once (``max_reruns``: a new step at the
same level); still invalid, the search **stops with its answer withheld** (stop reason
``invalid``): nothing it measured may be read as a capacity.

**The demand** (``SearchSpec.demand``, in the search's unit, when ``--demand`` is): as soon as
the bracket ``(lo, hi)`` contains it, the next probe is the demand itself (phase ``demand``,
before any midpoint), so whether the demand is met is measured, never inferred from a bracket.

The boundary lies in ``[lo, hi)``: ``lo`` is the highest level shown to pass, the answer;
``hi`` says how close the search got.

By construction every probe after the first lies strictly inside the bracket, so ``lo < hi``
holds throughout and the bracket shrinks at every bisection.

Pure module: no Locust, no network.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from llm_locust.config.stage_kind import StageKind
from llm_locust.load.stages import Stage, StagePlan

__all__ = [
    "SEARCH_KINDS",
    "STOP_REASONS",
    "VERDICTS",
    "Action",
    "Decision",
    "Phase",
    "Probe",
    "SearchSpec",
    "SearchStages",
    "StopReason",
    "Verdict",
    "bracket",
    "decide",
    "demand_level",
    "replay",
    "short_of_demand",
    "start_near",
]

SEARCH_KINDS = tuple(kind.value for kind in StageKind)  # ("users", "rate")


class Verdict(StrEnum):
    """A judged step: shown to pass, shown to fail, undecided, or no measurement at all."""

    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"
    INVALID = "invalid"


class Action(StrEnum):
    """What the search does at a step's end."""

    PROBE = "probe"  # a new level
    EXTEND = "extend"  # the same step runs on (its verdict is inconclusive)
    RERUN = "rerun"  # a new step at the same level (the last one was invalid)
    STOP = "stop"


class Phase(StrEnum):
    """Why a level was chosen."""

    START = "start"
    DOUBLE = "double"
    HALVE = "halve"
    BISECT = "bisect"
    DEMAND = "demand"  # the demand itself, inside the bracket
    RERUN = "rerun"  # the level of an invalid step, once more


class StopReason(StrEnum):
    PRECISION = "precision"
    STEP_LIMIT = "step_limit"
    MAXIMUM = "maximum"
    MINIMUM = "minimum"
    INVALID = "invalid"
    SETTLED = "settled"  # short of the demand, bracketed within the coarser settled precision


VERDICTS = tuple(Verdict)
#: Why a search ended, and how the summary says it.
STOP_REASONS = {
    StopReason.PRECISION: "the boundary is bracketed within the precision",
    StopReason.STEP_LIMIT: "the step limit was reached",
    StopReason.MAXIMUM: "the maximum level passed",
    StopReason.MINIMUM: "the lowest level was not shown to pass",
    StopReason.INVALID: "a step was invalid twice at its level: the answer is withheld",
    StopReason.SETTLED: "short of the demand: the boundary is bracketed within the coarser precision "
    "for such plans (a finer one would not change the answer)",
}
#: Verdicts that bound the search from above: not shown to pass.
NOT_PASSED = (Verdict.FAIL, Verdict.INCONCLUSIVE)
#: A rate search halves down to --search-min / RATE_FLOOR_DIVISOR at most.
RATE_FLOOR_DIVISOR = 16


@dataclass(frozen=True)
class SearchSpec:
    """The search's options: its kind, first level, bounds and budget."""

    kind: StageKind  # a user search steps users (closed loop), a rate search req/s (open loop)
    minimum: float
    maximum: float | None = None
    precision: float = 0.10
    max_steps: int = 12
    max_extensions: int = 2
    demand: float | None = None  # the demand in the search's unit (None: none, or another unit)
    max_reruns: int = 1  # new steps at the level of an invalid one before the answer is withheld
    settled_precision: float | None = None  # the precision once a level <= the demand did not pass

    def __post_init__(self) -> None:
        try:  # given as its text too ("users", "rate": a summary's search log)
            object.__setattr__(self, "kind", StageKind(self.kind))
        except ValueError:
            raise ValueError(f"search kind must be one of {SEARCH_KINDS}, got {self.kind!r}") from None
        if not (self.minimum > 0 and math.isfinite(self.minimum)):
            raise ValueError("the search's minimum must be a positive number")
        if self.kind is StageKind.USERS and self.minimum != int(self.minimum):
            raise ValueError("a user search starts at a whole number of users")
        if self.maximum is not None and self.maximum < self.minimum:
            raise ValueError("the search's maximum is below its minimum")
        if not 0 < self.precision < 1:
            raise ValueError("the precision is a fraction in (0, 1)")
        if self.settled_precision is not None and not 0 < self.settled_precision < 1:
            raise ValueError("the settled precision is a fraction in (0, 1)")
        if self.max_steps < 1 or self.max_extensions < 0 or self.max_reruns < 0:
            raise ValueError("the step limit is at least 1 and the extensions at least 0")
        if self.demand is not None and not (self.demand > 0 and math.isfinite(self.demand)):
            raise ValueError("a demand is a positive number")

    @property
    def floor(self) -> float:
        """The lowest level halving may reach."""
        return 1.0 if self.kind is StageKind.USERS else self.minimum / RATE_FLOOR_DIVISOR

    def level(self, value: float) -> float:
        """``value`` as a level of this kind: whole users, rates to 4 significant digits."""
        if self.kind is StageKind.USERS:
            return float(max(int(value), 1))
        return float(f"{value:.4g}")

    def level_of_demand(self) -> float | None:
        """The demand as a level of the search (whole users: the number it needs at least)."""
        if self.demand is None:
            return None
        level = self.level(self.demand)
        return level + 1 if self.kind is StageKind.USERS and level < self.demand else level


@dataclass(frozen=True)
class Probe:
    """One judged step: its level, verdict, how often it was extended, and why."""

    level: float
    verdict: Verdict
    extensions: int = 0
    reason: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {[str(v) for v in VERDICTS]}, got {self.verdict!r}")
        object.__setattr__(self, "verdict", Verdict(self.verdict))


@dataclass(frozen=True)
class Decision:
    """What to do at a step's end: ``probe`` a level, ``extend`` the step, ``rerun`` its level
    (it was invalid), or ``stop``.

    ``phase`` says why a level was chosen (:class:`Phase`); ``reason`` a stop's
    :class:`StopReason` (a key of :data:`STOP_REASONS`).
    """

    action: Action
    level: float | None = None
    phase: Phase | str = ""
    reason: StopReason | str = ""

    @property
    def text(self) -> str:
        if self.action == Action.STOP:
            return f"stop: {STOP_REASONS[StopReason(self.reason)]}"
        if self.action == Action.EXTEND:
            return "extend the step: its verdict is inconclusive"
        if self.action == Action.RERUN:
            return f"rerun {self.level:g}: the step was invalid (neither a pass nor a fail)"
        return f"{self.phase} -> {self.level:g}"


def bracket(probes: Sequence[Probe]) -> tuple[float | None, float | None]:
    """(highest passing level below the lowest one not shown to pass, that lowest level).

    ``fail`` and ``inconclusive`` steps bound from above; ``invalid`` ones count for nothing;
    ``None`` where there is none yet. A pass at or above that bound (which the search itself
    never probes) does not count.
    """
    fails = [p.level for p in probes if p.verdict in NOT_PASSED]
    hi = min(fails) if fails else None
    passes = [p.level for p in probes if p.verdict == Verdict.PASS and (hi is None or p.level < hi)]
    return (max(passes) if passes else None), hi


def invalid_run(probes: Sequence[Probe]) -> int:
    """How many steps at the end of ``probes`` were invalid, one after the other, at one level."""
    count = 0
    for probe in reversed(probes):
        if probe.verdict != Verdict.INVALID or probe.level != probes[-1].level:
            break
        count += 1
    return count


def decide(spec: SearchSpec, probes: Sequence[Probe]) -> Decision:
    """The next action given every judged step so far (in the order they ran)."""
    if not probes:
        return Decision(Action.PROBE, spec.level(spec.minimum), Phase.START)
    last = probes[-1]
    if last.verdict == Verdict.INCONCLUSIVE and last.extensions < spec.max_extensions:
        return Decision(Action.EXTEND, last.level)
    if last.verdict == Verdict.INVALID:
        if invalid_run(probes) > spec.max_reruns:
            return Decision(Action.STOP, reason=StopReason.INVALID)
        return Decision(Action.RERUN, last.level, Phase.RERUN)
    lo, hi = bracket(probes)
    if hi is None:
        assert lo is not None
        if spec.maximum is not None and lo >= spec.maximum:
            return Decision(Action.STOP, reason=StopReason.MAXIMUM)
        return _or_limit(spec, probes, Decision(Action.PROBE, _doubled(spec, lo), Phase.DOUBLE))
    if lo is None:
        if hi <= spec.floor:
            return Decision(Action.STOP, reason=StopReason.MINIMUM)
        return _or_limit(spec, probes, Decision(Action.PROBE, _halved(spec, hi), Phase.HALVE))
    at_demand = demand_level(spec, lo, hi)
    if at_demand is not None:
        return _or_limit(spec, probes, Decision(Action.PROBE, at_demand, Phase.DEMAND))
    if _converged(spec, lo, hi, spec.precision):
        return Decision(Action.STOP, reason=StopReason.PRECISION)
    if short_of_demand(spec, hi) and _converged(spec, lo, hi, spec.settled_precision):
        return Decision(Action.STOP, reason=StopReason.SETTLED)
    return _or_limit(spec, probes, Decision(Action.PROBE, _midpoint(spec, lo, hi), Phase.BISECT))


def demand_level(spec: SearchSpec, lo: float, hi: float) -> float | None:
    """The demand as a level of the search when it lies strictly inside the bracket ``(lo, hi)``
    (so it has not been judged yet), else ``None``."""
    level = spec.level_of_demand()
    return level if level is not None and lo < level < hi else None


def short_of_demand(spec: SearchSpec, hi: float | None) -> bool:
    """Is the search shown short of its demand (a level at or below it not shown to pass)?"""
    level = spec.level_of_demand()
    return level is not None and hi is not None and hi <= level


def _or_limit(spec: SearchSpec, probes: Sequence[Probe], decision: Decision) -> Decision:
    """``decision``, unless ``max_steps`` judged steps were spent (reruns of invalid steps count
    for nothing: they measured nothing)."""
    spent = sum(1 for p in probes if p.verdict != Verdict.INVALID)
    return Decision(Action.STOP, reason=StopReason.STEP_LIMIT) if spent >= spec.max_steps else decision


def _doubled(spec: SearchSpec, lo: float) -> float:
    level = spec.level(2 * lo)
    return level if spec.maximum is None else min(level, spec.level(spec.maximum))


def _halved(spec: SearchSpec, hi: float) -> float:
    return max(spec.level(hi / 2), spec.level(spec.floor))


def _converged(spec: SearchSpec, lo: float, hi: float, precision: float | None) -> bool:
    if precision is None:
        return False
    if spec.kind is StageKind.USERS and hi - lo <= 1:
        return True
    return hi - lo <= precision * lo * (1 + 1e-9)


def _midpoint(spec: SearchSpec, lo: float, hi: float) -> float:
    if spec.kind is StageKind.USERS:
        return float((int(lo) + int(hi)) // 2)
    return spec.level((lo + hi) / 2)


def start_near(demand: float) -> float:
    """A first level near a stated demand: the largest power of two not above it (50 -> 32, at
    least 1). Doubling from there passes the demand at the second probe, so a plan's first two
    steps say on which side of the demand it lies, and bisection then halves a power-of-two
    bracket as it does from any ``--search-min``."""
    if not (demand > 0 and math.isfinite(demand)):
        raise ValueError("a demand is a positive number")
    return float(2 ** math.floor(math.log2(demand))) if demand >= 1 else float(demand)


def replay(spec: SearchSpec, verdicts: Sequence[tuple[float, str, int]]) -> list[Decision]:
    """The decisions the algorithm takes over ``(level, verdict, extensions)`` steps, in order:
    one per step plus the first (a check that a run followed the documented algorithm)."""
    decisions = [decide(spec, [])]
    probes: list[Probe] = []
    for level, verdict, extensions in verdicts:
        probes.append(Probe(level, Verdict(verdict), extensions))
        decisions.append(decide(spec, probes))
    return decisions


class SearchStages(StagePlan):
    """The stage plan of a search: its first step alone at first, then the steps as they are
    decided. One object for the whole run (the plan, the run context, the level samples and the
    shape all read it), so it changes in place: :meth:`set` replaces its stages, :meth:`reset`
    goes back to the first step for a new test."""

    # set once by __init__ (the frozen dataclass underneath has only ``stages``)
    spec: SearchSpec
    warmup_s: float
    forever_s: float

    def __init__(self, spec: SearchSpec, warmup_s: float, forever_s: float) -> None:
        for name, value in (("spec", spec), ("warmup_s", warmup_s), ("forever_s", forever_s)):
            object.__setattr__(self, name, value)  # a frozen dataclass underneath
        super().__init__((self.stage(spec.level(spec.minimum), forever_s, warmup_s),))

    def stage(
        self, level: float, duration_s: float, warmup_s: float, start_s: float = 0.0, index: int = 0
    ) -> Stage:
        """Search step ``index`` as a stage: ``level`` for ``duration_s``, the first ``warmup_s`` excluded."""
        kind = self.spec.kind
        label = f"users={int(level)}" if kind is StageKind.USERS else f"rate={level:g}"
        return Stage(index, kind, level, duration_s, start_s, warmup_s=warmup_s, label=label)

    def set(self, stages: Sequence[Stage]) -> None:
        object.__setattr__(self, "stages", tuple(stages))
        object.__setattr__(self, "_starts", tuple(st.start_s for st in self.stages))

    def reset(self) -> None:
        self.set([replace(self.stages[0], duration_s=self.forever_s, start_s=0.0, warmup_s=self.warmup_s)])
