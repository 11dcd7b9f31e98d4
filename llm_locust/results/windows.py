"""A run cut into fixed time windows: what happened in each ``--window`` seconds.

A whole-run P95 hides a server that was fast for 50 minutes and slow for the last 10; a
soak needs the run as a series. Per window (``[start, start + w)`` from the start of the
test) the summary's ``windows`` list gives:

- ``requests``: requests that *ended* in the window, by outcome (``ok`` or a failure
  class), ``completed``, ``failed`` and ``error_rate`` (failed / ended; ``incomplete`` ones,
  cut by the stop, count in neither);
- ``p50/p95/p99`` of TTFT, TPOT and E2E (ms) over the successful requests that ended in it,
  but those the load generator stalled inside (``Coverage.SERIES_LATENCY``,
  :mod:`llm_locust.results.inclusion`; exact, numpy linear interpolation; ``None`` when none did);
- ``output_tokens_per_s``: tokens that *arrived* in the window (each content chunk's own
  time, see :mod:`llm_locust.results.timeline`) per second;
- ``in_flight``: the time-weighted mean number of requests in flight;
- with ``--server-metrics``: the server's KV-cache usage, waiting and running requests
  (mean and max over the scrapes in the window) and preemptions (counter increase).

``--window auto`` (the default) is 30 s for runs of 10 minutes or more; shorter runs get
the largest of 1, 2, 5, 10, 15 s that still cuts them into at least 20 windows. The last
window may be partial (``end_s`` says where the run stopped). Pure module.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence

import numpy as np

from llm_locust.config.jsontypes import JsonObject, JsonValue
from llm_locust.load.stages import parse_duration
from llm_locust.record import NOT_FAILED, OK
from llm_locust.results.inclusion import Coverage
from llm_locust.results.series_model import WindowRow
from llm_locust.results.server_series import GAUGES, Point, counter_increase
from llm_locust.results.timeline import Timeline, binned_overlap, binned_sum

__all__ = ["AUTO_WINDOW_RULE", "MAX_WINDOWS", "auto_window", "parse_window", "window_series", "windows_csv"]

MAX_WINDOWS = 20_000
_NICE_S = (1.0, 2.0, 5.0, 10.0, 15.0, 30.0)
_LONG_RUN_S, _LONG_WINDOW_S, _MIN_WINDOWS = 600.0, 30.0, 20
#: :func:`auto_window` in words (``llm-locust report -h``).
AUTO_WINDOW_RULE = (
    f"{_LONG_WINDOW_S:g}s for runs of {_LONG_RUN_S / 60:g} minutes or more, else the largest of "
    f"{', '.join(f'{w:g}' for w in _NICE_S if w < _LONG_WINDOW_S)}s that gives at least "
    f"{_MIN_WINDOWS} windows"
)
_LATENCIES = (("ttft", "ttft"), ("tpot", "tpot"), ("e2el", "e2e"))
_QUANTILES = (50, 95, 99)


def parse_window(text: str | float | None) -> float | None:
    """``--window``: ``auto`` (or empty) -> ``None``; ``30s``, ``1m``, ``90`` -> seconds (> 0)."""
    if text is None or (isinstance(text, str) and text.strip().lower() in ("", "auto")):
        return None
    value = parse_duration(text, "--window")
    if value <= 0:
        raise ValueError(f"--window: must be > 0 (e.g. 30s), got {text!r}")
    return value


def auto_window(duration_s: float) -> float:
    """30 s from 10 minutes on; else the largest nice width giving >= 20 windows."""
    if duration_s >= _LONG_RUN_S:
        return _LONG_WINDOW_S
    fits = [w for w in _NICE_S if duration_s / w >= _MIN_WINDOWS]
    return fits[-1] if fits else _NICE_S[0]


def window_series(
    timeline: Timeline,
    t0: float,
    t_end: float,
    window_s: float | None = None,
    server: Sequence[dict[str, float]] | None = None,
) -> list[WindowRow]:
    """The windows of ``[t0, t_end]`` (wall clock); ``server`` is the per-scrape series of
    :func:`llm_locust.results.server_series.gauge_series` (``None``: no server metrics)."""
    span = max(t_end - t0, 0.0)
    width = window_s or auto_window(span)
    count = max(1, math.ceil(span / width - 1e-9))
    if count > MAX_WINDOWS:
        raise ValueError(f"--window: {width:g} s cuts this run into {count} windows (at most {MAX_WINDOWS})")
    edges = t0 + width * np.arange(count + 1, dtype=float)
    which = np.searchsorted(edges, timeline.end, side="right") - 1
    times, weights = timeline.chunk_times()
    tokens = binned_sum(times, weights, edges)
    busy = binned_overlap(timeline.start, timeline.end, edges)
    out = []
    for i in range(count):
        lo, hi = float(edges[i]), float(edges[i + 1])
        length = max(min(hi, t_end) - lo, 1e-9)
        entry = _requests_in(timeline, which == i)
        entry.update(
            {
                "index": i,
                "start_s": round(lo - t0, 6),
                "end_s": round(min(hi, t_end) - t0, 6),
                "output_tokens_per_s": float(tokens[i]) / length,
                "in_flight": float(busy[i]) / length,
            }
        )
        if server is not None:
            entry.update(_server_in(server, lo, hi))
        out.append(WindowRow.model_validate(entry))
    return out


def _requests_in(timeline: Timeline, mask: np.ndarray) -> JsonObject:
    outcomes = timeline.outcome[mask]
    names, counts = np.unique(outcomes.astype(str), return_counts=True) if outcomes.size else ((), ())
    by_outcome = {str(k): int(v) for k, v in zip(names, counts, strict=True)}
    completed = by_outcome.get(OK, 0)
    failed = sum(v for k, v in by_outcome.items() if k not in NOT_FAILED)
    entry: JsonObject = {
        "requests": dict[str, JsonValue](by_outcome),
        "completed": completed,
        "failed": failed,
        "error_rate": failed / (completed + failed) if completed + failed else None,
    }
    ok = timeline.covered(Coverage.SERIES_LATENCY) & mask
    for name, column in _LATENCIES:
        values = getattr(timeline, column)[ok]
        values = values[~np.isnan(values)] * 1000.0
        stats = np.percentile(values, _QUANTILES) if values.size else [None] * len(_QUANTILES)
        for q, v in zip(_QUANTILES, stats, strict=True):
            entry[f"p{q}_{name}_ms"] = None if v is None else float(v)
    return entry


def _server_in(server: Sequence[Point], lo: float, hi: float) -> JsonObject:
    inside = [s for s in server if lo <= s["t"] < hi]
    out: JsonObject = {}
    for gauge in GAUGES:
        values = [s[gauge] for s in inside if s.get(gauge) is not None]
        out[f"{gauge}_mean"] = float(np.mean(values)) if values else None
        out[f"{gauge}_max"] = float(np.max(values)) if values else None
    out["preemptions"] = counter_increase(server, "preemptions", lo, hi - 1e-9)
    return out


def windows_csv(windows: Sequence[WindowRow]) -> str:
    """The windows as CSV: one row per window, one ``requests_<outcome>`` column per outcome."""
    outcomes = sorted({k for w in windows for k in w.requests})
    rows = [w.to_json() for w in windows]
    scalar = [k for k in (rows[0] if rows else {}) if k != "requests"]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*scalar, *(f"requests_{k}" for k in outcomes)])
    for w, row in zip(windows, rows, strict=True):
        cells = ["" if row.get(k) is None else row[k] for k in scalar]
        writer.writerow([*cells, *(w.requests.get(k, 0) for k in outcomes)])
    return buffer.getvalue()
