"""One llm-locust node per Locust environment: what every role shares.

Locust has one runner class per role (``LocalRunner``, ``MasterRunner``, ``WorkerRunner``);
llm-locust has one node per role, built once at ``init`` from the runner Locust made
(:func:`llm_locust.runtime.nodes.make_node`) and kept on the environment
(``environment.llm_locust``, :func:`node_of`), so there is no module-level registry. Each node
wires only its own row path (:mod:`llm_locust.runtime.nodes`):

- worker: requests -> fold -> outbox (:class:`~llm_locust.runtime.front.LoadFront`);
- master: inbox -> search gate -> bus -> results and live aggregates
  (:class:`~llm_locust.runtime.sink.SinkNode`);
- local: the worker's front half with the master's sinks.

This base holds what every role has: the configuration as adopted (the command line's, then
a web UI form's or the master's options), the live state of a test (:class:`LiveState`), the
fleet (what spans the master and its workers, :mod:`llm_locust.runtime.fleet`), and the
making of each test's :class:`~llm_locust.runtime.context.RunContext` at its start:

- the command line parsed, then ``init``: the one typed configuration, its load plan and
  (where requests are sent) its workload, prepared by :mod:`llm_locust.runtime.prepare`;
- ``test_start``: the configuration again only if the options changed (a test started from the
  web UI's form, a worker given the master's options); resolve the model, build the workload;
  then the role's own start (:meth:`Node._started`);
- ``test_stop`` / ``quitting``: the role's own.
"""

from __future__ import annotations

import locust.runners
from locust.env import Environment

import time
from typing import TYPE_CHECKING, ClassVar

from greenlet import GreenletExit

from llm_locust.client import health
from llm_locust.client.preflight import Preflight, server_facts
from llm_locust.client.streaming import ClientConfig
from llm_locust.config.build import config_from_options
from llm_locust.config.jsontypes import JsonObject
from llm_locust.config.model import RunConfig
from llm_locust.config.role import Role
from llm_locust.load.plan import LoadPlan
from llm_locust.runtime.context import LiveState, RunContext
from llm_locust.runtime.prepare import PREPARER, Prepared, source_of
from llm_locust.runtime.request_sources import client_config
from llm_locust.workload.build import BuiltWorkload

if TYPE_CHECKING:
    from llm_locust.runtime.fleet import Fleet
    from llm_locust.runtime.front import LoadFront

__all__ = ["ATTRIBUTE", "Node", "front_of", "node_of", "role_of"]

ATTRIBUTE = "llm_locust"


def node_of(environment: Environment) -> Node:
    """The environment's node (made at ``init``)."""
    node = getattr(environment, ATTRIBUTE, None)
    if node is None:
        raise RuntimeError("llm-locust: no node on this environment (Locust's init did not run)")
    assert isinstance(node, Node)
    return node


def front_of(environment: Environment) -> LoadFront:
    """The sending half of the environment's node (a worker's, the local runner's)."""
    front = node_of(environment).front
    if front is None:
        raise RuntimeError("llm-locust: a master sends no requests (its users are the workers')")
    return front


def role_of(runner: locust.runners.Runner | None) -> Role:
    if isinstance(runner, locust.runners.MasterRunner):
        return Role.MASTER
    if isinstance(runner, locust.runners.WorkerRunner):
        return Role.WORKER
    return Role.LOCAL


