"""Saturated stages, the capacity answer that skips them, and stalled requests."""

from __future__ import annotations

from llm_locust.results.saturation import (
    SATURATED_CPU,
    SATURATED_LAG_P90_S,
    client_block,
    interval_saturated,
    judge_stages,
)


def interval(t: float, cpu: float = 0.3, lag_p90: float = 0.001, worker: str | None = None) -> dict:
    out = {"start": t, "end": t + 1.0, "cpu": cpu, "lag_mean_s": lag_p90 / 2, "lag_p90_s": lag_p90,
           "lag_max_s": lag_p90 * 2, "stall_s": 0.0, "ticks": 50}  # fmt: skip
    if worker:
        out["worker"] = worker
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
    }  # fmt: skip


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
    assert message == "client saturated from users=600: timings unreliable, add workers"
    assert stages[0]["verdict"] == "pass" and stages[0]["valid"] and not stages[0]["client"]["saturated"]
    assert stages[1]["verdict"] == "invalid" and not stages[1]["valid"]
    assert stages[1]["invalid_reason"] == (
        "client saturated (local: 10 of 10 seconds at CPU >= 90 % of a core or event-loop lag p90 >= "
        "10 ms; CPU up to 98 %; lag up to 60.0 ms): timings unreliable, add workers"
    )
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
    assert "4 of 20 seconds at CPU >= 90 % of a core or event-loop lag p90 >= 10 ms" in reason, reason
    assert "lag up to 50.0 ms" in reason and "CPU up to 30 %" in reason, reason
