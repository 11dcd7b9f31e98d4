"""What ``llm-locust capacity`` learns of a target that is the bundled simulator.

- :func:`time_scale`: how many times faster than real time it runs (``GET /version``: the
  simulator says ``llm-locust-sim`` and its ``speedup``), so a search is run with the SLO and
  durations divided by it and its numbers are shown in deployment time;
- :func:`sim_clock`: how well its engine kept its schedule (the ``llm_sim_schedule_*`` series
  of its ``/metrics``: steps, restarts after falling more than 250 ms behind, the wall time
  those lost, the latest step end). A simulator that fell behind ran its simulated GPU slow,
  so the latencies measured against it are too high and a capacity a lower bound
  (:func:`clock_text` says so in one line).

One ``urllib`` request each, to the target only; anything else (another server, no answer)
reads as "not a simulator".
"""

from __future__ import annotations

import json
import re
import urllib.request

__all__ = ["clock_text", "sim_clock", "time_scale"]


def time_scale(url: str, timeout: float = 5.0) -> float:
    """How many times faster than real time ``url`` runs: the simulator's ``speedup``, else 1."""
    try:
        with urllib.request.urlopen(f"{url}/version", timeout=timeout) as reply:
            data = json.loads(reply.read())
    except (OSError, ValueError):
        return 1.0
    if isinstance(data, dict) and data.get("version") == "llm-locust-sim":
        return float(data.get("speedup") or 1.0)
    return 1.0


_CLOCK = {
    "restarts": "llm_sim_schedule_restarts_total",
    "lost_s": "llm_sim_schedule_lost_seconds_total",
    "late_max_s": "llm_sim_schedule_late_max_seconds",
    "steps": "llm_sim_schedule_steps_total",
}


def sim_clock(url: str, timeout: float = 5.0) -> dict[str, float] | None:
    """How well a simulator at ``url`` kept its engine's schedule since it started (its
    ``llm_sim_schedule_*`` series), or ``None`` (not an engine-mode simulator, or unreachable)."""
    try:
        with urllib.request.urlopen(f"{url}/metrics", timeout=timeout) as reply:
            text = reply.read().decode("utf-8", "replace")
    except (OSError, ValueError):
        return None
    out = {}
    for key, name in _CLOCK.items():
        match = re.search(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.MULTILINE)
        if match is None:
            return None
        out[key] = float(match[1])
    return out


def clock_text(clocks: dict[str, dict[str, float] | None], capacity_shown: bool = True) -> tuple[str, bool]:
    """One line on the simulators' schedules, and whether one of them fell behind (restarted); a
    plan that shows no capacity (withheld, none shown to pass) is told no lower bound."""
    known = {url: c for url, c in clocks.items() if c is not None}
    if not known:
        return "", False
    restarts = sum(int(c["restarts"]) for c in known.values())
    late = max(c["late_max_s"] for c in known.values())
    if restarts:
        lost = sum(c["lost_s"] for c in known.values())
        times = "1 time" if restarts == 1 else f"{restarts} times"
        return (
            f"the simulator fell behind its schedule {times} ({lost:.2f} s of wall time lost): the host "
            "was overloaded, so the simulated server ran slow; the steps are still valid measurements "
            "of the client"
            + (
                ", and the capacity shown is if anything understated (a lower bound)"
                if capacity_shown
                else ""
            ),
            True,
        )
    return f"the simulator kept its schedule (latest step end {late * 1000:.0f} ms late, wall clock)", False
