"""Whether the master keeps up with its workers' records, and how far behind it is.

Workers ship their records every second (:mod:`llm_locust.runtime.distributed`), each batch
stamped with the worker's wall clock when it was sent (``sent_at``). The master applies
batches one at a time, as Locust's channel delivers them; a master that takes longer to
write and aggregate a second of records than a second falls behind, and the batches wait in
ZeroMQ's queue, which nothing bounds (at 64 workers x 50 req/s of 1,024-token records it
reached 5.6 GB, benchmarks/README.md). That queue cannot be read, so the backlog is measured
where it shows:

- *lag*: how long after its worker sent it a batch is applied (the age of the oldest batch
  not yet applied, at the moment it is). Each worker's smallest lag of the test is taken as
  its baseline (network time plus any clock offset between the hosts) and subtracted, so a
  worker whose clock runs a few seconds apart does not look behind;
- *rows behind*: per worker, the rows it ships per second (over its last
  :data:`RATE_SPAN_S` seconds of batches) times its lag: the rows sent and not yet applied,
  an estimate (the queue itself is not visible).

The master *falls behind* when the lag stays at or above :data:`BEHIND_S` for
:data:`BEHIND_FOR_S` seconds without shrinking; then :meth:`IngestWatch.observe` returns
the warning once per test ("master is N rows behind: use fewer workers per master or
shorter records"). :meth:`IngestWatch.block` is the summary's ``master`` block.

Pure module: no Locust, no gevent, no network.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from llm_locust.config.jsontypes import JsonObject

__all__ = ["BEHIND_FOR_S", "BEHIND_S", "RATE_SPAN_S", "IngestWatch", "behind_message"]

#: A lag at least this long (seconds) counts as behind: one ship interval. Workers ship once a
#: second, so a master busy for a fraction f of each second has its last batch waiting ~f s
#: (32 workers x 50 req/s at 58 % of a core: lags up to 0.53 s, benchmarks/README.md).
BEHIND_S = 1.0
#: Behind for this long (master seconds) without the lag shrinking: the master cannot keep up.
#: Short, because Locust's master marks a worker missing once its heartbeats (queued behind
#: the records) are about 4 s late, and stops the test when the last one is.
BEHIND_FOR_S = 3.0
#: Seconds of a worker's most recent batches its shipping rate is taken over.
RATE_SPAN_S = 10.0


def behind_message(rows: float, lag_s: float, for_s: float) -> str:
    return (
        f"master is {rows:,.0f} rows behind (workers' batches applied {lag_s:.1f} s after they were "
        f"sent, growing for {for_s:.0f} s): use fewer workers per master or shorter records"
    )


@dataclass
class _Worker:
    baseline: float | None = None  # the smallest raw lag seen (network + clock offset)
    lag: float = 0.0  # the last batch's lag over the baseline
    batches: deque[tuple[float, int]] = field(default_factory=deque)  # (sent_at, rows)

    def rate(self) -> float:
        """Rows per second this worker ships (its last RATE_SPAN_S seconds of batches)."""
        if len(self.batches) < 2:
            return 0.0
        span = self.batches[-1][0] - self.batches[0][0]
        rows = sum(n for _, n in list(self.batches)[1:])  # the rows sent over ``span``
        return rows / span if span > 0 else 0.0


class IngestWatch:
    """The master's ingest lag and backlog over one test (see the module docstring)."""

    def __init__(self, behind_s: float = BEHIND_S, behind_for_s: float = BEHIND_FOR_S) -> None:
        self.behind_s = behind_s
        self.behind_for_s = behind_for_s
        self.reset()

    def reset(self) -> None:
        """A new test (baselines stay: they belong to the workers' hosts)."""
        baselines = {w: s.baseline for w, s in getattr(self, "_workers", {}).items()}
        self._workers: dict[str, _Worker] = {w: _Worker(baseline=b) for w, b in baselines.items()}
        self.batches = 0
        self.rows = 0
        self.lag_max_s = 0.0
        self.rows_behind_max = 0.0
        self.behind_total_s = 0.0
        self._behind_since: float | None = None  # master clock: when the lag reached behind_s
        self._lag_then = 0.0  # the lag at that moment
        self._last_now: float | None = None
        self.warned: str | None = None

    def observe(self, worker: str, sent_at: float | None, rows: int, now: float) -> str | None:
        """A batch of ``rows`` sent at ``sent_at`` (the worker's clock) applied at ``now``;
        returns the warning the first time the master is found behind in this test."""
        self.batches += 1
        self.rows += rows
        if sent_at is None:
            return None
        state = self._workers.setdefault(worker, _Worker())
        raw = now - sent_at
        if state.baseline is None or raw < state.baseline:
            state.baseline = raw
        state.lag = raw - state.baseline
        state.batches.append((sent_at, rows))
        while state.batches and state.batches[0][0] < sent_at - RATE_SPAN_S:
            state.batches.popleft()
        lag, behind = self.lag_s, self.rows_behind
        self.lag_max_s = max(self.lag_max_s, lag)
        self.rows_behind_max = max(self.rows_behind_max, behind)
        return self._judge(lag, behind, now)

    def _judge(self, lag: float, behind: float, now: float) -> str | None:
        if self._behind_since is not None and self._last_now is not None:
            self.behind_total_s += now - self._last_now
        self._last_now = now
        if lag < self.behind_s:
            self._behind_since = None
            return None
        if self._behind_since is None:
            self._behind_since, self._lag_then = now, lag
            return None
        held = now - self._behind_since
        if self.warned is None and held >= self.behind_for_s and lag >= self._lag_then:
            self.warned = behind_message(behind, lag, held)
            return self.warned
        return None

    @property
    def lag_s(self) -> float:
        """The largest lag of the workers' latest batches (seconds over their baselines)."""
        return max((s.lag for s in self._workers.values()), default=0.0)

    @property
    def rows_behind(self) -> float:
        """Rows sent by the workers and not yet applied (estimate: rate x lag, summed)."""
        return sum(s.rate() * s.lag for s in self._workers.values())

    def block(self) -> JsonObject:
        """The summary's ``master`` block."""
        return {
            "batches": self.batches,
            "rows": self.rows,
            "lag_max_s": round(self.lag_max_s, 3),
            "rows_behind_max": round(self.rows_behind_max),
            "behind_s": round(self.behind_total_s, 1),
            "fell_behind": self.warned is not None,
            "warning": self.warned,
            "note": (
                f"lag: seconds from a worker sending a batch of records to the master applying it "
                f"(over the worker's smallest lag); behind: lag >= {self.behind_s:g} s; rows behind: "
                f"each worker's rows per second x its lag (an estimate: the queue is not visible)"
            ),
        }
