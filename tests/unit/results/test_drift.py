"""The soak verdict: slopes with intervals over the window series (results.drift)."""

from __future__ import annotations

import numpy as np
import pytest

from llm_locust.results.drift import MIN_WINDOWS, drift_verdict, fit_trend
from llm_locust.results.series_model import WindowRow
from llm_locust.results.summary_blocks import Window


def _windows(values: np.ndarray, key: str = "p95_ttft_ms", width: float = 30.0) -> list[WindowRow]:
    return [
        WindowRow.model_validate({"start_s": i * width, "end_s": (i + 1) * width, key: float(v)})
        for i, v in enumerate(values)
    ]


def test_known_slope_is_found_with_its_interval() -> None:
    rng = np.random.default_rng(3)
    t = np.arange(120) * 30.0 + 15.0
    y = 200.0 + t * (12.0 / 600.0) + rng.normal(0.0, 4.0, t.size)  # +12 ms per 10 min
    trend = fit_trend(t, y)
    assert trend is not None
    assert trend.lower < 12.0 < trend.upper and trend.slope == pytest.approx(12.0, abs=1.5)


def test_drifting_run_is_called_drifting_with_the_right_sign() -> None:
    rng = np.random.default_rng(4)
    up = drift_verdict(_windows(300 + np.arange(40) * 2.0 + rng.normal(0, 3, 40)), 30.0)
    assert up.verdict == "drifting" and (up.series["ttft_p95"].slope or 0) > 0
    assert up.text.startswith("drifting: P95 TTFT +") and "per 10 min (95 % CI" in up.text
    down = drift_verdict(_windows(300 - np.arange(40) * 2.0 + rng.normal(0, 3, 40)), 30.0)
    assert down.verdict == "drifting" and (down.series["ttft_p95"].upper or 0) < 0


def test_stable_run_is_stable_and_a_negligible_certain_trend_too() -> None:
    rng = np.random.default_rng(5)
    flat = drift_verdict(_windows(300 + rng.normal(0, 5, 60)), 30.0)
    assert flat.verdict == "stable" and flat.text.startswith("stable: P95 TTFT")
    # a trend the interval is sure of but worth 0.6 ms over half an hour: not material
    tiny = drift_verdict(_windows(300 + np.arange(60) * 0.01), 30.0)
    assert (tiny.series["ttft_p95"].lower or 0) > 0 and tiny.verdict == "stable"


def test_autocorrelated_noise_widens_the_interval() -> None:
    rng = np.random.default_rng(6)
    t = np.arange(80) * 30.0
    walk = np.cumsum(rng.normal(0, 2.0, 80))
    trend = fit_trend(t, 100 + walk)
    assert trend is not None and trend.n_eff < 40


def test_too_few_windows_and_partial_windows() -> None:
    short = drift_verdict(_windows(np.arange(MIN_WINDOWS - 1) * 100.0), 30.0)
    assert short.verdict == "insufficient" and "needs 6 full 30 s windows" in short.text
    windows = _windows(np.arange(MIN_WINDOWS) * 100.0)
    windows[-1].end_s -= 10  # the last one is partial: left out
    assert drift_verdict(windows, 30.0).verdict == "insufficient"
    # six full windows, but 5 s ones: 30 s of data says nothing about 10 minutes
    assert drift_verdict(_windows(np.arange(12) * 100.0, width=5.0), 5.0).verdict == "insufficient"
    assert fit_trend(np.arange(24) * 5.0 + 2.5, np.arange(24) * 1.0) is not None  # 24 x 5 s = 120 s


def test_noisy_short_run_is_inconclusive_not_stable() -> None:
    rng = np.random.default_rng(8)
    noisy = drift_verdict(_windows(300 + rng.normal(0, 80, 8), width=30.0), 30.0)
    series = noisy.series["ttft_p95"]
    assert series.lower is not None and series.upper is not None and series.material_slope is not None
    assert noisy.verdict == "inconclusive" and series.lower < 0 < series.upper
    assert series.upper > series.material_slope  # a material drift is not ruled out


def test_a_ramp_is_judged_per_stage_not_across_stages() -> None:
    from llm_locust.results.analysis import drift_of

    # latency steps up from stage to stage (the ramp) but is flat within each stage
    windows = [
        WindowRow(start_s=i * 30.0, end_s=(i + 1) * 30.0, p95_ttft_ms=100.0 * (1 + i // 10) + (i % 2))
        for i in range(30)
    ]
    stages = [
        (f"users={u}", Window(start=1000.0 + k * 300, end=1000.0 + (k + 1) * 300))
        for k, u in enumerate((1, 2, 4))
    ]
    drift, per_stage = drift_of(stages, windows, 1000.0, 1000.0, 30.0)
    assert drift.verdict == "stable" and [s and s.verdict for s in per_stage] == ["stable"] * 3
    trend = fit_trend([w.start_s + 15 for w in windows], [w.p95_ttft_ms or 0.0 for w in windows])
    assert trend is not None and trend.slope > 100
