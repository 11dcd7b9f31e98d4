"""The one-word verdict above a run's lines never says more than they show (issue 22 §8)."""

from __future__ import annotations

from typing import Any

from llm_locust.results.headline import Headline, headline
from llm_locust.results.summary_model import RunSummary
from llm_locust.results.summary_text import format_table


def objective(name: str, verdict: str, passed: bool, note: str = "") -> dict[str, Any]:
    return {"objective": name, "name": name.split("<")[0], "verdict": verdict, "passed": passed,
            "measured": 0.5, "note": note}  # fmt: skip


def slo(*objectives: dict[str, Any]) -> dict[str, Any]:
    verdicts = {o["verdict"] for o in objectives}
    return {
        "objectives": list(objectives),
        "passed": all(o["passed"] for o in objectives),
        "verdict": "fail" if "fail" in verdicts else "pass" if verdicts == {"pass"} else "inconclusive",
        "goodput_rps": 1.0,
    }


def test_every_line_inconclusive_is_no_pass() -> None:
    """Every line under its threshold by its point estimate, none shown to be: was "SLO: PASS"."""
    summary = {"slo": slo(objective("ttft_p95<=1s", "inconclusive", True, "40 values cannot bound a P95"))}
    assert headline(RunSummary.of(summary)) == (
        Headline.INCONCLUSIVE,
        "ttft_p95<=1s is not shown to pass (40 values cannot bound a P95)",
    )
    text = format_table(RunSummary.of(summary))
    assert "SLO: INCONCLUSIVE" in text and "SLO: PASS" not in text
    shown = {"slo": slo(objective("ttft_p95<=1s", "pass", True))}
    assert headline(RunSummary.of(shown)) == (Headline.PASS, "") and "SLO: PASS" in format_table(
        RunSummary.of(shown)
    )
    failing = {"slo": slo(objective("ttft_p95<=1s", "pass", True), objective("e2e_p95<=2s", "fail", False))}
    assert headline(RunSummary.of(failing)) == (Headline.FAIL, "e2e_p95<=2s fails")


def step(label: str, verdict: str, reason: str = "") -> dict[str, Any]:
    return {"label": label, "verdict": verdict, "reason": reason, "index": 0, "level": 1.0}


#: What every search block states besides its bracket (the model requires them).
SPEC = {
    "kind": "users",
    "min": 1.0,
    "precision": 0.1,
    "max_steps": 8,
    "max_extensions": 2,
    "step_time_s": 30.0,
}


def test_a_search_that_found_no_capacity_is_no_pass_whatever_the_pooled_lines_say() -> None:
    """ "SLO: PASS" stood above "no search step was shown to meet the SLO"."""
    pooled = slo(objective("e2e_p95<=30s", "pass", True))
    search = {**SPEC, "capacity": None,
              "upper": step("users=32", "fail", "e2e_p95 35.1 s misses e2e_p95<=30s"),
              "stop_reason": "minimum", "highest_pass": None}  # fmt: skip
    summary = {"slo": pooled, "search": search}
    word, reason = headline(RunSummary.of(summary)) or (None, "")
    assert word is Headline.FAIL and reason.startswith(
        "no search step was shown to meet the SLO: users=32 fails"
    )
    text = format_table(RunSummary.of(summary))
    assert "SLO, the capacity search's answer: FAIL" in text and "PASS" not in text
    undecided = {**search, "upper": step("users=32", "inconclusive", "straddles")}
    assert headline(RunSummary.of({"slo": pooled, "search": undecided}))[0] is Headline.INCONCLUSIVE  # type: ignore[index]
    withheld = {**search, "withheld": "answer withheld: users=64 was invalid 2 times"}
    assert headline(RunSummary.of({"slo": pooled, "search": withheld})) == (
        Headline.WITHHELD,
        withheld["withheld"],
    )
    found = {**SPEC, "capacity": 24.0, "highest_pass": step("users=24", "pass"),
             "upper": step("users=25", "fail"), "stop_reason": "precision", "demand_step": None}  # fmt: skip
    assert headline(RunSummary.of({"slo": pooled, "search": found}))[0] is Headline.PASS  # type: ignore[index]
    TEXT = "does not meet 50 concurrent: capacity 24 concurrent (-52%)"
    below = {"slo": pooled, "search": {**found, "demand_step": step("users=50", "fail")},
             "demand": {"meets": False, "text": TEXT}}  # fmt: skip
    assert headline(RunSummary.of(below)) == (Headline.FAIL, TEXT)
