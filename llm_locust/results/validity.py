"""Did a stage run the load it was planned for? A stage that did not is ``invalid``.

A capacity answer is only as true as its stages: "the system holds 48 users" is wrong if
the stage labelled 48 ran 31. An invalid stage keeps its numbers (for diagnosis) but gets
``"verdict": "invalid"``, is never a pass, and is never named by the capacity sentence.

The rules (constants below):

- ``users`` stage (closed loop, ramps and matrix cells): valid when the user count reached
  the target and stayed there for at least ``MIN_HELD_FRACTION`` of the stage's duration
  (a stage cut short by an interrupt or a slow explicit ``-r`` does not qualify).
- ``rate`` stage (open loop, rate ramps, matrix cells, trace replay): valid when it ran for
  at least ``MIN_HELD_FRACTION`` of its duration, the requests actually sent in its measured
  window are at least ``MIN_RATE_FRACTION`` of those scheduled in it (the same Poisson draw
  on both sides, so no sampling noise), and the send lag p99 is at most ``MAX_SEND_LAG_MS``
  (a lagging generator, or arrivals held by ``--max-concurrency``, fail this first).

Pure module: no Locust, no network. Seconds, except the lag threshold in ms.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from llm_locust.load.stages import Stage
from llm_locust.results.columns import Columns
from llm_locust.results.shown import fixed
from llm_locust.results.stats import percentile

__all__ = [
    "MAX_SEND_LAG_MS",
    "MIN_HELD_FRACTION",
    "MIN_RATE_FRACTION",
    "NO_LEVELS",
    "rate_validity",
    "users_validity",
]

MIN_HELD_FRACTION = 0.5
MIN_RATE_FRACTION = 0.95
#: A send lag p99 above this means the generator could not keep its schedule.
MAX_SEND_LAG_MS = 50.0


#: Why a ``users`` stage cannot be judged when a summary is rebuilt without its level samples.
NO_LEVELS = "no samples of its user count (the summary was rebuilt after the run was lost mid-stage)"


def users_validity(stage: Stage, levels: Mapping[str, Any] | None) -> str:
    """``""`` if a ``users`` stage ran at its level, else why not ("reached 31 of 48 users"): in
    counts and shares only, true in any time scale (a sped-up simulator's deployment time too).

    ``levels``: the stage's facts (:meth:`~llm_locust.load.levels.LevelTracker.facts`);
    ``None`` when they are unknown (a summary rebuilt from ``requests.jsonl``).
    """
    if levels is None:
        return NO_LEVELS
    target = int(stage.target)
    if levels.get("target_reached_s") is None:
        return f"reached {levels.get('peak_users', 0)} of {target} users"
    held = levels.get("time_at_target_s") or 0.0
    if held < MIN_HELD_FRACTION * stage.duration_s:
        share = 100 * held / stage.duration_s
        return f"held {target} users for {share:.0f} % of the stage (needs {100 * MIN_HELD_FRACTION:.0f} %)"
    return ""


def rate_validity(
    rows: Columns | Iterable[Mapping[str, Any]], start: float, end: float, stage: Stage, ran_s: float
) -> dict[str, Any]:
    """Facts and validity of a ``rate`` stage over its measured window ``[start, end)``;
    ``ran_s``: how long the stage ran (less than planned when the run was stopped).

    ``rows`` are every record of the run (a request scheduled in this window may have been
    sent in the next one). Returns ``sent_rate`` and ``scheduled_rate`` (req/s in the
    window) and ``invalid_reason`` (``""`` when valid; in counts and shares, true in any time
    scale, but for the send lag: the load generator's own wall clock).
    """
    cols = rows if isinstance(rows, Columns) else Columns.from_rows(rows)
    span = max(end - start, 1e-9)
    lagged = ~np.isnan(cols.lag)
    sent = lagged & (cols.start >= start) & (cols.start < end)
    intended = cols.start - np.nan_to_num(cols.lag)
    n_sent = int(sent.sum())
    scheduled = int((lagged & (intended >= start) & (intended < end)).sum())
    lag_p99 = percentile(cols.lag[sent] * 1000.0, 99)
    waited = int(cols.waited[sent].sum())
    out: dict[str, Any] = {"sent_rate": n_sent / span, "scheduled_rate": scheduled / span}
    out["invalid_reason"] = ""
    if ran_s < MIN_HELD_FRACTION * stage.duration_s:
        out["invalid_reason"] = f"ran {100 * ran_s / stage.duration_s:.0f} % of its planned time"
    elif not n_sent:
        out["invalid_reason"] = f"sent none of the {scheduled} requests scheduled"
    elif n_sent < MIN_RATE_FRACTION * scheduled:
        out["invalid_reason"] = (
            f"sent {100 * n_sent / scheduled:.0f} % of the requests scheduled ({n_sent} of {scheduled})"
        )
    elif lag_p99 is not None and lag_p99 > MAX_SEND_LAG_MS:
        why = f"{waited} arrivals waited for --max-concurrency" if waited else "the load generator lagged"
        out["invalid_reason"] = (
            f"send lag p99 {fixed(lag_p99, 0, MAX_SEND_LAG_MS)} ms > {MAX_SEND_LAG_MS:g} ms ({why})"
        )
    return out
