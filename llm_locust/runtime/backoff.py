"""No failure storms: a closed-loop user pauses after a request that did not reach the model.

Without a pause a user whose requests fail at once spins: 2 users sent 15,658 HTTP 500s in 4 s,
an unreachable host got 14,577 connect attempts in 6 s. A real client waits, so after each
request a closed-loop user's :class:`Pacer` decides a pause, written on the request's row
(``pause_s``, ``pause_reason``) before it is delivered, so the summary can say how long users
waited (:mod:`llm_locust.results.failures`):

- **Retry-After.** A 429 or 503 that carries ``Retry-After`` (seconds or a date): that long,
  at most :data:`RETRY_AFTER_CAP_S` (``pause_reason: retry_after``).
- **Backoff.** A request refused before any token (``connect`` failures; a redirect, 3xx, which
  is not followed; HTTP 401, 403, 404; HTTP 5xx; a 429 without ``Retry-After``; a reply that
  is not a readable event stream before any token, ``bad_payload`` with no token: a 200 with
  an HTML login page or a JSON body): :data:`BACKOFF_BASE_S` after the first, doubling
  with each consecutive one, at most :data:`BACKOFF_CAP_S` (``pause_reason: backoff``), as
  OpenAI's own client retries 429 and 5xx. A success, or a failure of a request the server did
  take (a timeout, a broken or empty stream), ends the streak: those are measurements.

The open loop keeps its arrival schedule (the send lag records any delay); only closed-loop
users pause. A pause ends early when the test stops.

Pure module: no Locust, no gevent (the user sleeps).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm_locust.config.jsontypes import JsonObject
from llm_locust.protocol.retry import RETRY_STATUSES
from llm_locust.record import Outcome
from llm_locust.runtime.sender import Sender

if TYPE_CHECKING:
    from llm_locust.client.streaming import ClientConfig
    from llm_locust.record import RequestRecord

__all__ = ["BACKOFF_BASE_S", "BACKOFF_CAP_S", "RETRY_AFTER_CAP_S", "PacedClient", "Pacer"]

BACKOFF_BASE_S = 0.1
BACKOFF_CAP_S = 5.0
RETRY_AFTER_CAP_S = 60.0
#: Statuses of a request the model never saw (with ``connect`` failures and every 5xx).
NOT_REACHED = frozenset({401, 403, 404})
RETRY_AFTER = "retry_after"  # the record's ``extra`` key the client fills (seconds)


class Pacer:
    """One user's pause after each request (see the module docstring)."""

    def __init__(self) -> None:
        self.streak = 0  # consecutive requests that did not reach the model

    def pause_after(
        self, outcome: str, status: int | None, retry_after: float | None, tokens: int = 0
    ) -> tuple[float, str | None]:
        """``(seconds, reason)`` to wait before the next request (``tokens``: the content chunks
        it got); ``(0.0, None)``: none."""
        if status in RETRY_STATUSES and retry_after is not None:
            self.streak = 0
            return min(max(retry_after, 0.0), RETRY_AFTER_CAP_S), "retry_after"
        code = status or 0
        if (
            outcome == Outcome.CONNECT
            or status in NOT_REACHED
            or status in RETRY_STATUSES
            or code >= 500
            or 300 <= code < 400
            or (outcome == Outcome.BAD_PAYLOAD and not tokens)
        ):
            self.streak += 1
            return min(BACKOFF_BASE_S * 2 ** (self.streak - 1), BACKOFF_CAP_S), "backoff"
        self.streak = 0
        return 0.0, None


class PacedClient:
    """A streaming client whose records carry the pause its :class:`Pacer` decided."""

    def __init__(self, client: Sender) -> None:
        self.client = client
        self.pacer = Pacer()

    @property
    def config(self) -> ClientConfig:
        return self.client.config

    def send(self, body: JsonObject, record: RequestRecord, keep_text: bool = False) -> str:
        text = self.client.send(body, record, keep_text=keep_text)
        seconds, reason = self.pacer.pause_after(
            record.outcome, record.status, record.extra.get(RETRY_AFTER), len(record.chunk_times)
        )
        if reason is not None:
            record.extra["pause_s"] = round(seconds, 3)
            record.extra["pause_reason"] = reason
        return text

    def close(self) -> None:
        self.client.close()
