"""Saturated stages, the capacity answer that skips them, and stalled requests."""

from __future__ import annotations

import pytest

from llm_locust.results.saturation import (
    SATURATED_CPU,
    SATURATED_LAG_P90_S,
    Cause,
    advice,
    cause,
    client_block,
    interval_saturated,
    judge_stages,
    stall_inside,
)


def interval(
    t: float,
    cpu: float = 0.3,
    lag_p90: float = 0.001,
    worker: str | None = None,
    host: float | None = None,
    cores: int = 2,
) -> dict:
    out = {"start": t, "end": t + 1.0, "cpu": cpu, "lag_mean_s": lag_p90 / 2, "lag_p90_s": lag_p90,
           "lag_max_s": lag_p90 * 2, "stall_s": 0.0, "ticks": 50}  # fmt: skip
    if worker:
        out["worker"] = worker
    if host is not None:
        out["host_cpu"], out["cores"] = host, cores
    return out


def test_cpu_or_lag_makes_an_interval_saturated() -> None:
    assert not interval_saturated(interval(0))
    assert interval_saturated(interval(0, cpu=SATURATED_CPU))
    assert interval_saturated(interval(0, lag_p90=SATURATED_LAG_P90_S))


def test_a_stage_is_saturated_when_one_process_is_often_saturated() -> None:
    healthy = [interval(t, worker="w1") for t in range(10)]
    busy = [interval(t, cpu=0.97, worker="w2") for t in range(3)] + [
        interval(t, worker="w2") for t in range(3, 10)
    ]
    block = client_block(healthy + busy, 0.0, 10.0)
    assert block["saturated"] and block["saturated_processes"] == ["w2"]
    assert block["intervals"] == 20 and block["saturated_intervals"] == 3
    assert block["cpu_max"] == 0.97
    one_blip = client_block([*healthy, interval(0, cpu=0.99, worker="w3")], 0.0, 10.0)
    assert one_blip["saturated"]  # w3's only interval in the window is saturated
    w3 = [interval(t, worker="w3") for t in range(9)] + [interval(9, cpu=0.99, worker="w3")]
    calm = client_block(healthy + w3, 0.0, 10.0)
    assert not calm["saturated"]  # 1 in 10 of w3's intervals


def test_only_intervals_inside_the_window_count() -> None:
    intervals = [interval(t, cpu=0.99) for t in range(5)] + [interval(t) for t in range(5, 15)]
    assert client_block(intervals, 0.0, 5.0)["saturated"]
    assert not client_block(intervals, 5.0, 15.0)["saturated"]
    assert client_block([], 0.0, 1.0) == {
        "saturated": False, "saturated_processes": [], "intervals": 0, "saturated_intervals": 0,
        "cpu_max": None, "lag_p90_ms_median": None, "lag_max_ms": None, "stall_s": 0,
        "own_core_intervals": 0, "host_others_mean": None, "host_cores": None,
    }  # fmt: skip


def test_a_windows_stall_is_what_of_its_intervals_stalls_lies_inside_it() -> None:
    """Each interval says where its stalls lie (``stall_from`` / ``stall_to``): a window counts
    the part inside it, from every interval that reaches into it, each process's added up."""
    second = {**interval(10.0), "stall_s": 0.4, "stall_from": 10.2, "stall_to": 10.6}
    assert stall_inside(second, 0.0, 10.2) == 0.0  # before the window's start
    assert stall_inside(second, 10.6, 20.0) == 0.0
    assert stall_inside(second, 10.4, 20.0) == pytest.approx(0.2)
    assert stall_inside(second, 0.0, 20.0) == pytest.approx(0.4)
    two = {**second, "stall_s": 0.3, "stall_from": 10.1, "stall_to": 10.9}  # two stalls in a second
    assert stall_inside(two, 10.5, 20.0) == pytest.approx(0.3)  # at most the span's overlap, no more
    assert stall_inside(two, 10.7, 20.0) == pytest.approx(0.2)
    older = {**interval(10.0), "stall_s": 0.4}  # a health file from before the span: by its midpoint
    assert stall_inside(older, 10.4, 20.0) == 0.4 and stall_inside(older, 10.6, 20.0) == 0.0
    assert stall_inside(interval(10.0), 0.0, 20.0) == 0.0
    w2 = {**interval(10.0, worker="w2"), "stall_s": 0.5, "stall_from": 10.8, "stall_to": 11.3}
    # w2's interval lies mostly outside [10.9, 12] (midpoint 10.5), its stall mostly inside
    assert client_block([second, w2], 10.9, 12.0)["stall_s"] == pytest.approx(0.4)
    assert client_block([second, w2], 0.0, 20.0)["stall_s"] == pytest.approx(0.9)


