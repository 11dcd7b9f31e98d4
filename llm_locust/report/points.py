"""One load level of a run as the report's charts draw it: a stage row of the summary (or the
whole run when it had no stages) and the values of its records that the row's latencies cover.

The row is the typed summary's (:class:`~llm_locust.results.summary_model.StageRow`, or the
:class:`~llm_locust.results.summary_model.RunSummary` itself for the whole run); its values
come from the same columns as the summary (:class:`~llm_locust.results.timeline.Timeline`
over :class:`~llm_locust.results.columns.Columns`), covered by the same rule
(``Coverage.LATENCY``, :mod:`llm_locust.results.inclusion`). Pure module.
"""

from __future__ import annotations

import numpy as np

from llm_locust.load.search import Verdict
from llm_locust.results.summary_model import RunSummary, StageRow
from llm_locust.results.timeline import Timeline, binned_overlap

__all__ = ["StagePoint"]


class StagePoint:
    """One load level of a run: a stage (``index``), or the whole run (``index`` ``None``)."""

    def __init__(
        self, row: StageRow | RunSummary, timeline: Timeline, index: int | None, run_span: tuple[float, float]
    ) -> None:
        self.row = row
        self.timeline, self.index, self._run_span = timeline, index, run_span
        self.label = row.label if isinstance(row, StageRow) and row.label else "whole run"
        verdict = row.verdict if isinstance(row, StageRow) else None
        self.verdict: Verdict | None = verdict or (row.slo.verdict if row.slo is not None else None)
        self.window = (row.window.start, row.window.end) if isinstance(row, StageRow) and row.window else None
        self.littles_law = row.littles_law if isinstance(row, StageRow) else None
        self._values: dict[str, np.ndarray] = {}

    def values(self, column: str) -> np.ndarray:
        """The values of ``column`` (``itl``: every gap) the summary's latencies cover
        (``Coverage.LATENCY``), sorted; computed once."""
        if column not in self._values:
            t = self.timeline
            mask = t.timed(self.index)
            values = (
                t.gaps(mask)
                if column == "itl"
                else {"ttft": t.ttft, "tpot": t.tpot, "e2e": t.e2e}[column][mask]
            )
            self._values[column] = np.sort(values[~np.isnan(values)])
        return self._values[column]

    def in_flight(self) -> float | None:
        """Mean requests in flight: the stage's Little's-law figure, else measured over its window
        (the run's span for the whole run)."""
        if self.littles_law is not None and self.littles_law.mean_in_flight is not None:
            return self.littles_law.mean_in_flight
        span = self._run_span if self.index is None else self.window
        if span is None or span[1] <= span[0]:
            return None
        t = self.timeline
        return float(binned_overlap(t.start, t.end, np.array(span))[0]) / (span[1] - span[0])
