"""The typed ``sessions`` block of ``summary.json`` (:mod:`llm_locust.results.sessions` computes it).

Pure module: pydantic, no Locust, no network.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["SessionCache", "SessionsBlock", "StepTtft"]


class _Block(BaseModel):
    model_config = ConfigDict(extra="allow")


class StepTtft(_Block):
    """TTFT at one step of the sessions (ms), over the requests whose latencies count."""

    step: int
    requests: int = 0
    mean_ttft_ms: float | None = None
    p50_ttft_ms: float | None = None
    p90_ttft_ms: float | None = None
    p95_ttft_ms: float | None = None
    p99_ttft_ms: float | None = None


class SessionCache(_Block):
    """Each session's prefix-cache token hit ratio (cached / prompt tokens), over the sessions."""

    sessions: int = 0
    p10_token_hit_ratio: float | None = None
    p50_token_hit_ratio: float | None = None
    p90_token_hit_ratio: float | None = None


class SessionsBlock(_Block):
    """Sessions (agent loops, conversations, trace sessions): counts, rate, time, steps."""

    started: int = 0
    completed: int = 0
    sessions_per_s: float = 0.0
    mean_session_e2e_s: float | None = None
    p50_session_e2e_s: float | None = None
    p90_session_e2e_s: float | None = None
    p95_session_e2e_s: float | None = None
    p99_session_e2e_s: float | None = None
    mean_steps: float | None = None
    p50_steps: float | None = None
    p90_steps: float | None = None
    p95_steps: float | None = None
    p99_steps: float | None = None
    mean_tool_wait_s: float | None = None
    step_ttft_ms: list[StepTtft] = []
    prefix_cache: SessionCache | None = None
