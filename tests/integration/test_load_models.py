"""Load models against the real simulator: ramps, open loop, trace replay, SLO verdicts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from llm_locust.load.arrivals import ArrivalSchedule, RateStep, gamma, poisson, split_for_worker
from llm_locust.results.inclusion import Coverage, row_covers
from tests.locustproc import REPO, expect_exit, run_distributed, run_locust
from tests.simproc import running_sim

pytestmark = pytest.mark.host_timing  # stage verdicts, arrival rates and lag: the client's own timing

TRACES = REPO.parent / "shared" / "data" / "traces"
LIGHT = ("--prompt-tokens", "32", "--max-tokens", "8")


def stage(summary: dict, i: int) -> dict:
    return summary["stages"][i]


@pytest.mark.slow
def test_ramp_tpot_rises_then_ttft_queues(tmp_path: Path) -> None:
    engine = ("--mode", "engine", "--max-num-seqs", "8", "--decode-ms-per-seq", "0.5")
    with running_sim(*engine) as url:
        res = run_locust(
            url,
            "--ramp",
            "1,4,16",
            "--step-time",
            "10s",
            "--warmup",
            "2s",
            "--prompt-tokens",
            "128",
            "--max-tokens",
            "48",
            results_dir=tmp_path / "r",
        )
    expect_exit(res, 0)
    s = res.summary
    assert [st["target"] for st in s["stages"]] == [1, 4, 16]
    rows = res.rows
    tpot = [stage(s, i)["median_tpot_ms"] for i in range(3)]
    ttft = [stage(s, i)["median_ttft_ms"] for i in range(3)]
    # the engine's step is 8 ms + 0.5 ms per sequence in the batch + 0.05 ms per prefilled token:
    # batches of 1, 4 and 8 (16 users, 8 slots) decode at 8.5, 10 and 12 ms per token, plus 6.4 ms
    # (128 tokens) in each of a request's 47 decode steps that prefilled another request. How many
    # did depends on the users' phases: none when they run in step (their prefills share their
    # own first-token steps), B - 1 when staggered. So each request's own count, from the records:
    for i, batch in enumerate((1, 4, 8)):
        measured, expected = _tpot_against_model(rows, i, batch)
        assert measured == pytest.approx(tpot[i], rel=1e-9)  # the summary's median is the records'
        assert measured == pytest.approx(expected, rel=0.01), (stage(s, i)["label"], measured, expected)
        assert 8.0 + 0.5 * batch <= expected <= 8.0 + 0.5 * batch + 6.4 * (batch - 1) / 47 + 1e-9
    assert tpot[0] == pytest.approx(8.5, rel=0.01) and tpot[0] < tpot[1] < tpot[2], tpot
    # 16 users, 8 batch slots: half the requests wait for a whole request to finish
    assert ttft[2] > 3 * ttft[1], ttft
    # requests sent after the last stage ended (before the shape's next tick) have no stage
    assert {r["stage"] for r in rows} - {None} == {0, 1, 2}
    assert any(r["warmup"] for r in rows)
    assert s["warmup_requests"] == sum(r["warmup"] for r in rows)
    # Little's law in each steady stage, from the records and not from the summary's code: the
    # in-flight count sampled every 5 ms, against the closed loop's user count and against
    # rate x mean E2E of the requests sent in the window (up to the edge effect of requests that
    # straddle the window's end: about E2E / window, here < 15 %)
    for st in s["stages"]:
        law, start, end = st["littles_law"], st["window"]["start"], st["window"]["end"]
        in_flight = _in_flight_on_grid(rows, start, end)
        assert law["mean_in_flight"] == pytest.approx(in_flight, rel=0.02), st["label"]
        assert in_flight == pytest.approx(st["target"], rel=0.1), st["label"]
        sent = [r for r in rows if start <= r["start_time"] < end]
        product = len(sent) / (end - start) * np.mean([r["e2e"] for r in sent])
        assert in_flight == pytest.approx(product, rel=0.2), st["label"]
    assert "users=16" in res.stdout  # one table row per stage


@pytest.mark.slow
def test_slo_verdict_follows_capacity_and_sets_exit_code(tmp_path: Path) -> None:
    engine = ("--mode", "engine", "--max-num-seqs", "4")
    with running_sim(*engine) as url:
        res = run_locust(
            url,
            "--ramp",
            "1,2,4,8",
            "--step-time",
            "5s",
            "--warmup",
            "1s",
            "--prompt-tokens",
            "64",
            "--max-tokens",
            "64",
            "--slo",
            "success>=99%,ttft_p95<=250ms",
            results_dir=tmp_path / "r",
        )
    s = res.summary
    verdicts = [st["slo"]["passed"] for st in s["stages"]]
    assert verdicts == [True, True, True, False], [(st["label"], st["p95_ttft_ms"]) for st in s["stages"]]
    # the point estimates pass up to users=4, but 4-second stages (8 to 26 requests) cannot
    # show a P95 or a 99 % success ratio (issue 13 §3): those stages are inconclusive, so
    # no stage is the capacity answer, and the sentence says what a stage would need; the
    # overloaded stage is a sure fail (its P95's whole interval is over 250 ms)
    assert [st["verdict"] for st in s["stages"]] == ["inconclusive"] * 3 + ["fail"]
    assert s["highest_passing_stage"] is None
    assert s["capacity"].startswith("no stage met the SLO; users=1 is inconclusive")
    assert "it needs at least 72" in s["capacity"]
    assert s["slo"]["passed"] is False
    expect_exit(res, 3)
    good = s["slo"]["good_requests"]
    assert 0 < good < s["completed"]


def _tpot_against_model(rows: list[dict], index: int, batch: int) -> tuple[float, float]:
    """(median measured TPOT, median modelled TPOT) in ms of stage ``index``'s latency records
    (the summary's: its window, no client stall; the rule of llm_locust/results/inclusion.py).

    A request's model: ``8 + 0.5 * batch`` ms a decode step, plus 6.4 ms for every other request
    whose prefill step fell in its decode: that request's first token came after this one's and
    no later than its last (a step's tokens are written together: within a quarter step is the
    same step). Measured on an idle host and under the suite: the ratio's median 0.999-1.001 while
    the phases moved TPOT at 4 users from 9.99 (all in step) to 10.15 ms, and the old fixed
    expectation (every request's decode holding B - 1 prefills: 10.41 ms) failed at 3 %.
    """
    done = [r for r in rows if r["e2e"] is not None and r["ttft"] is not None]
    first = np.array([r["start_time"] + r["ttft"] for r in done])
    last = np.array([r["start_time"] + r["e2e"] for r in done])
    measured, model = [], []
    for i, r in enumerate(done):
        if r["stage"] != index or not row_covers(Coverage.LATENCY, r):
            continue
        prefills = int(((first > first[i] + 0.002) & (first <= last[i] + 0.002)).sum())
        measured.append(r["tpot"] * 1e3)
        model.append(8.0 + 0.5 * batch + 6.4 * prefills / (r["completion_tokens"] - 1))
    return float(np.median(measured)), float(np.median(model))


def _in_flight_on_grid(rows: list[dict], start: float, end: float, step: float = 0.005) -> float:
    """Mean number of requests in flight over [start, end), sampled every ``step`` seconds."""
    sent = np.array([r["start_time"] for r in rows if r["e2e"] is not None])
    done = sent + np.array([r["e2e"] for r in rows if r["e2e"] is not None])
    t = np.arange(start, end, step)[:, None]
    return float(((sent <= t) & (t < done)).sum(axis=1).mean())


def _sends(rows: list[dict]) -> np.ndarray:
    return np.sort(np.array([r["start_time"] for r in rows]))


def _intended(rows: list[dict]) -> np.ndarray:
    """Each request's intended send (wall clock), from its first: the schedule the run followed."""
    intended = np.sort(np.array([r["start_time"] - r["send_lag"] for r in rows]))
    return intended - intended[0]


def _assert_follows(rows: list[dict], schedule: ArrivalSchedule, until: float | None, cut: int = 2) -> None:
    """The run sent exactly the seeded schedule's requests at its offsets (up to the last ``cut``
    that the end of the run decides; ``until=None``: up to the last one sent)."""
    sent = _intended(rows)
    first = next(iter(schedule))
    expected = schedule.offsets(until=first + sent[-1] + 1e-3 if until is None else until)
    assert abs(len(sent) - len(expected)) <= cut, (len(sent), len(expected))
    n = min(len(sent), len(expected))
    np.testing.assert_allclose(sent[:n], expected[:n] - expected[0], atol=0.005)


@pytest.mark.slow
def test_poisson_rate_count_cv_and_lag(tmp_path: Path) -> None:
    with running_sim("--ttft-ms", "20", "--tpot-ms", "2") as url:
        res = run_locust(url, "--request-rate", "20", "-t", "30s", *LIGHT, results_dir=tmp_path / "r")
    expect_exit(res, 0)
    rows = res.rows
    # --seed 0 (the default) fixes the schedule: the run sent exactly its requests, on time
    _assert_follows(rows, ArrivalSchedule(poisson(20), (RateStep(20, None),), seed=0), 30.0)
    gaps = np.diff(_sends(rows))
    cv = gaps.std() / gaps.mean()
    assert 0.85 <= cv <= 1.15, cv
    s = res.summary
    assert s["p50_send_lag_ms"] < 10, s["p50_send_lag_ms"]  # a median: one stall is no failure
    assert s["achieved_request_rate"] == pytest.approx(20, rel=0.15)


@pytest.mark.slow
def test_gamma_burstiness_quarter_gives_cv2_four(tmp_path: Path) -> None:
    with running_sim("--ttft-ms", "20", "--tpot-ms", "2") as url:
        res = run_locust(
            url,
            "--request-rate",
            "20",
            "--arrival",
            "gamma",
            "--burstiness",
            "0.25",
            "-t",
            "25s",
            *LIGHT,
            results_dir=tmp_path / "r",
        )
    expect_exit(res, 0)
    _assert_follows(res.rows, ArrivalSchedule(gamma(20, 0.25), (RateStep(20, None),), seed=0), 25.0)
    gaps = np.diff(_sends(res.rows))
    cv2 = (gaps.std() / gaps.mean()) ** 2
    assert 3.0 <= cv2 <= 5.0, cv2


@pytest.mark.slow
def test_open_loop_keeps_schedule_when_server_is_slow(tmp_path: Path) -> None:
    with running_sim("--ttft-ms", "1500", "--tpot-ms", "50") as url:
        res = run_locust(
            url,
            "--request-rate",
            "6",
            "--arrival",
            "constant",
            "-t",
            "4s",
            "--max-concurrency",
            "4",
            *LIGHT,
            results_dir=tmp_path / "r",
        )
    expect_exit(res, 0)
    s, rows = res.summary, res.rows
    assert len(rows) == 24  # 6/s for 4 s, every one sent and finished
    assert s["waited_for_slot"] > 0
    assert s["p50_e2el_intended_ms"] > s["p50_e2el_ms"] + 100
    assert s["p99_ttft_intended_ms"] > s["p99_ttft_ms"]


@pytest.mark.slow
def test_unbounded_open_loop_is_not_slowed_by_the_server(tmp_path: Path) -> None:
    with running_sim("--ttft-ms", "1500", "--tpot-ms", "50") as url:
        res = run_locust(
            url,
            "--request-rate",
            "10",
            "--arrival",
            "constant",
            "-t",
            "3s",
            *LIGHT,
            results_dir=tmp_path / "r",
        )
    expect_exit(res, 0)
    s = res.summary
    assert s["completed"] == 30
    assert s["p50_send_lag_ms"] < 10, s["p50_send_lag_ms"]  # a median: one stall is no failure
    # 10/s x (1.5 s + 7 x 50 ms) = 18.5 in flight; a closed loop would have held its one user
    assert s["max_concurrent_requests"] >= 17


@pytest.mark.slow
@pytest.mark.skipif(not (TRACES / "AzureLLMInferenceTrace_conv.csv").exists(), reason="shared traces absent")
def test_trace_replay_matches_trace_times(tmp_path: Path) -> None:
    from llm_locust.load.traces import load_trace

    trace_file = TRACES / "AzureLLMInferenceTrace_conv.csv"
    with running_sim("--ttft-ms", "10", "--tpot-ms", "1", "--output-tokens", "4") as url:
        res = run_locust(
            url,
            "--trace",
            str(trace_file),
            "--time-scale",
            "10",
            "--trace-limit",
            "200",
            results_dir=tmp_path / "r",
        )
    expect_exit(res, 0)
    rows = sorted(res.rows, key=lambda r: r["start_time"])
    assert len(rows) == 200
    expected = load_trace(trace_file, time_scale=10, limit=200).offsets
    intended = np.array([r["start_time"] - r["send_lag"] for r in rows])
    assert np.allclose(intended - intended[0], np.sort(expected) - expected.min(), atol=0.005)
    lags = np.array([r["send_lag"] for r in rows])
    assert np.median(lags) < 0.01
    assert res.summary["stages"][0]["label"]
    # the lengths come from the trace: every request asked for its trace output length
    assert {r["target_input_tokens"] for r in rows} <= {
        int(e.input_tokens) for e in load_trace(trace_file, limit=200).entries
    }


@pytest.mark.slow
def test_distributed_rate_is_split_so_the_total_matches(tmp_path: Path) -> None:
    with running_sim("--ttft-ms", "20", "--tpot-ms", "2") as url:
        res = run_distributed(
            url, "--request-rate", "20", *LIGHT, results_dir=tmp_path / "r", run_time="16s", master_args=()
        )
    expect_exit(res, 0)
    rows = res.rows
    assert len({r["worker"] for r in rows}) == 2
    s = res.summary
    assert s["achieved_request_rate"] == pytest.approx(20, rel=0.15)
    # each worker sends every second arrival of the one seeded schedule (seed 0), none missing
    # and none added, up to its last (when a worker stops is the stop's business)
    whole = ArrivalSchedule(poisson(20), (RateStep(20, None),), seed=0)
    shares = [split_for_worker(whole, i, 2) for i in range(2)]
    mine = [[r for r in rows if r["worker"] == w] for w in sorted({r["worker"] for r in rows})]
    # which worker got index 0 is Locust's business: one of the two assignments must fit
    errors = []
    for order in ((0, 1), (1, 0)):
        try:
            for m, i in zip(mine, order, strict=True):
                _assert_follows(m, shares[i], None)
            break
        except AssertionError as e:
            errors.append(str(e)[:500])
    else:
        raise AssertionError(errors)
