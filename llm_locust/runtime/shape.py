"""Load shapes: graded ramps, test matrices and open-loop rates as one Locust ``LoadTestShape``.

:class:`LLMShape` is declared in the default locustfile. Without a load-model option it
behaves exactly like plain Locust (``use_common_options``: ``-u``, ``-r`` and ``-t`` from
the command line or the web UI's start form). With one, it walks the
:class:`~llm_locust.load.plan.LoadPlan`'s stages:

- closed-loop stages (``--ramp``, ``--matrix users=...``): the stage's user count;
- open-loop stages (``--request-rate``, ``--rate-ramp``, ``--trace``, ``--matrix rate=...``):
  one dispatcher user per worker, which sends requests on the arrival schedule
  (see :mod:`llm_locust.runtime.openloop`).

The shape runs only on the master (or the local runner). At its first tick it fixes the
plan's start ``t0`` and sends it to the workers, which derive everything else from it.
"""

from __future__ import annotations

from locust import LoadTestShape

import logging
import time
from typing import Any

__all__ = ["LLMShape"]

log = logging.getLogger("llm_locust")


class LLMShape(LoadTestShape):
    """Stage-by-stage load from the llm-locust options; plain Locust without them.

    Abstract, like :class:`~llm_locust.runtime.user.LLMUser`: Locust takes the first shape
    class it finds in a locustfile, and this one is imported there before the subclass.
    """

    abstract = True
    use_common_options = True
    _drain_until: float | None = None
    _fresh = True  # the next tick is the first of a new test

    def tick(self) -> tuple[int, float] | None:
        from llm_locust.runtime.run import run_for

        run = run_for(self.runner.environment)  # type: ignore[union-attr]
        if self._fresh:
            self._fresh = False
            run.start_plan(self.get_run_time())
        plan = run.plan
        if plan is None or plan.stages is None:
            return self._common_options(run, self.get_run_time())
        stage, _ = plan.stage_at(max(time.time() - run.plan_t0, 0.0))
        if stage is None:
            return self._drain(run)
        if stage is not run.current_stage:
            run.current_stage = stage
            log.info("llm-locust: stage %d/%d: %s", stage.index + 1, len(plan.stages), stage.label)
        if stage.kind == "users":
            users = int(stage.target)
            return users, float(stage.spawn_rate or max(users, 1))
        dispatchers = max(run.worker_count(), 1)
        return dispatchers, float(dispatchers)

    def _drain(self, run: Any) -> tuple[int, float] | None:
        """Open loop: after the last arrival, keep going until the requests in flight finish."""
        if not (run.plan.open_loop and run.total_in_flight() > 0):
            return None
        if self._drain_until is None:
            self._drain_until = time.time() + run.config.request_timeout
        if time.time() > self._drain_until:
            return None
        return self.runner.user_count, 1.0  # type: ignore[union-attr]

    def reset_time(self) -> None:
        super().reset_time()
        self._drain_until = None
        self._fresh = True

    def _common_options(self, run: Any, elapsed: float) -> tuple[int, float] | None:
        """Plain Locust: ``-u`` users (Locust's default 1) for ``-t``, as validated; without an
        explicit ``-r`` they start within a second."""
        load = run.run_config.load
        if load.run_time and elapsed > load.run_time:
            return None
        users = load.num_users if load.num_users is not None else 1
        return users, float(load.spawn_rate or users)