def test_a_stage_measured_by_a_saturated_client_becomes_invalid() -> None:
    intervals = [interval(t) for t in range(10)] + [
        interval(t, cpu=0.98, lag_p90=0.03) for t in range(10, 20)
    ]
    stages = [
        {
            "index": 0,
            "label": "users=100",
            "window": {"start": 0.0, "end": 10.0},
            "valid": True,
            "verdict": "pass",
        },
        {
            "index": 1,
            "label": "users=600",
            "window": {"start": 10.0, "end": 20.0},
            "valid": True,
            "verdict": "pass",
        },
    ]
    message = judge_stages(stages, intervals)
    assert message == (
        "client saturated from users=600: this process used a whole core (up to 98 %): add workers"
    )
    assert stages[0]["verdict"] == "pass" and stages[0]["valid"] and not stages[0]["client"]["saturated"]
    assert stages[1]["verdict"] == "invalid" and not stages[1]["valid"]
    assert stages[1]["invalid_reason"] == "this process used a whole core (up to 98 %): add workers"
    untouched = [{"index": 0, "label": "users=1", "window": {"start": 0.0, "end": 1.0}, "valid": True}]
    assert judge_stages(untouched, []) is None and "client" not in untouched[0]


def test_the_reason_names_the_seconds_that_passed_a_limit_when_the_median_looks_healthy() -> None:
    """A demo stage was called saturated with "CPU up to 31 %, event-loop lag p90 2.6 ms" (its
    median): the 4 seconds of 20 whose lag p90 passed 10 ms were not said."""
    intervals = [interval(t) for t in range(16)] + [interval(t, lag_p90=0.025) for t in range(16, 20)]
    stages = [{"index": 0, "label": "users=48", "window": {"start": 0.0, "end": 20.0}, "valid": True}]
    judge_stages(stages, intervals)
    reason = stages[0]["invalid_reason"]
    assert stages[0]["verdict"] == "invalid"
    # no host reading: the loop's lateness is the cause, said with this process's CPU
    assert reason == (
        "host likely overloaded: this process used 30 % of a core (loop up to 50 ms late in 4 of 20 s): "
        "run on a quieter host"
    ), reason


