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

from llm_locust.results.saturation import WALL_CLOCK as SATURATION_WALL_CLOCK

__all__ = [
    "capacity_time_scale",
    "deployment_row",
    "deployment_summary",
    "deployment_time",
    "in_deployment_time",
    "scaled",
    "speedup_of",
]

_RATE_KEYS = frozenset(
    {
        "arrival_rate",
        "goodput_rps",
        "request_goodput",
        "request_rate",
        "achieved_request_rate",
        "sent_rate",
        "scheduled_rate",
        "spawn_rate",
        "tokens_per_user",
    }
)
_RATE_ENDINGS = ("_throughput", "_per_s", "_rps")
_DURATION_KEYS = frozenset({"duration", "mean_e2e", "seconds", "test_seconds"})
_KEEP = frozenset({"per_s"})  # a drift slope: a latency per second of run, the same in both clocks
_TEXT_KEYS = frozenset({"reason", "why", "stop", "objective"})
_EPOCH_KEYS = frozenset({"start", "end", "t0", "plan_t0", "t"})
_EPOCH = 1e9  # seconds since 1970: a date (2001 on), never a duration
_TIMED = ("ttft", "tpot", "itl", "e2e")  # SLO terms whose values are latencies
#: Left as measured: the run's options as given, and the load generator's own health (its
#: event-loop lag and CPU are the client's wall clock, and validity is judged on them).
_AS_MEASURED = frozenset({"config", "client"})
#: A row's latencies and durations (seconds).
_ROW_SECONDS = (
    *("ttft", "tpot", "e2e", "ttft_visible", "client_stall_s", "send_lag", "intended_offset"),
    *("time_to_first_tool_call", "time_to_tool_args_complete"),
)

_SHOWN = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?) (s|ms)\b")  # "2.80 s", "850 ms" (show_value)
_THRESHOLD = re.compile(r"([<>]=?)(\d+(?:\.\d+)?)(s|ms)\b")  # "e2e_p95<=3s" (an SLO line)


#: A step's invalid reason opens the client's own health with one of these; what it says in
#: parentheses (event-loop lag) is the load generator's wall clock, never scaled (the second is
#: the reason's wording before 2026-12-02, in results written then).
WALL_CLOCKS = (SATURATION_WALL_CLOCK, "client saturated (")


def deployment_time(message: str, k: float) -> str:
    """A line of a run at ``k`` x real time with its latencies (``2.80 s``, ``<=3s``) in
    deployment time (x ``k``); counts and percentages are left as they are, and so is the load
    generator's own health (:data:`WALL_CLOCKS` up to its closing parenthesis)."""
    if k == 1:
        return message
    found = [(at, mark) for mark in WALL_CLOCKS if (at := message.find(mark)) >= 0]
    if found:
        at, mark = min(found)
        depth, end = 0, len(message)
        for i in range(at + mark.index("("), len(message)):
            depth += {"(": 1, ")": -1}.get(message[i], 0)
            if depth == 0:
                end = i + 1
                break
        return _scaled(message[:at], k) + message[at:end] + deployment_time(message[end:], k)
    return _scaled(message, k)


def _scaled(message: str, k: float) -> str:
    def seconds(value: str, unit: str) -> float:
        return float(value) * k / (1000.0 if unit == "ms" else 1.0)

    message = _SHOWN.sub(lambda m: f"{seconds(m[1], m[2]):.2f} s", message)
    return _THRESHOLD.sub(lambda m: f"{m[1]}{seconds(m[2], m[3]):g}s", message)


def _is_rate(key: str) -> bool:
    return key in _RATE_KEYS or key.endswith(_RATE_ENDINGS)


def _is_duration(key: str) -> bool:
    return key in _DURATION_KEYS or key.endswith(("_ms", "_s"))


def _number(key: str, value: object, k: float, origin: float | None) -> object:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or key in _KEEP:
        return value
    if value > _EPOCH and (key in _EPOCH_KEYS or key.endswith("_time")):
        return value if origin is None else origin + (value - origin) * k
    if _is_rate(key):  # before the durations: "tokens_per_s" ends in "_s" too
        return value / k
    return value * k if _is_duration(key) else value


def _judged(line: Mapping[str, Any], out: dict[str, Any], k: float) -> None:
    """An SLO term or objective of a latency: its value, threshold and interval x ``k``."""
    if not str(line.get("name") or "").startswith(_TIMED):  # success, server gauges: no time
        return
    for key in ("value", "measured", "threshold"):
        if isinstance(out.get(key), (int, float)) and not isinstance(out.get(key), bool):
            out[key] = out[key] * k
    if out.get("interval") is not None:
        out["interval"] = [None if v is None else v * k for v in out["interval"]]


def scaled(data: Mapping[str, Any], k: float, origin: float | None = None) -> dict[str, Any]:
    """``data`` (a dict of dicts, lists and numbers) in deployment time, by key (see the module);
    ``origin``: the run's start, from which dates are stretched (``None``: dates stay)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in _AS_MEASURED:
            out[key] = value
        elif isinstance(value, Mapping):
            out[key] = scaled(value, k, origin)
        elif isinstance(value, list):
            out[key] = [
                scaled(v, k, origin) if isinstance(v, Mapping) else _number(key, v, k, origin) for v in value
            ]
        elif key in _TEXT_KEYS and isinstance(value, str):
            out[key] = deployment_time(value, k)
        else:
            out[key] = _number(key, value, k, origin)
    if "threshold" in data and "name" in data:
        _judged(data, out, k)
    if out.get("kind") == "rate" and isinstance(out.get("target"), (int, float)):  # a rate stage
        out["target"] = out["target"] / k
        out["label"] = f"rate={out['target']:g}"
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


def speedup_of(summary: Mapping[str, Any]) -> float:
    """How many times faster than its deployment the run's target ran (``--target-speedup``)."""
    options = (summary.get("config") or {}).get("options") or {}
    value = options.get("target_speedup")
    return float(value) if isinstance(value, (int, float)) and value > 0 else 1.0


def deployment_summary(summary: Mapping[str, Any], k: float, origin: float) -> dict[str, Any]:
    """A run's summary in deployment time; its windows and drift left out (they are computed
    again from the converted records)."""
    out = scaled({key: v for key, v in summary.items() if key not in ("windows", "drift")}, k, origin)
    config = dict(out.get("config") or {})  # as run, but for when it ran
    for key in ("start_time", "stop_time", "plan_t0"):
        config[key] = _number(key, config.get(key), k, origin)
    out["config"] = config
    out["time_scale"] = {"clock": "deployment", "target_speedup": k}
    return out


def deployment_row(row: Mapping[str, Any], k: float, origin: float) -> dict[str, Any]:
    """One record in deployment time: its latencies x ``k``, its start stretched from ``origin``."""
    out = dict(row)
    for key in _ROW_SECONDS:
        if isinstance(out.get(key), (int, float)):
            out[key] = out[key] * k
    if out.get("itl"):
        out["itl"] = [g * k for g in out["itl"]]
    if isinstance(out.get("start_time"), (int, float)):
        out["start_time"] = origin + (out["start_time"] - origin) * k
    return out
