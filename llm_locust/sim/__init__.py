"""``llm-locust sim``: an OpenAI-compatible server that stands in for a real LLM engine.

Users rehearse test plans against it without GPUs, and the test-suite uses it as its
target, so it has to be correct on the wire, cheap (1,000 concurrent streams on one core)
and precise in its timing. Two timing modes: fixed TTFT/TPOT per request, or a
continuous-batching engine model (:mod:`llm_locust.sim.engine`). Faults can be injected
at configurable rates (:mod:`llm_locust.sim.faults`).

Layout: :mod:`~llm_locust.sim.http` (HTTP/1.1 on ``asyncio.Protocol``),
:mod:`~llm_locust.sim.app` (routes, validation), :mod:`~llm_locust.sim.stream` (one response
on the wire), :mod:`~llm_locust.sim.schedule` (token clocks), :mod:`~llm_locust.sim.engine`
(pure batching model), :mod:`~llm_locust.sim.tokens`, :mod:`~llm_locust.sim.metrics`,
:mod:`~llm_locust.sim.cli`.

This package is asyncio only: it must never import locust or gevent, so that gevent's
monkey-patching in the load generator never reaches it.
"""

from __future__ import annotations

__all__: list[str] = []
