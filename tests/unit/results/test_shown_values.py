"""A value shown beside its threshold is shown on its own side of it: "tpot_p90 95 ms misses
tpot_p90<=0.095s" (95.3 ms rounded to whole ms) read as a contradiction."""

from __future__ import annotations

import re

import pytest

from llm_locust.results.probe import fail_text, show_value, why_text
from llm_locust.results.search_model import SloTerm
from llm_locust.results.slo import parse_slo
from llm_locust.results.summary_model import RunSummary
from llm_locust.results.summary_text import format_table
from llm_locust.results.validity import MAX_SEND_LAG_MS, rate_validity


def _number(shown: str) -> float:
    """The shown value back in the unit of the threshold (seconds, or a share)."""
    number, unit = shown.split(" ")
    return float(number) * {"ms": 1e-3, "s": 1.0, "%": 1e-2}[unit]


def _term(name: str, value: float, threshold: float, objective: str) -> SloTerm:
    op = objective[len(name) : len(name) + 2]
    return SloTerm(objective=objective, name=name, op=op, threshold=threshold, value=value, verdict="fail")


def test_a_failing_term_shows_the_digits_that_put_it_over_its_threshold() -> None:
    term = _term("tpot_p90", 0.0953, 0.095, "tpot_p90<=0.095s")
    assert fail_text(term) == "tpot_p90 95.3 ms misses tpot_p90<=0.095s"
    term = _term("e2e_p95", 30.004, 30.0, "e2e_p95<=30s")
    assert fail_text(term) == "e2e_p95 30.004 s misses e2e_p95<=30s"
    term = _term("success", 0.98996, 0.99, "success>=0.99")
    assert fail_text(term) == "success 98.996 % misses success>=0.99"


def test_a_value_far_from_its_threshold_keeps_its_usual_digits() -> None:
    assert show_value("e2e_p95", 3.6, 3.0) == "3.60 s"
    assert show_value("ttft_p95", 0.8504, 1.0) == "850 ms"
    assert show_value("success", 0.995, 0.99) == "99.50 %"
    assert show_value("ttft_p95", 0.095, 0.095) == "95 ms"  # on it: shown on it


@pytest.mark.parametrize(("name", "threshold"), [("tpot_p90", 0.095), ("e2e_p95", 30.0), ("success", 0.99)])
def test_every_value_near_a_threshold_is_shown_on_its_side(name: str, threshold: float) -> None:
    for k in range(1, 400):
        for value in (threshold * (1 + k * 1e-6), threshold * (1 - k * 1e-6)):
            shown = _number(show_value(name, value, threshold))
            assert (shown > threshold) == (value > threshold) and shown != threshold, (value, shown)


def test_an_interval_that_reaches_past_a_threshold_shows_it_does() -> None:
    (line,) = parse_slo(["success>=0.99"]).lines
    text = why_text(line, 500, (0.98996, 0.9975))
    low = re.search(r"interval ([\d.]+ %)", text)
    assert low is not None and _number(low.group(1)) < 0.99, text
    (line,) = parse_slo(["e2e_p95<=30s"]).lines
    text = why_text(line, 500, (29.996, 30.2))
    assert "its interval 29.996 s-30.20 s straddles 30.00 s" in text, text


def test_the_end_of_run_line_shows_a_failing_value_over_its_threshold() -> None:
    objective = {
        "objective": "e2e_p95<=0.095s",
        "name": "e2e_p95",
        "op": "<=",
        "threshold": 0.095,
        "measured": 0.09504,
        "verdict": "fail",
        "passed": False,
    }
    summary = {"slo": {"objectives": [objective], "passed": False, "verdict": "fail", "goodput_rps": 1.0}}
    line = next(
        x for x in format_table(RunSummary.of(summary)).splitlines() if x.startswith("e2e_p95") and "ms" in x
    )
    assert "95.04 ms FAIL" in line, line


def test_a_send_lag_over_its_limit_is_shown_over_it() -> None:
    """Was "send lag p99 50 ms > 50 ms" for 50.2 ms."""

    class Stage:
        target, duration_s = 10.0, 10.0

    rows = [
        {
            "request_id": f"r{t}",
            "start_time": 1000.0 + t / 10,
            "outcome": "ok",
            "e2e": 0.5,
            "send_lag": 0.0502,
        }
        for t in range(100)
    ]
    reason = rate_validity(rows, 1000.0, 1010.0, Stage(), 10.0)["invalid_reason"]  # type: ignore[arg-type]
    assert reason.startswith(f"send lag p99 50.2 ms > {MAX_SEND_LAG_MS:g} ms"), reason