def test_a_busy_process_is_told_apart_from_an_overloaded_host() -> None:
    """The demo's invalid steps had event-loop lag up to 1 s while the process used 13-28 % of a
    core: the host was overloaded, and "add workers" was the wrong advice."""
    own = client_block([interval(t, cpu=0.97, host=0.6) for t in range(10)], 0.0, 10.0)
    assert own["saturated"] and cause(own) is Cause.PROCESS
    assert advice(own) == "this process used a whole core (up to 97 %): add workers"
    # late loop, 20 % of a core, the 2-core host 95 % busy: others used 95 - 20 / 2 = 85 % of it
    host = client_block([interval(t, cpu=0.2, lag_p90=0.3, host=0.95) for t in range(10)], 0.0, 10.0)
    assert host["saturated"] and cause(host) is Cause.HOST
    assert host["host_others_mean"] == pytest.approx(0.95 - 0.2 / 2)
    assert advice(host) == (
        "host overloaded: other processes used 85 % of 2 cores (loop up to 600 ms late in 10 of 10 s): "
        "run on a quieter host or fewer at once"
    )
    # no host reading (health.jsonl of an older run, or no /proc/stat): the loop was late, said so
    unknown = client_block([interval(t, cpu=0.2, lag_p90=0.3) for t in range(10)], 0.0, 10.0)
    assert cause(unknown) is Cause.LOOP and advice(unknown).startswith("host likely overloaded: ")
    # a late loop on a quiet host (a fresh-clone make test, 2026-12-03: "host overloaded: other
    # processes used 2 % of 2 cores (loop up to 338 ms late in 1 of 3 s)"): not the host
    quiet = client_block([interval(t, cpu=0.4, lag_p90=0.02, host=0.22) for t in range(3)], 0.0, 3.0)
    assert quiet["saturated"] and cause(quiet) is Cause.HELD
    assert quiet["host_others_mean"] == pytest.approx(0.02)
    assert advice(quiet) == (
        "loop held: this process used up to 40 % of a core, other processes 2 % (loop up to 40 ms late "
        "in 3 of 3 s): the process's own work in bursts (a start, a long collection): run again"
    )
    stages = [{"index": 0, "label": "users=48", "window": {"start": 0.0, "end": 10.0}, "valid": True}]
    message = judge_stages(stages, [interval(t, cpu=0.2, lag_p90=0.3, host=0.95) for t in range(10)])
    assert message is not None and "users=48: host overloaded: other processes used 85 %" in message
    assert "add workers" not in message and "add workers" not in stages[0]["invalid_reason"]


def test_an_invalid_step_says_its_cause_first_in_one_short_line() -> None:
    """The trial of 2026-12-02: a step's line was about 400 characters, its cause last, and it
    said "client saturated (... CPU >= 90 % of a core ...)" of a process at 11 % of a core."""
    from llm_locust.results.probe import step_line
    from llm_locust.results.search_model import JudgedStep
    from llm_locust.results.timescale import in_deployment_time

    # the demo's case: a 2-core host 96 % busy with others, this process at 11 %, loop 115 ms late
    hot = [interval(t, cpu=0.11, lag_p90=0.0575, host=0.96 + 0.11 / 2) for t in range(13)]
    block = client_block(hot + [interval(t, cpu=0.11, host=0.5) for t in range(13, 20)], 0.0, 20.0)
    stages = [{"index": 0, "label": "users=32", "window": {"start": 0.0, "end": 20.0}, "valid": True}]
    judge_stages(stages, hot + [interval(t, cpu=0.11, host=0.5) for t in range(13, 20)])
    reason = stages[0]["invalid_reason"]
    assert reason == advice(block)
    assert reason.startswith("host overloaded: other processes used 96 % of 2 cores"), reason
    assert "(loop up to 115 ms late in 13 of 20 s)" in reason and "run on a quieter host" in reason
    assert "whole core" not in reason and "add workers" not in reason and ">= 90 %" not in reason
    line = step_line(
        JudgedStep(index=0, label="users=32", level=32, verdict="invalid", requests=389, reason=reason)
    )
    assert line.startswith("users=32 invalid: host overloaded: ") and line.endswith("(389 requests)")
    assert len(line) <= 170, len(line)  # was about 400
    # a simulator's 10x deployment time scales the step's latencies, never the loop's own lateness
    step = {
        "index": 0,
        "label": "users=32",
        "level": 32,
        "verdict": "invalid",
        "requests": 389,
        "reason": reason,
    }
    assert step_line(in_deployment_time(JudgedStep.model_validate(step), 10.0)) == line
    # a busy process: the other cause, the other advice; a worker of a distributed run is named
    busy = [interval(t, cpu=0.97, host=0.6, worker="w2") for t in range(10)]
    stages = [{"index": 0, "label": "users=64", "window": {"start": 0.0, "end": 10.0}, "valid": True}]
    judge_stages(stages, busy)
    assert stages[0]["invalid_reason"] == "this process used a whole core (up to 97 %): add workers (w2)"
    passing = step_line(JudgedStep(index=0, label="users=16", level=16, verdict="pass", requests=392))
    assert passing == "users=16 pass (392 requests)"
