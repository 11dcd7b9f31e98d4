"""The master's ingest watch: lag over each worker's baseline, rows behind, one warning."""

from __future__ import annotations

from llm_locust.runtime.ingest import IngestWatch


def feed(watch: IngestWatch, seconds: int, lag_at, workers: int = 2, rows: int = 50) -> list[str]:
    """One batch per worker per second for ``seconds``; batch sent at t applied at t + lag_at(t)."""
    warnings = []
    for t in range(seconds):
        for w in range(workers):
            sent = 1000.0 + t + 0.01 * w
            warning = watch.observe(f"w{w}", sent, rows, sent + 0.002 + lag_at(t))
            if warning is not None:
                warnings.append(warning)
    return warnings


def test_a_master_that_keeps_up_is_never_behind() -> None:
    watch = IngestWatch()
    assert feed(watch, 60, lambda t: 0.05 * (t % 3)) == []  # jitter of a busy master
    block = watch.block()
    assert block["fell_behind"] is False and block["warning"] is None
    assert block["batches"] == 120 and block["rows"] == 6000
    assert block["lag_max_s"] <= 0.1 + 1e-9


def test_a_growing_lag_warns_once_with_the_rows_behind() -> None:
    watch = IngestWatch()
    # keeps up for 10 s, then each second's batch waits 0.5 s longer than the last
    warnings = feed(watch, 40, lambda t: max(0.0, t - 10) * 0.5)
    assert len(warnings) == 1
    assert warnings[0].startswith("master is ")
    assert warnings[0].endswith("use fewer workers per master or shorter records")
    rows = float(warnings[0].split()[2].replace(",", ""))
    # found when the lag had stayed >= 1 s for 3 s of the master's clock: 2 workers x 50 rows/s x its lag.
    # By hand: the batch sent at t is applied at 1000 + t + 0.5 (t - 10) = 995 + 1.5 t; its lag first
    # reaches 1 s at t = 12 (applied at 1013); 3 s later is 1016, reached by t = 14, lag 2.0 s
    lag = float(warnings[0].split("applied ")[1].split(" s")[0])
    assert lag == 2.0 and "growing for 3 s" in warnings[0]
    # (the other worker's latest batch is a second older: its lag is 0.5 s less)
    assert 50 * lag + 50 * (lag - 0.5) - 1 <= rows <= 2 * 50 * lag + 1
    block = watch.block()
    assert block["fell_behind"] and block["warning"] == warnings[0]
    assert block["lag_max_s"] >= 14.0 and block["rows_behind_max"] >= 2 * 50 * 14
    assert watch.lag_s >= 14.0


def test_a_short_stall_is_not_falling_behind() -> None:
    watch = IngestWatch()
    # the master stalls from 12 to 15 s (a GC, a slow disk), then applies the waiting batches at once
    assert feed(watch, 30, lambda t: 15.0 + 0.01 * t - t if 12 <= t < 15 else 0.0) == []
    assert watch.block()["lag_max_s"] >= 2.9


def test_a_worker_clock_offset_is_its_baseline_not_a_lag() -> None:
    watch = IngestWatch()
    for t in range(30):  # this worker's clock runs 7 s behind the master's
        assert watch.observe("w0", 1000.0 + t - 7.0, 50, 1000.0 + t + 0.01) is None
    assert watch.lag_s < 0.01 and not watch.block()["fell_behind"]


def test_a_new_test_starts_afresh() -> None:
    watch = IngestWatch()
    assert feed(watch, 40, lambda t: max(0.0, t - 10) * 0.5)
    watch.reset()
    assert watch.block()["fell_behind"] is False and watch.block()["batches"] == 0
    assert feed(watch, 60, lambda t: 0.0) == []
