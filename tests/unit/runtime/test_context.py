"""The run context's stage lookup at the edges of a plan."""

from __future__ import annotations

from llm_locust.config.build import build_config
from llm_locust.config.role import Role
from llm_locust.load.plan import build_load_plan
from llm_locust.results.ending import EndCause
from llm_locust.runtime.context import LiveState, RunContext


def test_a_send_a_hair_before_t0_is_the_first_stages() -> None:
    """A worker's first open-loop arrival read the wall clock 1.2 ms before the master's t0: the
    stage lookup raised in the user's greenlet and the record was lost (seen in a 2-worker
    --request-rate run before the lookup clamped at t0)."""
    config = build_config({"ramp": "2,4"}, environ={})
    plan = build_load_plan(config.load)
    assert plan.stages is not None
    context = RunContext(config=config, role=Role.WORKER, plan=plan, client=None, t0=1000.0)
    stage, warmup = context.stage_at(1000.0 - 0.0012)
    assert stage is plan.stages.stages[0] and warmup is False


def test_the_first_interrupt_stands_and_a_stop_is_kept() -> None:
    """A second signal (or the all-failed stop after a SIGTERM) does not rewrite what stopped the run."""
    live = LiveState()
    assert not live.stopping and live.interrupted is None and live.interrupt_exit_code is None
    live.interrupt("SIGTERM", 143, EndCause.SIGNAL, at=5.0)
    live.interrupt("every request failed", 4, EndCause.EVERY_REQUEST_FAILED)
    assert (live.interrupted, live.interrupt_exit_code) == ("SIGTERM", 143)
    assert (live.interrupt_cause, live.interrupted_at) == (EndCause.SIGNAL, 5.0)
    live.stop()
    assert live.stopping
