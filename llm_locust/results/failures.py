"""What failed and how long users waited: the most frequent messages per failure class, the pauses.

``errors`` in the summary counts failures by class (``http_4xx: 9297``); that says nothing of
the cause. :class:`FailureTally` takes every row as it is written and keeps, of the failures
``errors`` counts (``Coverage.REQUESTS``, :mod:`llm_locust.results.inclusion`: not the
warm-up's, so a class's messages add up to its count there), per class, how often each
message came (``error_messages: {class: [[message, count], ...]}``, the :data:`TOP` most
frequent, messages cut at :data:`MESSAGE_CHARS`), and the pauses closed-loop users took after
failed requests (``waits``: per reason, how many pauses and their total seconds as decided; a
pause cut short by the end of the test counts in full). See :mod:`llm_locust.runtime.backoff`
for the pauses.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from llm_locust.record import NOT_FAILED, OK
from llm_locust.results.inclusion import Coverage, row_covers
from llm_locust.results.summary_model import RunSummary

__all__ = ["MESSAGE_CHARS", "TOP", "FailureTally", "failure_lines", "tally_of"]

TOP = 5
MESSAGE_CHARS = 200
#: How many messages per class the end-of-run table shows.
TABLE_MESSAGES = 2


class FailureTally:
    """Failure messages by class and pauses by reason, row by row."""

    def __init__(self) -> None:
        self.messages: dict[str, Counter[str]] = {}
        self.pauses: dict[str, list[float]] = {}  # reason -> [count, total seconds]

    def add(self, row: Mapping[str, Any]) -> None:
        outcome = row.get("outcome", OK)
        if outcome not in NOT_FAILED and row_covers(Coverage.REQUESTS, row):
            message = str(row.get("message") or "")[:MESSAGE_CHARS]
            self.messages.setdefault(outcome, Counter())[message] += 1
        reason = row.get("pause_reason")
        if reason:
            total = self.pauses.setdefault(str(reason), [0, 0.0])
            total[0] += 1
            total[1] += float(row.get("pause_s") or 0.0)

    def to_summary(self) -> dict[str, Any]:
        """``error_messages`` and ``waits`` for ``summary.json``."""
        return {
            "error_messages": {
                outcome: [[message, count] for message, count in counter.most_common(TOP)]
                for outcome, counter in sorted(self.messages.items())
            },
            "waits": {
                reason: {"pauses": int(count), "total_s": round(total, 3)}
                for reason, (count, total) in sorted(self.pauses.items())
            },
        }


def tally_of(rows: Iterable[Mapping[str, Any]]) -> FailureTally:
    """The tally of rows read back (``llm-locust summarize``)."""
    tally = FailureTally()
    for row in rows:
        tally.add(row)
    return tally


def failure_lines(summary: RunSummary, width: int = 110) -> list[str]:
    """A few lines for the end-of-run table: each class's most frequent messages, the waits."""
    lines = []
    for outcome, messages in summary.error_messages.items():
        for message, count in messages[:TABLE_MESSAGES]:
            text = f"  {outcome} x{count}: {message or '(no message)'}"
            lines.append(text if len(text) <= width else text[: width - 3] + "...")
    for reason, wait in summary.waits.items():
        lines.append(f"  users paused for {reason}: {wait.pauses} times, {wait.total_s:.1f} s in all")
    return lines
