"""A capacity search's progress lines (``llm-locust: search ...`` in the run's log, which
``llm-locust capacity`` prints for each plan), in deployment time when the target ran ``k``
times faster than the deployment it stands for (``--target-speedup K``): each line is composed
from the step's exact numbers in that scale (:func:`llm_locust.results.timescale.in_deployment_time`),
never from a line already written and then rescaled. The run's files keep the wall clock.

The web UI's probe table (:meth:`SearchProgress.live`, ``/llm/stats``'s ``search``) is in the same
deployment time, and says so (its ``clock`` block); the rest of the page stays the measured wall
clock (the tiles and charts: the live aggregate of the records as they arrive; a finished test's
verdict and stage table: its ``summary.json``).

Pure module: no Locust, no network.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from llm_locust.load.search import Decision
from llm_locust.results.probe import step_line
from llm_locust.results.search_model import JudgedStep, SearchResult
from llm_locust.results.search_result import deciders_text, probe_row
from llm_locust.results.timescale import in_deployment_time, search_in_deployment_time

__all__ = ["SearchProgress"]


@dataclass(frozen=True)
class SearchProgress:
    """The lines of one search: ``k``, the target's speed-up; ``rate``: a rate search (its
    levels are rates, / ``k`` in deployment time)."""

    k: float = 1.0
    rate: bool = False

    def _level(self, level: float) -> float:
        return level / self.k if self.rate else level

    def _label(self, label: str, level: float) -> str:
        return f"rate={self._level(level):g}" if self.rate and self.k != 1 else label

    def _step(self, probe: JudgedStep) -> JudgedStep:
        return in_deployment_time(probe, self.k, self.rate)

    def begun(self, number: int, label: str, level: float, phase: str) -> str:
        """``search step 3: users=24 (bisect)``."""
        return f"search step {number}: {self._label(label, level)} ({phase})"

    def short(self, probe: JudgedStep, more_s: float) -> str:
        """A step short of requests runs on: ``search: users=8: 40 requests are too few to show
        success>=99% (381 without a failure needed) -> running on for 12.0 s more``."""
        step = self._step(probe)
        return f"search: {step.label}: {step.reason} -> running on for {more_s * self.k:.1f} s more"

    def judged(self, probe: JudgedStep, decision: Decision) -> str:
        """``search: users=32 fail (396 requests; e2e_p95 ...) -> bisect -> 24``."""
        if self.rate and decision.level is not None:
            decision = replace(decision, level=self._level(decision.level))
        return f"search: {step_line(self._step(probe))} -> {decision.text}"

    def clock(self) -> dict[str, Any]:
        """Which clock the live table is in: deployment time (wall x ``k``), and a note to show."""
        note = ""
        if self.k != 1:
            note = (
                f"deployment time: the target ran {self.k:g}x faster; latencies x {self.k:g}, "
                f"rates / {self.k:g} (the rest of this page: the measured wall clock, as summary.json)"
            )
        return {"clock": "deployment", "target_speedup": self.k, "note": note}

    def live(self, result: SearchResult, running: tuple[str, float] | None, done: bool) -> dict[str, Any]:
        """The web UI's probe table in deployment time: a row per judged step
        (:func:`~llm_locust.results.search_result.probe_row`), the step ``running`` (its label and
        level), and the answer as it forms from the first judged step (``final`` once ``done``)."""
        real = search_in_deployment_time(result, self.k)
        answer = None
        if real.steps or done:
            answer = {
                "highest_pass": _label(real.highest_pass),
                "upper": _label(real.upper),
                "lowest_fail": _label(real.lowest_fail),
                "decided_by": deciders_text(real.decided_by),
                "final": done,
                "stop": real.stop if done else None,
                "sentence": real.sentence if done else None,
            }
        return {
            "kind": real.kind,
            "clock": self.clock(),
            "probes": [probe_row(p) for p in real.steps],
            "running": None if running is None else self._label(*running),
            "answer": answer,
        }


def _label(probe: JudgedStep | None) -> str | None:
    return None if probe is None else probe.label
