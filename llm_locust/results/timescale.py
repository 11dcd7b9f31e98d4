"""Deployment time: the numbers of a run against a simulator that ran ``k`` times faster than the
deployment it models (``llm-locust sim --speedup k``), as the deployment would have shown them.

A closed-loop test is time-scale invariant: at ``k`` x every duration is ``k`` times shorter and
every rate ``k`` times higher, while concurrency, counts, token lengths and ratios are the same.
So the conversion is by name: a number under a key ending in ``_ms`` or ``_s`` (a latency or a
duration) is multiplied by ``k``; a rate (``*_throughput``, ``*_per_s``, ``*_rps``, ``arrival_rate``,
the level of a rate search) divided by it; an SLO term's value, threshold and interval (all but
``success``) multiplied; texts (``reason``, ``why``, ``stop``, an ``objective``) have their
latencies rewritten (:func:`deployment_time`). Absolute times (``*_time``, epoch seconds) are
dates, not durations, and stay as they are.

One scale per file (issue 22): ``capacity.json`` is all deployment time and says so in its
``time_scale`` block; a plan folder's own files (``summary.json``, ``requests.jsonl``) stay the
measured wall clock, and say so (``config.options.time_scale``), while its ``report.html`` is
drawn in deployment time with a note on the page.

Pure module: no Locust, no network.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["capacity_time_scale", "deployment_time", "in_deployment_time", "scaled"]

_RATE_KEYS = frozenset({"arrival_rate", "goodput_rps"})
_RATE_ENDINGS = ("_throughput", "_per_s", "_rps")
_TEXT_KEYS = frozenset({"reason", "why", "stop", "objective"})

_SHOWN = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?) (s|ms)\b")  # "2.80 s", "850 ms" (show_value)
_THRESHOLD = re.compile(r"([<>]=?)(\d+(?:\.\d+)?)(s|ms)\b")  # "e2e_p95<=3s" (an SLO line)


def deployment_time(message: str, k: float) -> str:
    """A line of a run at ``k`` x real time with its latencies (``2.80 s``, ``<=3s``) in
    deployment time (x ``k``); counts and percentages are left as they are."""
    if k == 1:
        return message

    def seconds(value: str, unit: str) -> float:
        return float(value) * k / (1000.0 if unit == "ms" else 1.0)

    message = _SHOWN.sub(lambda m: f"{seconds(m[1], m[2]):.2f} s", message)
    return _THRESHOLD.sub(lambda m: f"{m[1]}{seconds(m[2], m[3]):g}s", message)


def _is_rate(key: str) -> bool:
    return key in _RATE_KEYS or key.endswith(_RATE_ENDINGS)


def _is_duration(key: str) -> bool:
    return key.endswith(("_ms", "_s"))


def _number(key: str, value: Any, k: float) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    if _is_rate(key):  # before the durations: "tokens_per_s" ends in "_s" too
        return value / k
    return value * k if _is_duration(key) else value


def _term(term: Mapping[str, Any], k: float) -> dict[str, Any]:
    out = scaled(term, k)
    if term.get("name") != "success":  # a ratio has no time in it
        for key in ("value", "threshold"):
            if isinstance(out.get(key), (int, float)):
                out[key] = out[key] * k
        if out.get("interval") is not None:
            out["interval"] = [None if v is None else v * k for v in out["interval"]]
    return out


def scaled(data: Mapping[str, Any], k: float) -> dict[str, Any]:
    """``data`` (a dict of dicts, lists and numbers) in deployment time, by key (see the module)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            out[key] = scaled(value, k)
        elif key == "terms" and isinstance(value, list):
            out[key] = [_term(t, k) for t in value]
        elif isinstance(value, list):
            out[key] = [scaled(v, k) if isinstance(v, Mapping) else _number(key, v, k) for v in value]
        elif key in _TEXT_KEYS and isinstance(value, str):
            out[key] = deployment_time(value, k)
        else:
            out[key] = _number(key, value, k)
    return out


def in_deployment_time(probe: Mapping[str, Any], k: float, rate: bool = False) -> dict[str, Any]:
    """A search step's numbers in deployment time, for a simulator that ran ``k`` times faster
    (``rate``: the step of a rate search, whose level is a rate)."""
    out = scaled(probe, k) if k != 1 else dict(probe)
    if rate and k != 1 and out.get("level") is not None:
        out["level"] = out["level"] / k
        out["label"] = f"rate={out['level']:g}"
    return out


def capacity_time_scale(scales: Mapping[str, float]) -> dict[str, Any]:
    """``capacity.json``'s ``time_scale`` block: which clock its numbers are in, and why."""
    factors = {name: k for name, k in scales.items() if k != 1}
    return {
        "clock": "deployment",
        "speedups": dict(scales),
        "note": (
            "every latency, duration and rate in this file is in deployment time: a plan measured "
            "against a simulator at --speedup K (speedups) has its latencies and durations x K and "
            "its rates / K; the plan folders' summary.json and requests.jsonl keep the measured wall "
            "clock, their report.html is drawn in deployment time"
            if factors
            else "every plan was measured in real time: wall clock and deployment time are the same"
        ),
    }
