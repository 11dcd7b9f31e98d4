"""The request streams of a process, in process: a trace row's lengths, a user's stream, none on a master."""

from __future__ import annotations

import pytest

from llm_locust.client.streaming import ClientConfig
from llm_locust.config.build import build_config
from llm_locust.config.role import Role
from llm_locust.load.plan import build_load_plan
from llm_locust.load.traces import TraceEntry
from llm_locust.runtime.context import RunContext
from llm_locust.runtime.request_sources import RequestSources
from llm_locust.workload.build import build_workload


def _sources(role: Role, with_workload: bool = True) -> RequestSources:
    config = build_config({}, environ={})
    workload = build_workload(config.workload, {}) if with_workload else None
    client = ClientConfig(host="http://127.0.0.1:9", model="m")
    context = RunContext(
        config=config, role=role, plan=build_load_plan(config.load), client=client, workload=workload
    )
    return RequestSources(lambda: context)


def test_a_trace_row_gives_its_lengths() -> None:
    sources = _sources(Role.LOCAL)
    first, second = sources.trace_spec(TraceEntry(0.0, 120, 17)), sources.trace_spec(TraceEntry(0.5, 40, 3))
    assert (first.target_input_tokens, first.target_output_tokens) == (120, 17)
    assert (second.target_input_tokens, second.target_output_tokens) == (40, 3)
    assert first.max_tokens == 17 and second.max_tokens == 3


def test_a_user_gets_a_stream_and_a_master_none() -> None:
    spec = _sources(Role.WORKER).new_source().next_request()
    assert spec.messages and spec.target_input_tokens
    with pytest.raises(RuntimeError, match="no workload"):
        _sources(Role.MASTER, with_workload=False).new_source()
