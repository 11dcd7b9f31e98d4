"""``--max-tokens``: no request asks for more; a workload without output lengths asks for exactly it."""

from __future__ import annotations

import dataclasses

from llm_locust.client.streaming import ClientConfig, build_body
from llm_locust.workload.base import RequestSpec
from llm_locust.workload.build import build_workload
from tests.unit.workload.args import workload_config


def _specs(*argv: str, n: int = 300) -> list[RequestSpec]:
    source = build_workload(workload_config(*argv)).source(0)
    return [source.next_request() for _ in range(n)]


def test_a_cap_on_a_workload_with_output_lengths() -> None:
    capped = _specs("--workload", "chat", "--max-tokens", "40")
    free = _specs("--workload", "chat")
    assert max(s.max_tokens for s in capped) == 40 and max(s.max_tokens for s in free) > 40
    assert [min(s.max_tokens, 40) for s in free] == [s.max_tokens for s in capped]


def test_the_length_of_a_workload_without_output_lengths() -> None:
    assert {s.max_tokens for s in _specs("--prompt-tokens", "16", "--max-tokens", "8")} == {8}
    assert {s.max_tokens for s in _specs("--input-tokens", "uniform:10,20", "--max-tokens", "9")} == {9}
    assert {s.max_tokens for s in _specs("--prompt-tokens", "16")} == {128}


def test_the_client_adds_nothing_of_its_own() -> None:
    assert "max_tokens" not in {f.name for f in dataclasses.fields(ClientConfig)}  # no second meaning
    spec = RequestSpec(messages=[{"role": "user", "content": "hi"}], prompt="hi", max_tokens=None)
    body = build_body(ClientConfig(host="http://h", model="m"), spec)
    assert "max_tokens" not in body
