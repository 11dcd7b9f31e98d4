"""The request path of a process: records made, requests sent and counted, rows handed on.

:class:`Requests` owns the count of requests in flight (the one place it changes: around
each send, whether a user or the open-loop dispatcher sends) and turns each finished
request into Locust statistics and a row for the record bus:

- Locust gets one request entry per LLM request, ``LLM E2E`` (so the "Aggregated" row and
  the charts mean requests and their latency), and two derived rows, ``LLM TTFT`` and
  ``LLM TPOT``, logged into their own entries without touching the aggregate. An
  ``incomplete`` request (in flight when the load stopped) is neither a success nor a failure
  and is not logged.
- The row gets its stage and warm-up flag from the run context, then goes to ``deliver``:
  the bus (local runner) or the outbox to the master (worker). Making the row and handing it
  on is passed to ``later`` (the runtime's :class:`~llm_locust.runtime.fold.IdleFolder`: the
  event loop's idle time; by default at once); a request counts as in flight until its row
  has been handed on, so nothing that waits for a step's requests to finish misses a row.
"""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Callable
from typing import Any

from llm_locust.config.jsontypes import JsonObject
from llm_locust.record import CANCELLED, INCOMPLETE, RequestRecord
from llm_locust.runtime.context import RunContext
from llm_locust.runtime.sender import Sender
from llm_locust.workload.base import RequestSpec

__all__ = ["REQUEST_TYPE", "LLMRequestError", "Requests"]

REQUEST_TYPE = "LLM"


class LLMRequestError(Exception):
    """The exception Locust sees for a failed request: ``<class>: <message>``."""


class Requests:
    """Records, sends and in-flight accounting of one process (see the module docstring)."""

    def __init__(
        self,
        environment: Any,  # Locust's Environment (its stats' log() is typed int; ours are float ms)
        deliver: Callable[[JsonObject], None],
        node: str,
        later: Callable[[Callable[[], None]], None] = lambda item: item(),
    ) -> None:
        self.environment = environment
        self.deliver = deliver
        self.later = later
        self.node = node  # the record ids' prefix: the worker's client id, or Role.LOCAL's value
        self.in_flight = 0
        self.sent_at: dict[int, float] = {}  # requests in flight: when each was sent (wall clock)
        self._ids = itertools.count()

    def new_record(self, context: RunContext, spec: RequestSpec) -> RequestRecord:
        assert context.client is not None
        return RequestRecord(
            request_id=f"{self.node}-{next(self._ids)}",
            wall_start=0.0,
            t_sent=0.0,
            endpoint=context.client.endpoint,
            target_input_tokens=spec.target_input_tokens,
            target_output_tokens=spec.target_output_tokens,
            session_id=spec.session_id,
            turn=spec.turn,
            extra=dict(spec.info) if spec.info else {},
        )

    def send(
        self,
        context: RunContext,
        client: Sender,
        body: JsonObject,
        record: RequestRecord,
        keep_text: bool = False,
    ) -> str:
        """Send one request and hand its record on, also when the user is killed mid-request
        (the client marks it ``incomplete``; the kill then goes on unwinding the user)."""
        self.in_flight += 1
        self.sent_at[id(record)] = time.time()
        try:
            text = client.send(body, record, keep_text=keep_text)
        except BaseException:
            if record.outcome == INCOMPLETE:
                self.complete(context, record)
            else:
                self._release(record)
            raise
        self.complete(context, record)
        return text

    def _release(self, record: RequestRecord) -> None:
        self.in_flight -= 1
        self.sent_at.pop(id(record), None)

    def oldest(self) -> float | None:
        """When the longest-running request in flight was sent (``None``: none)."""
        return min(self.sent_at.values(), default=None)

    def in_flight_before(self, when: float) -> int:
        return sum(1 for sent in self.sent_at.values() if sent < when)

    def complete(self, context: RunContext, record: RequestRecord) -> None:
        """A request finished: Locust stats first, then its row on to the results."""
        if record.outcome not in (INCOMPLETE, CANCELLED):  # neither a success nor a failure
            self._log_stats(record)
        if context.staged:  # an open-loop arrival belongs to the stage that meant it, however late it went
            if record.schedule_offset is not None:
                stage, record.warmup = context.stage_after(record.schedule_offset)
            else:
                stage, record.warmup = context.stage_at(record.wall_start)
            record.stage = None if stage is None else stage.index
        self.later(functools.partial(self._hand_on, record))

    def _hand_on(self, record: RequestRecord) -> None:
        try:
            self.deliver(record.to_json())
        finally:
            self._release(record)

    def _log_stats(self, record: RequestRecord) -> None:
        environment = self.environment
        e2e_ms = (record.e2e or 0.0) * 1000.0
        if not record.ok:
            environment.events.request.fire(
                request_type=REQUEST_TYPE,
                name="E2E",
                response_time=e2e_ms,
                response_length=0,
                exception=LLMRequestError(f"{record.outcome}: {record.message}"),
                context={},
            )
            return
        environment.events.request.fire(
            request_type=REQUEST_TYPE,
            name="E2E",
            response_time=e2e_ms,
            response_length=record.completion_tokens or 0,
            exception=None,
            context={},
        )
        stats = environment.stats
        if record.ttft is not None:  # a tool-call-only answer has no content token
            stats.get("TTFT", REQUEST_TYPE).log(record.ttft * 1000.0, 0)
        if record.tpot is not None:
            stats.get("TPOT", REQUEST_TYPE).log(record.tpot * 1000.0, 0)
