"""What a re-judged search's measured levels cannot tell (results.rejudge.unmeasured)."""

from __future__ import annotations

from typing import Any

from llm_locust.config.demand import parse_demand
from llm_locust.results.rejudge import unmeasured
from llm_locust.results.search_model import SearchResult
from tests.unit.results.test_headline import SPEC


def _step(level: float, verdict: str, in_flight: float) -> dict[str, Any]:
    return {"index": 0, "level": level, "label": f"users={level:g}", "verdict": verdict,
            "mean_in_flight": in_flight}  # fmt: skip


def _search(*steps: dict[str, Any]) -> SearchResult:
    passes = [s for s in steps if s["verdict"] == "pass"]
    others = [s for s in steps if s["verdict"] in ("fail", "inconclusive")]
    upper = min(others, key=lambda s: s["level"], default=None)
    below = [s for s in passes if upper is None or s["level"] < upper["level"]]
    return SearchResult.model_validate(
        {
            **SPEC,
            "steps": list(steps),
            "highest_pass": max(below, key=lambda s: s["level"], default=None),
            "upper": upper,
        }
    )


def test_every_level_passes_names_the_highest_measured() -> None:
    search = _search(_step(32, "pass", 31.0), _step(56, "pass", 52.4), _step(64, "invalid", 40.0))
    text = unmeasured(search, parse_demand("concurrency=50"))
    assert text == "at least 52.4 concurrent (users=56): no step above users=56 was measured"


def test_every_level_fails_names_the_lowest_measured() -> None:
    search = _search(_step(32, "fail", 31.0), _step(16, "inconclusive", 15.0))
    assert unmeasured(search, None) == "below users=16: no step below users=16 was measured"


def test_a_bracket_needs_no_note() -> None:
    assert unmeasured(_search(_step(16, "pass", 15.0), _step(32, "fail", 31.0)), None) is None
