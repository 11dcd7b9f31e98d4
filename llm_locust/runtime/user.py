"""The Locust user: take a request from the workload, stream it, hand the record on.

Closed loop: each user sends its next request as soon as the last one finished, or after a
think time (``--think-time``, drawn from its distribution before every request but the user's
first, from a seeded stream of the user's own). An agent (``--agent-steps``) waits for its tool
(``--tool-latency``) between the turns of a session and thinks only between sessions. A user
stopped mid-request (end of the run after the drain, a step down, an interrupt) still
hands its record on, marked ``incomplete`` (see :meth:`Requests.send
<llm_locust.runtime.requests.Requests.send>`). In an open-loop run the single user of each
worker becomes the dispatcher of :mod:`llm_locust.runtime.openloop`. Every number comes
from :class:`~llm_locust.client.streaming.StreamingClient`'s own clock; Locust's request timer is not used.
"""

from __future__ import annotations

from locust import FastHttpUser, constant, task
from locust.exception import StopUser
from locust.user.users import LOCUST_STATE_STOPPING

import itertools
import time

import gevent
import numpy as np

from llm_locust.client.streaming import StreamingClient, build_body
from llm_locust.config.think import NO_THINK
from llm_locust.load.traces import TraceEntry
from llm_locust.record import RequestRecord
from llm_locust.runtime import openloop
from llm_locust.runtime.backoff import PacedClient
from llm_locust.runtime.front import LoadFront
from llm_locust.runtime.hooks import install
from llm_locust.runtime.node import front_of
from llm_locust.runtime.quota import quota_of
from llm_locust.runtime.replicas import ReplicaClients, make_client
from llm_locust.workload.base import RequestSource, RequestSpec

__all__ = ["LLMUser"]

PAUSE_SLICE_S = 0.2  # a pause checks this often whether the test is stopping
#: Successful requests one task sends back to back at most before Locust's task loop runs.
BACK_TO_BACK = 32

install()
_USERS = itertools.count()  # this process's users, for their think-time streams


class LLMUser(FastHttpUser):
    """Sends streaming OpenAI-compatible requests; subclass it in a locustfile."""

    abstract = True
    wait_time = constant(0)
    _think = NO_THINK  # --think-time (on_start sets the run's)
    _sent_one = False
    _quota = None  # --num-requests' tickets (on_start sets the run's)

    def on_start(self) -> None:
        self.llm_run: LoadFront = front_of(self.environment)
        self._sources: dict[int | None, RequestSource] = {}
        self.llm_client: StreamingClient | ReplicaClients | None = None
        self.paced: PacedClient | None = None
        context = self.llm_run.context  # None: the test did not start (the run said why)
        if context is None or context.client is None:
            return  # generate() stops the user
        config = context.config
        self.llm_client = make_client(context.client, self.llm_run.balancer(), config.request.balance_scope)
        self.paced = PacedClient(self.llm_client)
        self._think = config.workload.think
        self._think_rng = np.random.default_rng([config.workload.seed, 7, context.worker_index, next(_USERS)])
        self._sent_one = False
        self._quota = quota_of(self.environment)

    def ticket(self) -> bool:
        """Whether this process may send one more request (``--num-requests``: its share)."""
        return self._quota is None or self._quota.take()

    def on_stop(self) -> None:
        client = getattr(self, "llm_client", None)
        if client is not None:
            client.close()

    @property
    def stopping(self) -> bool:
        """The test is stopping, or Locust is stopping this user (a step down)."""
        return self.llm_run.stopping or self._state == LOCUST_STATE_STOPPING

    def source(self) -> RequestSource:
        """This user's request stream for the current stage (matrix cells have their own)."""
        stage = self.llm_run.stage_now()
        key = None if stage is None or not stage.overrides() else stage.index
        if key not in self._sources:
            self._sources[key] = self.llm_run.new_source(stage)
        return self._sources[key]

    def next_spec(self, entry: TraceEntry | None = None) -> RequestSpec:
        """The next request; ``entry`` is a trace row whose lengths it must have."""
        if entry is not None:
            return self.llm_run.trace_spec(entry)
        return self.source().next_request()

    @task
    def generate(self) -> None:
        run = self.llm_run
        context = run.context
        if self.llm_client is None or context is None:
            raise StopUser()
        if context.plan.open_loop:
            openloop.dispatch(context, run, self)
            while not self.stopping:  # the schedule is done (or Locust stops this user): idle until then
                gevent.sleep(0.2)
            return
        # Closed loop: the next request goes out in this task as soon as the last one is handed
        # on. Back in Locust's task loop, its wait of 0 s is a gevent.sleep(0): one whole event
        # loop iteration with the user out of flight (benchmarks/README.md, "Every user in
        # flight"). A failure goes back to Locust as before; at most BACK_TO_BACK in one task.
        back_to_back = BACK_TO_BACK if type(self).wait_time is LLMUser.wait_time else 1
        for _ in range(back_to_back):
            record = self._request(run)
            if record is None or not record.ok or self.stopping:
                return

    def _request(self, run: LoadFront) -> RequestRecord | None:
        """One request of a closed-loop user (after its think time); ``None``: none was sent."""
        if self.stopping:  # nothing new once the stop began; Locust ends the user after the task
            gevent.sleep(PAUSE_SLICE_S)  # (without this a refused request's skipped pause spins)
            return None
        source = self.source()
        mid_session = getattr(source, "mid_session", False)  # an agent waits for its tool instead
        if self._sent_one and not self._think.none and not mid_session:  # think before each but the first
            self.pause(self._think.draw(self._think_rng))
            if self.stopping:  # no new request after the pause
                return None
        if not self.ticket():  # --num-requests: this process sent its share; idle until the stop
            gevent.sleep(PAUSE_SLICE_S)
            return None
        self._sent_one = True
        spec = source.next_request()
        record = run.new_record(spec)
        paced = self.paced
        assert paced is not None  # set by on_start with the client (generate stops a user without)
        body = build_body(paced.config, spec)
        text = run.send(paced, body, record, keep_text=getattr(source, "keeps_history", False))
        source.observe(spec, text, record.ok)
        if record.ok and hasattr(source, "observe_usage"):
            source.observe_usage(spec, record.prompt_tokens)
        self.pause(float(record.extra.get("pause_s") or 0.0))
        if hasattr(source, "tool_wait"):  # --agent-steps: the tool runs between two turns
            self.pause(source.tool_wait())
        return record

    def pause(self, seconds: float) -> None:
        """Wait ``seconds`` before the next request (Retry-After, backoff); less if the test stops."""
        deadline = time.monotonic() + seconds
        while not self.stopping and (left := deadline - time.monotonic()) > 0:
            gevent.sleep(min(left, PAUSE_SLICE_S))
