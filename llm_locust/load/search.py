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
   probes, or when the maximum passes, or the lowest level fails.

A step's verdict is ``pass``, ``fail``, ``inconclusive`` or ``invalid`` (it did not run at
its level). An ``inconclusive`` step (too few requests for the SLO's percentile, or an
interval straddling a threshold) is **extended** (the same level runs on) up to
``max_extensions`` times; still inconclusive, it is never read as a pass: it bounds the
search from above as a failure does (``hi`` is the lowest level *not shown to pass*), and
is reported as inconclusive, not as a failure. An ``invalid`` step stops the search (the
level could not be applied, so nothing above it can be measured either). The boundary
lies in ``[lo, hi)``: ``lo`` is the highest level shown to pass, the answer; ``hi`` says
how close the search got.

By construction every probe after the first lies strictly inside the bracket, so ``lo < hi``
holds throughout and the bracket shrinks at every bisection.

Pure module: no Locust, no network.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from llm_locust.load.stages import Stage, StageKind, StagePlan

__all__ = [
    "SEARCH_KINDS",
    "STOP_REASONS",
    "VERDICTS",
    "Decision",
    "Probe",
    "SearchSpec",
    "SearchStages",
    "bracket",
    "decide",
    "replay",
    "start_near",
]

SEARCH_KINDS = ("users", "rate")
VERDICTS = ("pass", "fail", "inconclusive", "invalid")
#: Why a search ended, and how the summary says it.
STOP_REASONS = {
    "precision": "the boundary is bracketed within the precision",
    "step_limit": "the step limit was reached",
    "maximum": "the maximum level passed",
    "minimum": "the lowest level was not shown to pass",
    "invalid": "a step did not run at its level",
}
#: Verdicts that bound the search from above: not shown to pass.
NOT_PASSED = ("fail", "inconclusive")
#: A rate search halves down to --search-min / RATE_FLOOR_DIVISOR at most.
RATE_FLOOR_DIVISOR = 16


@dataclass(frozen=True)
class SearchSpec:
    """The search's options: its kind, first level, bounds and budget."""

    kind: str
    minimum: float
    maximum: float | None = None
    precision: float = 0.10
    max_steps: int = 12
    max_extensions: int = 2

    def __post_init__(self) -> None:
        if self.kind not in SEARCH_KINDS:
            raise ValueError(f"search kind must be one of {SEARCH_KINDS}, got {self.kind!r}")
        if not (self.minimum > 0 and math.isfinite(self.minimum)):
            raise ValueError("the search's minimum must be a positive number")
        if self.kind == "users" and self.minimum != int(self.minimum):
            raise ValueError("a user search starts at a whole number of users")
        if self.maximum is not None and self.maximum < self.minimum:
            raise ValueError("the search's maximum is below its minimum")
        if not 0 < self.precision < 1:
            raise ValueError("the precision is a fraction in (0, 1)")
        if self.max_steps < 1 or self.max_extensions < 0:
            raise ValueError("the step limit is at least 1 and the extensions at least 0")

    @property
    def floor(self) -> float:
        """The lowest level halving may reach."""
        return 1.0 if self.kind == "users" else self.minimum / RATE_FLOOR_DIVISOR

    def level(self, value: float) -> float:
        """``value`` as a level of this kind: whole users, rates to 4 significant digits."""
        if self.kind == "users":
            return float(max(int(value), 1))
        return float(f"{value:.4g}")


@dataclass(frozen=True)
class Probe:
    """One judged step: its level, verdict, how often it was extended, and why."""

    level: float
    verdict: str
    extensions: int = 0
    reason: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")


@dataclass(frozen=True)
class Decision:
    """What to do at a step's end: ``probe`` a level, ``extend`` the step, or ``stop``.

    ``phase`` says why a level was chosen (``start``, ``double``, ``halve``, ``bisect``);
    ``reason`` is a key of :data:`STOP_REASONS` for a stop.
    """

    action: str
    level: float | None = None
    phase: str = ""
    reason: str = ""

    @property
    def text(self) -> str:
        if self.action == "stop":
            return f"stop: {STOP_REASONS[self.reason]}"
        if self.action == "extend":
            return "extend the step: its verdict is inconclusive"
        return f"{self.phase} -> {self.level:g}"


def bracket(probes: Sequence[Probe]) -> tuple[float | None, float | None]:
    """(highest passing level below the lowest one not shown to pass, that lowest level).

    ``fail`` and ``inconclusive`` steps bound from above; ``None`` where there is none yet. A
    pass at or above that bound (which the search itself never probes) does not count.
    """
    fails = [p.level for p in probes if p.verdict in NOT_PASSED]
    hi = min(fails) if fails else None
    passes = [p.level for p in probes if p.verdict == "pass" and (hi is None or p.level < hi)]
    return (max(passes) if passes else None), hi


def decide(spec: SearchSpec, probes: Sequence[Probe]) -> Decision:
    """The next action given every judged step so far (in the order they ran)."""
    if not probes:
        return Decision("probe", spec.level(spec.minimum), "start")
    last = probes[-1]
    if last.verdict == "inconclusive" and last.extensions < spec.max_extensions:
        return Decision("extend", last.level)
    if last.verdict == "invalid":
        return Decision("stop", reason="invalid")
    lo, hi = bracket(probes)
    if hi is None:
        assert lo is not None
        if spec.maximum is not None and lo >= spec.maximum:
            return Decision("stop", reason="maximum")
        return _or_limit(spec, probes, Decision("probe", _doubled(spec, lo), "double"))
    if lo is None:
        if hi <= spec.floor:
            return Decision("stop", reason="minimum")
        return _or_limit(spec, probes, Decision("probe", _halved(spec, hi), "halve"))
    if _converged(spec, lo, hi):
        return Decision("stop", reason="precision")
    return _or_limit(spec, probes, Decision("probe", _midpoint(spec, lo, hi), "bisect"))


def _or_limit(spec: SearchSpec, probes: Sequence[Probe], decision: Decision) -> Decision:
    return Decision("stop", reason="step_limit") if len(probes) >= spec.max_steps else decision


def _doubled(spec: SearchSpec, lo: float) -> float:
    level = spec.level(2 * lo)
    return level if spec.maximum is None else min(level, spec.level(spec.maximum))


def _halved(spec: SearchSpec, hi: float) -> float:
    return max(spec.level(hi / 2), spec.level(spec.floor))


def _converged(spec: SearchSpec, lo: float, hi: float) -> bool:
    if spec.kind == "users" and hi - lo <= 1:
        return True
    return hi - lo <= spec.precision * lo * (1 + 1e-9)


def _midpoint(spec: SearchSpec, lo: float, hi: float) -> float:
    if spec.kind == "users":
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
        probes.append(Probe(level, verdict, extensions))
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
        kind = StageKind(self.spec.kind)
        label = f"users={int(level)}" if self.spec.kind == "users" else f"rate={level:g}"
        return Stage(index, kind, level, duration_s, start_s, warmup_s=warmup_s, label=label)

    def set(self, stages: Sequence[Stage]) -> None:
        object.__setattr__(self, "stages", tuple(stages))
        object.__setattr__(self, "_starts", tuple(st.start_s for st in self.stages))

    def reset(self) -> None:
        self.set([replace(self.stages[0], duration_s=self.forever_s, start_s=0.0, warmup_s=self.warmup_s)])
