"""Load shapes: graded ramps, test matrices and open-loop rates as one Locust ``LoadTestShape``.

:class:`LLMShape` is declared in the default locustfile. Without a load-model option it
behaves exactly like plain Locust (``use_common_options``: ``-u``, ``-r`` and ``-t`` from
the command line or the web UI's start form). With one, it walks the
:class:`~llm_locust.load.plan.LoadPlan`'s stages:

- closed-loop stages (``--ramp``, ``--matrix users=...``): the stage's user count;
- open-loop stages (``--request-rate``, ``--rate-ramp``, ``--trace``, ``--matrix rate=...``):
  one dispatcher user per worker, which sends requests on the arrival schedule
  (see :mod:`llm_locust.runtime.openloop`);
- a capacity search (``--search``): the level its driver decides, step by step
  (:mod:`llm_locust.runtime.search`).

The shape runs only on the master (or the local runner). At its first tick it fixes the
plan's start ``t0`` and sends it to the workers, which derive everything else from it. It
reads and moves the node through :class:`ShapedRun`.
"""

from __future__ import annotations

from locust import LoadTestShape

import logging
import time
from typing import Protocol

from llm_locust.config.model import RunConfig
from llm_locust.config.stage_kind import StageKind
from llm_locust.load.plan import LoadPlan
from llm_locust.load.stages import Stage
from llm_locust.runtime.quota import quota_of
from llm_locust.runtime.search import SearchDriver
from llm_locust.runtime.sink import sink_of

__all__ = ["LLMShape", "ShapedRun"]

log = logging.getLogger("llm_locust")


class ShapedFleet(Protocol):
    """What the shape asks of every process: how many send, and their requests in flight."""

    def worker_count(self) -> int: ...

    def total_in_flight(self) -> int: ...


class ShapedRun(Protocol):
    """What the shape needs of the node where it runs (the master, the local runner)."""

    @property
    def plan(self) -> LoadPlan: ...
    @property
    def run_config(self) -> RunConfig: ...
    @property
    def search(self) -> SearchDriver | None: ...
    @property
    def fleet(self) -> ShapedFleet: ...

    def start_plan(self, lead_in: float) -> float: ...

    def enter_stage(self, stage: Stage) -> bool: ...


def _run_of(shape: LoadTestShape) -> ShapedRun:
    assert shape.runner is not None
    return sink_of(shape.runner.environment)


class LLMShape(LoadTestShape):
    """Stage-by-stage load from the llm-locust options; plain Locust without them.

    Abstract, like :class:`~llm_locust.runtime.user.LLMUser`: Locust takes the first shape
    class it finds in a locustfile, and this one is imported there before the subclass.
    """

    abstract = True
    use_common_options = True
    _drain_until: float | None = None
    _fresh = True  # the next tick is the first of a new test
    _t0: float = 0.0

    def tick(self) -> tuple[int, float] | None:
        run = _run_of(self)
        if self._fresh:
            self._fresh = False
            self._t0 = run.start_plan(self.get_run_time())
            reuse = getattr(run.plan.arrivals, "reuse", None)  # a trace replayed prefix-exact
            if reuse is not None:
                log.info("llm-locust: %s", reuse.sentence())
        quota = quota_of(self.runner.environment)  # type: ignore[union-attr]
        if quota is not None and quota.reached():  # --num-requests: all N finished
            return None
        stages = run.plan.stages
        if stages is None:
            return self._common_options(run, self.get_run_time())
        if run.search is not None:
            return self._search(run)
        stage, _ = stages.stage_at(max(time.time() - self._t0, 0.0))
        if stage is None:
            return self._drain(run)
        if run.enter_stage(stage):
            log.info("llm-locust: stage %d/%d: %s", stage.index + 1, len(stages), stage.label)
        if stage.kind is StageKind.USERS:
            users = int(stage.target)
            return users, float(stage.spawn_rate or max(users, 1))
        dispatchers = max(run.fleet.worker_count(), 1)
        return dispatchers, float(dispatchers)

    def _search(self, run: ShapedRun) -> tuple[int, float] | None:
        """A capacity search: the level of its running step, until it stops (then drain)."""
        load = run.run_config.load
        if load.run_time and self.get_run_time() > load.run_time:
            return self._drain(run)
        assert run.search is not None
        answer = run.search.tick()
        if run.plan.stages is not None:  # a search's SearchStages, always
            run.enter_stage(run.plan.stages[-1])  # (the driver logs each step)
        return answer if answer is not None else self._drain(run)

    def _drain(self, run: ShapedRun) -> tuple[int, float] | None:
        """Open loop: after the last arrival, keep going until the requests in flight finish."""
        if not (run.plan.open_loop and run.fleet.total_in_flight() > 0):
            return None
        if self._drain_until is None:
            self._drain_until = time.time() + run.run_config.request.request_timeout
        if time.time() > self._drain_until:
            return None
        return self.runner.user_count, 1.0  # type: ignore[union-attr]

    def reset_time(self) -> None:
        super().reset_time()
        self._drain_until = None
        self._fresh = True

    def _common_options(self, run: ShapedRun, elapsed: float) -> tuple[int, float] | None:
        """Plain Locust: ``-u`` users (Locust's default 1) for ``-t``, as validated; without an
        explicit ``-r`` they start within a second."""
        load = run.run_config.load
        if load.run_time and elapsed > load.run_time:
            return None
        users = load.num_users if load.num_users is not None else 1
        return users, float(load.spawn_rate or users)
