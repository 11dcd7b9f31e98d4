"""A capacity-search step judged from its stage entry, and the search's result (pure)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from llm_locust.load.search import SearchSpec, SearchStages
from llm_locust.results.columns import Columns
from llm_locust.results.probe import extension_s, judge_step, sample_extension_s, short_of_samples
from llm_locust.results.search_model import JudgedStep
from llm_locust.results.search_result import probe_row, search_result
from llm_locust.results.slo import itl_stats_of, parse_slo
from llm_locust.results.stages import stage_entry

T0 = 1_000.0
SPEC = SearchSpec("rate", 4.0)
SLO = parse_slo("success>=90%,e2e_p95<=2s")


def rows(n: int, e2e: np.ndarray, span: float = 60.0) -> list[dict[str, Any]]:
    starts = np.linspace(0.0, span - 3.0, n)
    return [
        {
            "request_id": f"r{i}",
            "start_time": T0 + float(t),
            "outcome": "ok",
            "ttft": 0.1,
            "e2e": float(e),
            "tpot": 0.01,
            "itl": [0.01] * 3,
            "prompt_tokens": 10,
            "completion_tokens": 4,
            "token_source": "usage",
            "stage": 0,
            "warmup": False,
            "send_lag": 0.001,
        }
        for i, (t, e) in enumerate(zip(starts, e2e, strict=True))
    ]


def with_(step: JudgedStep, **changes: Any) -> JudgedStep:
    """``step`` with ``changes``, read as the file would be."""
    return JudgedStep.model_validate({**step.to_json(), **changes})


def judged(own: list[dict[str, Any]], unsettled: int = 0, span: float = 60.0) -> JudgedStep:
    stage = SearchStages(SPEC, 0.0, span).stage(len(own) / span, span, 0.0)
    entry = stage_entry(stage, T0, T0 + span, Columns.from_rows(own, itl_stats_of(SLO)), SLO, None)
    return judge_step(entry, SLO, unsettled=unsettled)


def test_a_p95_from_40_requests_is_inconclusive_not_a_pass() -> None:
    probe = judged(rows(40, np.full(40, 0.5)))  # every request far under 2 s
    assert probe.verdict == "inconclusive"
    assert "40 values cannot bound a P95 from above (it needs at least 72)" in probe.reason
    e2e = next(t for t in probe.terms if t.name == "e2e_p95")
    assert e2e.n == 40 and e2e.interval[1] is None and e2e.margin == 0.75


def test_enough_requests_well_under_pass_and_well_over_fail() -> None:
    rng = np.random.default_rng(0)
    good = judged(rows(400, rng.uniform(0.5, 1.5, 400)))
    assert good.verdict == "pass" and good.reason == "" and good.requests == 400
    bad = judged(rows(400, rng.uniform(1.5, 3.5, 400)))
    assert bad.verdict == "fail" and bad.reason.startswith("e2e_p95 3.")
    assert "misses e2e_p95<=2s" in bad.reason


def test_a_p95_at_the_threshold_straddles_it() -> None:
    e2e = np.concatenate([np.full(360, 1.0), np.linspace(1.9, 2.1, 40)])  # the P95 is 2.0 s
    probe = judged(rows(400, e2e))
    assert probe.verdict == "inconclusive" and "straddles" in probe.reason


def test_requests_still_in_flight_keep_a_step_from_passing() -> None:
    probe = judged(rows(400, np.full(400, 0.5)), unsettled=3)
    assert probe.verdict == "inconclusive" and "3 requests" in probe.reason


def test_an_extension_runs_until_the_lines_could_pass() -> None:
    probe = judged(rows(40, np.full(40, 0.5)))
    # 72 values needed, 40 in ~60 s: (72 - 40) * 60 / 40 * 1.1 = 52.8 s
    assert extension_s(probe, 60.0) == pytest.approx(52.8 * probe.window_s / 60.0, rel=1e-6)
    assert extension_s(judged(rows(400, np.full(400, 0.5)), unsettled=1), 60.0) == 60.0


def test_the_result_names_the_bracket_and_what_broke_first() -> None:
    rng = np.random.default_rng(1)
    probes = [judged(rows(400, rng.uniform(0.2, 1.0, 400))), judged(rows(400, rng.uniform(1.5, 3.5, 400)))]
    probes = [
        with_(probes[0], index=0, level=4.0, label="rate=4"),
        with_(probes[1], index=1, level=8.0, label="rate=8"),
    ]
    result = search_result(SPEC, probes, "precision", 60.0)
    assert result.highest_pass.index == 0 and result.lowest_fail.index == 1
    assert result.capacity == 4.0 and result.broke_first == "e2e_p95"
    assert result.sentence.startswith("capacity 4 req/s within the SLO")
    assert "8 req/s fails: e2e_p95" in result.sentence
    assert result.sentence.endswith("stopped: the boundary is bracketed within the precision")
    none = search_result(SPEC, [], None, 60.0)
    assert none.capacity is None and none.stop == "the run ended before the search did"


def test_a_step_short_of_samples_runs_on_without_spending_an_extension() -> None:
    short = judged(rows(40, np.full(40, 0.5)))  # a P95 from 40 requests: 72 needed
    assert short_of_samples(short)
    window = short.window_s
    assert sample_extension_s(short, 60.0) == pytest.approx(min(extension_s(short, 60.0), 240.0 - window))
    assert sample_extension_s(short, window / 4.0) is None  # its window already spans 4 step times
    e2e = np.concatenate([np.full(360, 1.0), np.linspace(1.9, 2.1, 40)])
    straddling = judged(rows(400, e2e))  # enough requests: an interval across the threshold
    assert straddling.verdict == "inconclusive" and not short_of_samples(straddling)
    assert sample_extension_s(straddling, 60.0) is None
    assert sample_extension_s(judged(rows(400, np.full(400, 0.5))), 60.0) is None  # a pass


def test_a_probe_row_for_the_live_table() -> None:
    rng = np.random.default_rng(1)
    bad = rows(400, rng.uniform(1.5, 3.5, 400))
    for r in bad[:20]:
        r.update(outcome="http_5xx", ttft=None, e2e=0.01, tpot=None, completion_tokens=None)
    row = probe_row(with_(judged(bad), sample_extensions=1, phase="bisect"))
    assert row["verdict"] == "fail" and row["term"] == "e2e_p95" and row["label"].startswith("rate=")
    assert row["success"] == pytest.approx(380 / 400) and row["runs_on"] == 1 and row["extensions"] == 0
    assert row["ttft_p95_s"] == pytest.approx(0.1) and 2.5 < row["e2e_p95_s"] < 3.5
    e2e = np.concatenate([np.full(360, 1.0), np.linspace(1.9, 2.1, 40)])
    straddling = probe_row(judged(rows(400, e2e)))
    assert straddling["verdict"] == "inconclusive" and straddling["term"] == "e2e_p95"
    assert straddling["runs_on"] == 0 and "straddles" in straddling["reason"]


def health_block(cpu: float, lag_p90: float, host: float | None = None, stall: float = 0.0) -> dict[str, Any]:
    from llm_locust.results.saturation import client_block

    intervals = []
    for t in range(60):
        interval = {"start": T0 + t, "end": T0 + t + 1, "cpu": cpu, "lag_mean_s": lag_p90 / 2,
                    "lag_p90_s": lag_p90, "lag_max_s": 2 * lag_p90, "stall_s": stall if t == 30 else 0.0,
                    "ticks": 50}  # fmt: skip
        if host is not None:
            interval.update(host_cpu=host, cores=2)
        intervals.append(interval)
    return client_block(intervals, T0, T0 + 60)


def test_a_step_measured_by_a_saturated_client_is_invalid_whatever_it_measured() -> None:
    """The demo answered "B meets 50 concurrent" from steps the same run called invalid."""
    from llm_locust.results.probe import gate

    passing = judged(rows(400, np.full(400, 0.5)))
    assert passing.verdict == "pass"
    busy_host = gate(passing, health_block(0.2, 0.4, host=0.97), 60.0)
    assert busy_host.verdict == "invalid" and busy_host.judged_as == "pass"
    assert busy_host.invalidity == "client"
    assert busy_host.reason.startswith("host overloaded: other processes used 87 % of 2 cores")
    busy_process = gate(passing, health_block(0.97, 0.02, host=0.6), 60.0)
    assert busy_process.reason.endswith("this process used a whole core (up to 97 %): add workers")
    healthy = gate(passing, health_block(0.2, 0.001, host=0.3), 60.0)
    assert healthy.verdict == "pass" and healthy.client is not None and not healthy.client.saturated
    assert gate(passing, None, 60.0).verdict == "pass"  # no health measured: nothing to hold against it


def test_a_step_whose_client_stalled_a_tenth_of_it_is_invalid_whatever_the_seconds_say() -> None:
    """A 1.5-s SIGSTOP inside a 5-s step (test_decision_page): one late tick in a health second is
    no late p90, so the step was judged on the requests outside the stall, a pass or a fail, as the
    pause fell (a fresh-clone make test of 2026-12-03 read 'fail' where four runs read 'invalid').
    A stall of a tenth of the window or more makes it invalid; a short one does not."""
    from llm_locust.results.probe import STALLED_SHARE, gate

    passing = judged(rows(400, np.full(400, 0.5)))
    paused = gate(passing, health_block(0.2, 0.001, host=0.3, stall=STALLED_SHARE * 60.0), 60.0)
    assert paused.verdict == "invalid" and paused.judged_as == "pass" and paused.invalidity == "client"
    assert paused.reason.startswith("client stalled 6.0 s of the step's 60 s")
    blip = gate(passing, health_block(0.2, 0.001, host=0.3, stall=0.12), 60.0)  # a start's collection
    assert blip.verdict == "pass" and blip.client is not None and blip.client.stall_s == 0.12


def test_only_the_stall_inside_a_steps_window_is_the_steps() -> None:
    """The first step of a web UI search (3 s, no warm-up) ran twice on a busy host (a fresh-clone
    make test of 2026-12-03 and 1 of 3 runs beside two busy loops): "client stalled 0.3 s of the
    step's 3 s" was the test's own start (its prompts built: 0.33 s of stall in a health second
    that began 0.27 s before the step; the step's first request 0.12 s into it, none stalled). The
    intervals now say where their stalls lie: a stall before the window is not the step's, and
    a pause across the window's start (test_decision_page: a 1.5-s SIGSTOP from 0.51 s before a
    5-s step) counts for what of it is inside."""
    from llm_locust.results.probe import gate
    from llm_locust.results.saturation import client_block
    from llm_locust.results.search_model import Window

    judged_step = judged(rows(400, np.full(400, 0.5)))
    health = {"cpu": 0.2, "lag_mean_s": 0.001, "lag_p90_s": 0.002, "lag_max_s": 0.005, "stall_s": 0.0,
              "ticks": 48, "host_cpu": 1.0, "cores": 2}  # fmt: skip
    start = {**health, "start": T0 - 0.267, "end": T0 + 0.741, "stall_s": 0.330, "lag_max_s": 0.207}
    rest = [{**health, "start": T0 + 0.741 + t, "end": T0 + 1.741 + t} for t in range(3)]
    window = (T0 + 0.119, T0 + 3.0)  # from the level's reach (target_reached_s 0.119)
    passing = judged_step.model_copy(update={"window": Window(start=window[0], end=window[1])})
    before = {**start, "stall_from": T0 - 0.21, "stall_to": T0 + 0.118}  # the prompts' build
    step = gate(passing, client_block([before, *rest], *window), 3.0)
    assert step.verdict == "pass" and step.client is not None and step.client.stall_s == 0.0
    older = gate(passing, client_block([start, *rest], *window), 3.0)  # a health file without the span
    assert older.verdict == "invalid" and older.reason.startswith("client stalled 0.3 s of the step's 3 s")

    paused = {**health, "start": T0 - 0.6, "end": T0 + 1.0, "stall_s": 1.5, "lag_max_s": 1.5,
              "stall_from": T0 - 0.51, "stall_to": T0 + 0.99}  # fmt: skip
    after = [{**health, "start": T0 + 1.0 + t, "end": T0 + 2.0 + t} for t in range(4)]
    five = judged_step.model_copy(update={"window": Window(start=T0, end=T0 + 5.0)})
    sigstop = gate(five, client_block([paused, *after], T0, T0 + 5.0), 5.0)
    assert sigstop.verdict == "invalid" and sigstop.client is not None
    assert sigstop.client.stall_s == pytest.approx(0.99)
    assert sigstop.reason.startswith("client stalled 1.0 s of the step's 5 s")


def test_a_step_still_short_of_requests_after_running_on_is_invalid() -> None:
    from llm_locust.results.probe import MAX_WINDOW_STEPS, gate

    short = judged(rows(40, np.full(40, 0.5)))  # a P95 from 40 requests
    assert gate(short, None, 60.0).verdict == "inconclusive"  # it may still run on for them
    probe = with_(short, window_s=MAX_WINDOW_STEPS * 15.0)  # it has run on for 4 step times of 15 s
    out = gate(probe, None, 15.0)
    assert out.verdict == "invalid" and out.invalidity == "samples"
    assert out.reason.startswith("too few requests after 4 step times")


def test_a_step_where_every_request_failed_is_a_failing_step() -> None:
    """A single-slot server cutting every stream at 2 concurrent: the step fails, whatever the SLO."""
    own = rows(100, np.full(100, 0.5))
    for r in own:
        r["outcome"], r["ttft"], r["e2e"] = "server_error", None, None
    slo = parse_slo("e2e_p95<=2s")  # no success line: before, "0 values give no interval" (inconclusive)
    stage = SearchStages(SPEC, 0.0, 60.0).stage(100 / 60.0, 60.0, 0.0)
    entry = stage_entry(stage, T0, T0 + 60, Columns.from_rows(own, itl_stats_of(slo)), slo, None)
    probe = judge_step(entry, slo)
    assert probe.verdict == "fail"
    assert probe.reason == "every request failed (100; most often server_error x100)"


def test_a_search_stopped_on_invalid_steps_withholds_its_answer() -> None:
    from llm_locust.load.search import StopReason

    ok = judged(rows(400, np.full(400, 0.5)))
    steps = [
        with_(ok, index=0, label="rate=4", level=4.0),
        with_(ok, index=1, label="rate=8", level=8.0, verdict="invalid", invalidity="level",
              reason="sent 6.10 of 8.00 req/s scheduled"),
        with_(ok, index=2, label="rate=8", level=8.0, verdict="invalid", invalidity="level",
              reason="sent 6.00 of 8.00 req/s scheduled"),
    ]  # fmt: skip
    result = search_result(SPEC, steps, StopReason.INVALID, 60.0)
    assert result.capacity is None and result.highest_pass is None and result.decided_by == []
    assert (
        result.sentence
        == result.withheld
        == (
            "answer withheld: sent 6.00 of 8.00 req/s scheduled; add workers, or run on a quieter host "
            "(rate=8 invalid 2 times: no step above it can be measured on this run)"
        )
    )
    failing = with_(ok, index=3, label="rate=8", level=8.0, verdict="fail", reason="e2e")
    valid = search_result(SPEC, [steps[0], failing], "precision", 60.0)
    assert [(d.label, d.role, d.valid) for d in valid.decided_by] == [
        ("rate=4", "capacity", True),
        ("rate=8", "bound", True),
    ]
    assert "decided by rate=4 (pass, valid) and rate=8 (fail, valid)" in valid.sentence


def test_too_few_requests_for_a_success_ratio_read_as_one_plain_clause() -> None:
    """The demo printed "short of requests (290; success: 290 requests cannot show it (at least
    381 without a failure needed)) -> run on 69.0 s": one clause now, naming the objective."""
    from llm_locust.results.search_progress import SearchProgress

    probe = judged(rows(30, np.full(30, 0.5)))  # 30 successes: success>=90% needs 35
    assert probe.verdict == "inconclusive"
    assert probe.reason == "30 requests are too few to show success>=90% (35 without a failure needed)"
    assert SearchProgress(1.0).short(probe, 12.0) == (
        f"search: {probe.label}: 30 requests are too few to show success>=90% "
        "(35 without a failure needed) -> running on for 12.0 s more"
    )
