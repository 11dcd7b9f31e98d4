"""The live aggregate's sliding window: a ring of one-second slots, reused forever.

Each :class:`Slot` holds what finished within one wall-clock second: its latencies' histograms
(:class:`~llm_locust.results.histogram.LogHistogram` at the default 0.5 % layout, so a worker's
counts merge in as they are: :mod:`llm_locust.live.gap_counts`), the successful requests, their
tokens and the errors by class.

Pure module: numpy only.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from llm_locust.results.histogram import LogHistogram

__all__ = ["Slot", "Window"]


class Slot:
    """What finished within one wall-clock second (its histograms at the run's 0.5 % layout:
    ~16 KB each, 30 slots x 7 latencies ~3.3 MB, fixed)."""

    __slots__ = ("errors", "hists", "ok", "second", "tokens")

    def __init__(self, names: Iterable[str]) -> None:
        self.second = -1
        self.hists = {name: LogHistogram() for name in names}
        self.ok = 0
        self.tokens = 0
        self.errors: Counter[str] = Counter()

    def reset(self, second: int) -> None:
        self.second = second
        for hist in self.hists.values():
            hist.clear()
        self.ok = self.tokens = 0
        self.errors.clear()


class Window:
    """A ring of ``seconds`` one-second slots: the last ``seconds`` seconds, reused forever."""

    def __init__(self, seconds: int, names: Iterable[str]) -> None:
        if seconds < 2:
            raise ValueError("window must be at least 2 seconds")
        self.seconds = int(seconds)
        names = tuple(names)
        self._slots = [Slot(names) for _ in range(self.seconds)]

    def slot(self, second: int) -> Slot:
        slot = self._slots[second % self.seconds]
        if slot.second != second:
            slot.reset(second)
        return slot

    def live(self, now: float) -> list[Slot]:
        second = math.floor(now)
        return [s for s in self._slots if second - self.seconds < s.second <= second]

    def span(self, now: float, since: float | None) -> float:
        """Seconds the window covers now (shorter while the aggregate is younger)."""
        full = self.seconds - 1 + (now - math.floor(now))
        if since is not None:
            full = min(full, now - since)
        return max(full, 1.0)

    @property
    def size(self) -> int:
        return len(self._slots)
