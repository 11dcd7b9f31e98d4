"""What the ``/llm`` page shows of a finished test and what its charts mark: a test's
result in ``summary.json``'s keys (:func:`result_view`) and the stage starts and SLO
thresholds (:func:`chart_marks`). See :mod:`llm_locust.live.webui`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, TypedDict

from pydantic import BaseModel

from llm_locust.config.jsontypes import JsonObject
from llm_locust.config.slo import SloKind
from llm_locust.load.search import Verdict
from llm_locust.results.headline import headline
from llm_locust.results.summary_model import RunSummary, StageRow
from llm_locust.results.summary_text import inconclusive_reason

if TYPE_CHECKING:
    from llm_locust.config.slo import SloLine

__all__ = ["ChartMarks", "ResultView", "StageView", "chart_marks", "result_view"]


class StageView(TypedDict):
    """One stage of a finished test, as the page's stage table shows it."""

    label: str
    verdict: str | None
    invalid_reason: str | None
    completed: int
    request_throughput: float
    p95_ttft_ms: float | None
    why: str


#: A finished test as the page shows it, in ``summary.json``'s keys; the medians are
#: ``median_<name>_ms`` for ttft, tpot, itl and e2el.
class ResultView(TypedDict):
    capacity: str | None
    client_saturated: str | None
    interrupted_by: str | None
    completed: int
    failed: int
    incomplete: int
    excluded: JsonObject | None
    duration: float
    measured_span: JsonObject | None
    records: JsonObject | None
    request_throughput: float
    output_throughput: float
    median_ttft_ms: float | None
    median_tpot_ms: float | None
    median_itl_ms: float | None
    median_e2el_ms: float | None
    slo_passed: bool | None
    slo_verdict: str | None
    slo_reason: str | None
    stages: list[StageView]


class StageMark(TypedDict):
    label: str
    t: float  # wall clock


class SloMark(TypedDict):
    metric: str  # the chart
    objective: str
    threshold: float


class ChartMarks(TypedDict):
    """What the charts mark: the started stages and the request-level SLO thresholds."""

    stages: list[StageMark]
    slo: list[SloMark]


#: SLO metric -> the live chart it is drawn on
_SLO_CHARTS = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2e": "e2e"}


def chart_marks(
    stages: Sequence[tuple[str, float]], t0: float | None, slo: Iterable[SloLine], now: float
) -> ChartMarks:
    """What the charts mark: each started stage's start (wall clock) and label (``stages``:
    (label, start_s) pairs of the plan that started at ``t0``), and each request-level SLO
    threshold (seconds) with the chart it belongs to."""
    started: list[StageMark] = []
    if t0 is not None:
        started = [{"label": label, "t": t0 + start_s} for label, start_s in stages if t0 + start_s <= now]
    lines: list[SloMark] = []
    for line in slo:
        if line.kind is SloKind.REQUEST and line.metric in _SLO_CHARTS:
            lines.append(
                {"metric": _SLO_CHARTS[line.metric], "objective": line.text, "threshold": line.threshold}
            )
    return {"stages": started, "slo": lines}


def result_view(summary: RunSummary | None) -> ResultView | None:
    """What the page shows of a finished test's summary (``None`` while it runs), in
    ``summary.json``'s keys."""
    if summary is None:
        return None
    judged = headline(summary)
    return {
        "capacity": summary.capacity,
        "client_saturated": summary.client_saturated,
        "interrupted_by": summary.interrupted_by,
        "completed": summary.completed,
        "failed": summary.failed,
        "incomplete": summary.incomplete,
        "excluded": _block(summary.excluded),
        "duration": summary.duration,
        "measured_span": _block(summary.measured_span),
        "records": _block(summary.records),
        "request_throughput": summary.request_throughput,
        "output_throughput": summary.output_throughput,
        "median_ttft_ms": summary.ms("median", "ttft"),
        "median_tpot_ms": summary.ms("median", "tpot"),
        "median_itl_ms": summary.ms("median", "itl"),
        "median_e2el_ms": summary.ms("median", "e2el"),
        "slo_passed": None if summary.slo is None else summary.slo.passed,  # the point estimate
        "slo_verdict": None if judged is None else str(judged[0]),  # shown to pass, or not
        "slo_reason": None if judged is None else judged[1],
        "stages": [_stage_view(stage) for stage in summary.stages or ()],
    }


def _block(block: BaseModel | None) -> JsonObject | None:
    return None if block is None else block.model_dump(exclude_unset=True)


def _stage_view(stage: StageRow) -> StageView:
    inconclusive = stage.verdict is Verdict.INCONCLUSIVE
    return {
        "label": stage.label,
        "verdict": None if stage.verdict is None else stage.verdict.value,
        "invalid_reason": stage.invalid_reason,
        "completed": stage.completed,
        "request_throughput": stage.request_throughput,
        "p95_ttft_ms": stage.ms("p95", "ttft"),
        "why": inconclusive_reason(stage.slo) if inconclusive else "",
    }
