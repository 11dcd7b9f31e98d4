"""The soak verdict: does a window series trend up (or down) over the run, and how fast?

For each series of the time windows (P95 TTFT, P95 E2E, error rate, and with server
metrics the KV-cache usage and the waiting requests) we fit a least-squares line through
the window values against the window mid-times, and give the slope per 10 minutes with a
95 % confidence interval.

Window values are autocorrelated (a queue that builds up stays built up), which makes the
textbook interval too narrow. The interval therefore uses an effective sample size from the
lag-1 autocorrelation ``r`` of the residuals, ``n_eff = n (1 - r) / (1 + r)`` (for ``r > 0``,
at least 3), and Student's t with ``n_eff - 2`` degrees of freedom.

A series is **drifting** when its interval excludes zero *and* the fitted change over the
measured span is material: at least 10 % of the series' median level, and at least a floor
per series (1 ms for latencies, 0.5 percentage points of error rate or KV-cache usage, half
a waiting request), so that a statistically certain but negligible trend is still
"stable". Otherwise it is **stable**. Fewer than :data:`MIN_WINDOWS` full windows (or a
series without values) gives ``insufficient``. The run is drifting if any series is.

Pure module; slopes are per 10 minutes in the series' own unit (ms, a fraction, requests).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from llm_locust.results.confidence import LEVEL, t_quantile

__all__ = ["DRIFT_SERIES", "MIN_WINDOWS", "PER_S", "Trend", "drift_verdict", "fit_trend"]

MIN_WINDOWS = 6
#: slopes are reported per this many seconds
PER_S = 600.0
MIN_RELATIVE_CHANGE = 0.10

#: name -> (window key, label, unit, absolute floor of a material change over the run)
DRIFT_SERIES: dict[str, tuple[str, str, str, float]] = {
    "ttft_p95": ("p95_ttft_ms", "P95 TTFT", "ms", 1.0),
    "e2e_p95": ("p95_e2el_ms", "P95 E2E", "ms", 1.0),
    "error_rate": ("error_rate", "error rate", "%", 0.005),
    "kv_cache_usage": ("kv_cache_usage_mean", "KV-cache usage", "%", 0.005),
    "waiting": ("waiting_mean", "waiting requests", "", 0.5),
}


@dataclass(frozen=True)
class Trend:
    """A fitted line: slope per :data:`PER_S` seconds, its interval, and the data behind it."""

    slope: float
    lower: float
    upper: float
    n: int
    n_eff: float
    level: float  # median of the values
    span_s: float

    @property
    def change(self) -> float:
        """The fitted change over the whole span."""
        return self.slope * self.span_s / PER_S


def fit_trend(t: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> Trend | None:
    """Least-squares slope of ``y`` on ``t`` (seconds) with an autocorrelation-aware interval;
    ``None`` with fewer than :data:`MIN_WINDOWS` points or no spread in ``t``."""
    t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    keep = ~(np.isnan(t) | np.isnan(y))
    t, y = t[keep], y[keep]
    n = t.size
    if n < MIN_WINDOWS or float(np.ptp(t)) <= 0:
        return None
    tc = t - t.mean()
    sxx = float(tc @ tc)
    slope = float(tc @ (y - y.mean())) / sxx
    resid = y - y.mean() - slope * tc
    r1 = _lag1(resid)
    n_eff = n if r1 <= 0 else max(3.0, n * (1 - r1) / (1 + r1))
    dof = max(n_eff - 2.0, 1.0)
    s2 = float(resid @ resid) / max(n - 2, 1)
    se = math.sqrt(s2 / sxx) * math.sqrt(n / n_eff)
    half = t_quantile(0.5 + LEVEL / 2, dof) * se
    k = PER_S
    return Trend(
        slope * k, (slope - half) * k, (slope + half) * k, n, n_eff, float(np.median(y)), float(np.ptp(t))
    )


def _lag1(resid: np.ndarray) -> float:
    denom = float(resid @ resid)
    if denom <= 0 or resid.size < 3:
        return 0.0
    return float(resid[1:] @ resid[:-1]) / denom


def drift_verdict(windows: Sequence[dict[str, Any]], window_s: float) -> dict[str, Any]:
    """``{"verdict", "text", "series": {name: {...}}}`` over the full windows of a run."""
    full = [w for w in windows if w["end_s"] - w["start_s"] >= window_s * 0.999]
    mid = np.array([(w["start_s"] + w["end_s"]) / 2 for w in full], dtype=float)
    series: dict[str, Any] = {}
    for name, (key, label, unit, floor) in DRIFT_SERIES.items():
        if not any(w.get(key) is not None for w in full):
            continue
        y = np.array([np.nan if w.get(key) is None else w[key] for w in full], dtype=float)
        series[name] = _judge(fit_trend(mid, y), label, unit, floor)
    drifting = [s for s in series.values() if s["verdict"] == "drifting"]
    judged = [s for s in series.values() if s["verdict"] != "insufficient"]
    if drifting:
        verdict, text = "drifting", "drifting: " + "; ".join(s["text"] for s in drifting)
    elif judged:
        verdict, text = "stable", "stable: " + "; ".join(s["text"] for s in judged)
    else:
        verdict = "insufficient"
        text = f"too short to judge drift (fewer than {MIN_WINDOWS} full {window_s:g} s windows)"
    return {"verdict": verdict, "text": text, "window_s": window_s, "per_s": PER_S, "series": series}


def _judge(trend: Trend | None, label: str, unit: str, floor: float) -> dict[str, Any]:
    if trend is None:
        return {"verdict": "insufficient", "text": f"{label}: not enough windows", "slope": None}
    material = abs(trend.change) >= max(MIN_RELATIVE_CHANGE * abs(trend.level), floor)
    significant = trend.lower > 0 or trend.upper < 0
    return {
        "verdict": "drifting" if material and significant else "stable",
        "slope": trend.slope,
        "lower": trend.lower,
        "upper": trend.upper,
        "windows": trend.n,
        "effective_windows": round(trend.n_eff, 1),
        "median": trend.level,
        "change_over_run": trend.change,
        "unit": unit,
        "text": f"{label} {_fmt(trend.slope, unit)} per 10 min "
        f"(95 % CI {_fmt(trend.lower, unit)} … {_fmt(trend.upper, unit)})",
    }


def _fmt(value: float, unit: str) -> str:
    if unit == "%":
        return f"{value * 100:+.2f} pts"
    if unit == "ms":
        return f"{value:+.1f} ms"
    return f"{value:+.2f}"
