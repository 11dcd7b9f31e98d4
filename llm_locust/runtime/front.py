"""The front half of a node that sends requests (a worker, the local runner).

Requests made and sent (:class:`~llm_locust.runtime.requests.Requests`: the in-flight count,
Locust's statistics) -> each finished request's row made in the event loop's idle time
(:class:`~llm_locust.runtime.fold.IdleFolder`) -> handed on: a worker's to its outbox, the
local runner's to its own sinks (:mod:`llm_locust.runtime.nodes`). The users, the open-loop
dispatcher and the ``--burst`` waves read the current test and send through a
:class:`LoadFront`; they see nothing else of the node.
"""

from __future__ import annotations

from locust.env import Environment

import time
from collections.abc import Callable

from llm_locust.client.streaming import ClientConfig
from llm_locust.config.jsontypes import JsonObject
from llm_locust.config.model import RunConfig
from llm_locust.load.replicas import Balancer
from llm_locust.load.stages import Stage
from llm_locust.load.traces import TraceEntry
from llm_locust.record import RequestRecord
from llm_locust.runtime.bursts import BurstDispatcher
from llm_locust.runtime.context import LiveState, RunContext
from llm_locust.runtime.fold import IdleFolder
from llm_locust.runtime.prepare import PREPARER, workload_info
from llm_locust.runtime.request_sources import RequestSources
from llm_locust.runtime.requests import Requests
from llm_locust.runtime.sender import Sender
from llm_locust.workload.base import RequestSource, RequestSpec
from llm_locust.workload.build import BuiltWorkload
from llm_locust.workload.tokenizer import counting_tokenizer

__all__ = ["LoadFront", "Row"]

#: A finished request's row, as ``requests.jsonl`` holds it.
Row = JsonObject


class LoadFront:
    """Send the current test's requests and hand each finished one's row to ``hand_on``."""

    def __init__(
        self,
        environment: Environment,
        node_id: str,
        hand_on: Callable[[Row], None],
        current: Callable[[], RunContext | None],
        live: LiveState,
    ) -> None:
        self._current, self._live = current, live
        self.sources = RequestSources(current)
        self.folder = IdleFolder()  # finished requests' rows, handed on in the loop's idle time
        self.requests = Requests(environment, hand_on, node_id, later=self.folder.submit)
        self.bursts: BurstDispatcher | None = None

    @property
    def context(self) -> RunContext | None:
        """The current test's context (``None`` before a start succeeded: send nothing)."""
        return self._current()

    @property
    def stopping(self) -> bool:
        """The load is stopping: send nothing new."""
        return self._live.stopping

    # -- a test ------------------------------------------------------------------------
    def workload(self, config: RunConfig, client: ClientConfig, server: JsonObject) -> BuiltWorkload:
        """A test starts: its workload, built anew (its matrix cells' too, when asked); ``client``
        counts tokens with it when the server reports no usage."""
        self.sources.reset()
        info = workload_info(config, client.host, client.model, server)
        workload = PREPARER.workloads.build(config.workload, info)
        client.tokenizer = counting_tokenizer(workload)
        return workload

    def start(self, context: RunContext) -> None:
        """A test started: ``--burst`` waves on top of its load."""
        if context.plan.burst is not None:
            live = self._live
            self.bursts = BurstDispatcher(context, self, lambda: (live.pending_t0, live.pending_workers))

    def finish(self, stop_timeout: float) -> None:
        """The test stops: the waves drain (their records go on too), then every row is handed on."""
        if self.bursts is not None:
            self.bursts.finish(stop_timeout)
            self.bursts = None
        self.folder.drain()

    # -- the users' side ---------------------------------------------------------------
    def stage_now(self) -> Stage | None:
        """The stage running now, on the plan's clock."""
        context = self._current()
        return None if context is None else context.stage_at(time.time())[0]

    def new_source(self, stage: Stage | None = None) -> RequestSource:
        return self.sources.new_source(stage)

    def trace_spec(self, entry: TraceEntry) -> RequestSpec:
        return self.sources.trace_spec(entry)

    def balancer(self) -> Balancer | None:
        """This process's choice of replica among ``--endpoints`` (``None``: the one ``--host``)."""
        context = self._current()
        assert context is not None
        return self.sources.balancer(context.config.request, context.worker_index)

    def new_record(self, spec: RequestSpec) -> RequestRecord:
        context = self._current()
        assert context is not None
        return self.requests.new_record(context, spec)

    def send(self, client: Sender, body: JsonObject, record: RequestRecord, keep_text: bool = False) -> str:
        """Send one request of the current test (see :meth:`Requests.send`)."""
        context = self._current()
        assert context is not None
        return self.requests.send(context, client, body, record, keep_text=keep_text)