class Node:
    """The part of a node every role shares; see the module docstring."""

    role: ClassVar[Role]
    front: LoadFront | None = None  # where requests are sent: the worker, the local runner
    fleet: Fleet

    def __init__(self, environment: Environment) -> None:
        self.environment = environment
        self.run_config: RunConfig = config_from_options(None)  # the defaults, until init adopts one
        self.plan: LoadPlan = LoadPlan()
        self.workload: BuiltWorkload | None = None
        self.cli_spawn_rate: float | None = None  # -r as the command line gave it (None: not given)
        self.cli_options: JsonObject = {}  # llm-locust's option values as the command line gave them
        self.drain: JsonObject | None = None
        self.live = LiveState()
        self.context: RunContext | None = None  # the current test's; None before the first start
        self.preflight_result: Preflight | None = None  # the last check (headless or the web UI's)
        self.tests = 0
        self._source: JsonObject | None = None  # the option values run_config came from
        self._form_pending = False
        self._adopted = False

    # -- configuration ---------------------------------------------------------------
    def adopt(self, prepared: Prepared, *, from_form: bool = False) -> None:
        """Run with a prepared (validated) configuration, its plan and its workload."""
        if not self._adopted:  # the command line's configuration
            self._adopted, self.cli_spawn_rate = True, prepared.config.load.spawn_rate
            self.cli_options = source_of(self.environment.parsed_options, ours_only=True)
        self.run_config, self.plan = prepared.config, prepared.plan
        if prepared.workload is not None:
            self.workload = prepared.workload
        self._form_pending = from_form
        self._source = None if from_form else source_of(self.environment.parsed_options, ours_only=True)

    def configure(self, config: RunConfig, *, from_form: bool = False, workload: bool = True) -> None:
        """Adopt ``config`` (the web UI's form, a master's options); raises one of ``CONFIG_ERRORS``."""
        source = source_of(self.environment.parsed_options)
        self.adopt(PREPARER.adopt(config, self.role, source, workload=workload), from_form=from_form)

    def _current_config(self) -> RunConfig:
        """The configuration for a test starting now (rebuilt only if the options changed)."""
        source = source_of(self.environment.parsed_options, ours_only=True)
        if self._form_pending:  # the form's values, already validated and adopted
            self._form_pending, self._source = False, source
        elif source != self._source:  # e.g. a worker given the master's options
            self.configure(config_from_options(self.environment.parsed_options), workload=False)
            self._source = source
        return self.run_config

    # -- lifecycle -------------------------------------------------------------------
    def on_test_start(self) -> None:
        """``test_start``: the test's context, then the role's own start.

        Building the workload may take a while (``--tokenizer server`` asks the server to count
        each prompt): a stop that comes meanwhile (``-t`` shorter than the build, Ctrl-C) kills
        this handler's greenlet. The node that keeps results then opens them with no workload
        (:meth:`_start_cut_short`), so the test still ends with its results and exit code 7
        (nothing recorded), not an empty folder and exit code 0."""
        began = time.monotonic()
        run_config = self._test_config(self._current_config())
        self.tests += 1
        self.live.stopping = False
        self.context = None  # set once the start succeeded: users of a failed start send nothing
        client = client_config(run_config.request, self.environment.host or run_config.host)
        server = server_facts(self.preflight_result, client)  # never a null model
        try:
            workload = self._workload(run_config, client, server)
        except GreenletExit:
            self._start_cut_short(self._context(run_config, client, server, None), time.monotonic() - began)
            raise
        self.context = self._context(run_config, client, server, workload)
        self._started(self.context)
        if self.front is not None:  # where requests are timed: the start's own interval (its
            health.monitor().cut()  # build) ends before the first request, outside the first step

    def _context(
        self, config: RunConfig, client: ClientConfig, server: JsonObject, workload: BuiltWorkload | None
    ) -> RunContext:
        index = max(getattr(self.environment.runner, "worker_index", 0), 0)
        workers = max(self.live.pending_workers, 1)
        return RunContext(
            config=config,
            role=self.role,
            plan=self.plan,
            client=client,
            workload=workload,
            t0=self.live.pending_t0 if self.plan.stages is not None else None,
            plan_end=self.live.pending_end,
            workers=workers,
            slot=index % workers,
            worker_index=index,
            server=server,
            test=self.tests,
            start_time=time.time(),
        )

    def _start_cut_short(self, context: RunContext, seconds: float) -> None:
        """The test stopped ``seconds`` into its start, before its workload was built: no user
        was started (the node that keeps results writes them)."""

    def _test_config(self, config: RunConfig) -> RunConfig:
        """The configuration of the test starting now (the master's and the local runner's salt it)."""
        return config

    def _workload(self, config: RunConfig, client: ClientConfig, server: JsonObject) -> BuiltWorkload | None:
        """The test's workload, where requests are sent (it fills in ``client``'s tokenizer)."""
        if self.front is None:  # the master builds none: its users are the workers'
            return None
        self.workload = self.front.workload(config, client, server)
        return self.workload

    def _started(self, context: RunContext) -> None:
        """The role's own start, once the context is made."""

    def on_test_stopping(self) -> None:
        """``test_stopping``: the load is stopping, send nothing new (a master first asks why)."""
        self.live.stop()

    def on_test_stop(self) -> None:
        """``test_stop``: the role's own."""

    def on_quitting(self) -> None:
        """``quitting``: the role's own."""
