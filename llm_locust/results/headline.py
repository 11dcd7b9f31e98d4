"""The one-word verdict above a run's lines, and why: it never says more than its lines show.

``PASS`` only when shown to pass: every SLO line's 95 % interval on the passing side (a point
estimate under the threshold with an interval that straddles it is ``INCONCLUSIVE``); for a
capacity search, a capacity found (and the demand met, when there is one). ``FAIL`` when a line
(or the search's step at the demand, or its lowest step) is shown to fail; ``WITHHELD`` when the
search stopped on invalid steps; otherwise ``INCONCLUSIVE``. The reason names the line or step.
The end-of-run text, the report and the web UI all show :func:`headline`.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from enum import StrEnum

from llm_locust.load.search import Verdict
from llm_locust.results.search_model import SearchResult
from llm_locust.results.summary_blocks import DemandBlock
from llm_locust.results.summary_model import RunSummary

__all__ = ["Headline", "headline"]


class Headline(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"
    WITHHELD = "withheld"


def headline(summary: RunSummary) -> tuple[Headline, str] | None:
    """(verdict, reason) of a run with an SLO; ``None`` without one. The reason is ``""`` for a pass
    of the SLO alone."""
    if summary.search:
        return _search(summary.search, summary.demand)
    slo = summary.slo
    if slo is None:
        return None
    objectives = slo.objectives
    if slo.verdict is Verdict.PASS and slo.passed and objectives:
        return Headline.PASS, ""
    failing = next((o for o in objectives if o.verdict is Verdict.FAIL), None)
    if failing is not None or (slo.verdict is Verdict.FAIL and not objectives):
        return Headline.FAIL, f"{failing.objective} fails" if failing else "no objective was measured"
    undecided = next((o for o in objectives if o.verdict is not Verdict.PASS), None)
    if undecided is None:
        return Headline.INCONCLUSIVE, "no objective was measured"
    note = undecided.note or "its 95 % interval straddles the threshold"
    return Headline.INCONCLUSIVE, f"{undecided.objective} is not shown to pass ({note})"


def _search(search: SearchResult, demand: DemandBlock | None) -> tuple[Headline, str]:
    if search.withheld:
        return Headline.WITHHELD, search.withheld
    upper = search.upper
    if search.capacity is None:
        word = Headline.FAIL if upper is not None and upper.verdict == Verdict.FAIL else Headline.INCONCLUSIVE
        why = f": {upper.label} {upper.verdict}s ({upper.reason})" if upper is not None else ""
        return word, "no search step was shown to meet the SLO" + why.replace(
            "inconclusives", "is inconclusive"
        )
    if search.stop_reason is None:
        return Headline.INCONCLUSIVE, "the run ended before the search did"
    best = search.highest_pass
    if demand is not None and not demand.meets:
        at = search.demand_step or upper
        shown = at is not None and at.verdict == Verdict.FAIL
        return (Headline.FAIL if shown else Headline.INCONCLUSIVE), demand.text
    label = "" if best is None else best.label
    return Headline.PASS, f"{label} is shown to meet the SLO" + (
        f"; {demand.text}" if demand is not None else ""
    )
