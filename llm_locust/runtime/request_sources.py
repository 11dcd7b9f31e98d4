"""What a test's requests are made from: the HTTP client's settings, the request streams, the
replica each request goes to.

Each user (and each open-loop or burst dispatcher) draws its requests from its own stream of
the workload (:meth:`RequestSources.new_source`), indexed by the worker and a counter so a run
is reproducible; a matrix cell with its own workload options gets its own workload, built once
per test; a trace replay asks for a request with the trace row's lengths.
"""

from __future__ import annotations

from collections.abc import Callable

from llm_locust.client.streaming import ClientConfig
from llm_locust.config.build import ConfigError
from llm_locust.config.model import RequestConfig
from llm_locust.config.tools import load_tools
from llm_locust.load.cancel import CancelPolicy
from llm_locust.load.replicas import Balancer
from llm_locust.load.stages import Stage
from llm_locust.load.traces import TraceEntry
from llm_locust.protocol.tools import ToolOffer
from llm_locust.runtime.context import RunContext
from llm_locust.runtime.prepare import PREPARER, workload_info
from llm_locust.workload.base import RequestSource, RequestSpec
from llm_locust.workload.build import BuiltWorkload
from llm_locust.workload.datasets import LengthRow
from llm_locust.workload.sampled import SampledWorkload

__all__ = ["RequestSources", "client_config"]


class RequestSources:
    """The current test's request streams (see the module docstring)."""

    def __init__(self, context: Callable[[], RunContext | None]) -> None:
        self._context = context
        self._stage_workloads: dict[int, BuiltWorkload] = {}
        self._streams = 0
        self._trace_counter = 0
        self._balancer: Balancer | None = None  # --endpoints: which replica the next request goes to

    def reset(self) -> None:
        """A new test: its matrix cells' workloads are built anew."""
        self._stage_workloads.clear()

    def _current(self) -> RunContext:
        context = self._context()
        assert context is not None and context.client is not None  # set at the test's start
        return context

    def workload_for(self, stage: Stage | None) -> BuiltWorkload | None:
        """The workload of a stage: the run's, or a matrix cell's own."""
        context = self._current()
        if stage is None or not stage.overrides():
            return context.workload
        if stage.index not in self._stage_workloads:
            assert context.client is not None
            cell = context.config.workload.with_cell(stage.overrides())
            info = workload_info(context.config, context.client.host, context.client.model, context.server)
            self._stage_workloads[stage.index] = PREPARER.workloads.build(cell, info)
        return self._stage_workloads[stage.index]

    def trace_spec(self, entry: TraceEntry) -> RequestSpec:
        """A request with a trace row's input and output lengths."""
        context = self._current()
        self._trace_counter += 1
        workload = context.workload
        if not isinstance(workload, SampledWorkload):  # the configuration refuses --trace with --dataset
            raise TypeError(f"--trace needs a sampled workload, not {type(workload).__name__}")
        if entry.hash_ids:  # prefix-exact: the trace's blocks, its sessions (load/trace_reuse.py)
            row = LengthRow(int(entry.input_tokens), int(entry.output_tokens), entry.hash_ids)
            return workload.spec_for_blocks(row, context.config.load.trace_block_tokens, entry.session)
        return workload.spec_for_lengths(
            int(entry.input_tokens), int(entry.output_tokens), context.slot, self._trace_counter - 1
        )

    def balancer(self, request: RequestConfig, start: int) -> Balancer | None:
        """The choice of replica among ``--endpoints`` (``None``: the one ``--host``); a
        process starts its round robin at ``start`` (its worker index)."""
        if not request.endpoints:
            return None
        if self._balancer is None or self._balancer.replicas != tuple(request.endpoints):
            self._balancer = Balancer(request.endpoints, request.balance, start)
        return self._balancer

    def new_source(self, stage: Stage | None = None) -> RequestSource:
        """A request stream for a new user; its index keeps the stream reproducible."""
        context = self._current()
        self._streams += 1
        workload = self.workload_for(stage)
        if workload is None:  # the master builds none: its users are the workers'
            raise RuntimeError("llm-locust: this process has no workload (a master sends no requests)")
        return workload.source(context.worker_index * 1_000_000 + self._streams - 1)


def client_config(request: RequestConfig, host: str) -> ClientConfig:
    """The HTTP client's settings: the request part of the configuration and the target."""
    if not host:
        raise ConfigError("--host: no target given (e.g. --host http://127.0.0.1:8000)")
    tools = None
    if request.tools:
        tools = ToolOffer(load_tools(request.tools), request.tool_share, request.tool_choice)
    return ClientConfig(
        host=host,
        model=request.model,
        endpoint=request.endpoint,
        api_key=request.api_key_value(),
        temperature=request.temperature,
        extra_body=dict(request.extra_body),
        headers=dict(request.headers),
        request_timeout=request.request_timeout,
        ca_cert=request.ca_cert,
        insecure=request.insecure,
        cancel=CancelPolicy(request.cancel_rate, request.cancel_after) if request.cancel_rate > 0 else None,
        tools=tools,
        session_header=request.session_header,
        kernel_timestamps=request.read_timestamps == "kernel",
    )
