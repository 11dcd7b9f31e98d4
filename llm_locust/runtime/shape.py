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

from llm_locust.config.options import add_argument

__all__ = ["LLMShape", "register_load_options"]

log = logging.getLogger("llm_locust")


def register_load_options(parser: Any) -> None:
    """Options of the load model (graded ramps, matrices, open loop, traces, SLOs)."""
    a = add_argument
    a(parser, "--ramp", default="", help="Closed-loop step ramp: user counts, e.g. 1,5,10,20,50")
    a(parser, "--step-time", default="60s", help="How long each ramp/matrix/rate step holds, e.g. 60s, 2m")
    a(
        parser,
        "--warmup",
        default="0s",
        help="Start of each stage excluded from its statistics (kept in requests.jsonl, marked)",
    )
    a(
        parser,
        "--matrix",
        default="",
        help='Test matrix, e.g. "users=1,10,50;input=128,1024;output=128,512", or a YAML file',
    )
    a(parser, "--request-rate", type=float, default=None, help="Open loop: arrivals per second (all workers)")
    a(
        parser,
        "--arrival",
        choices=["poisson", "gamma", "constant"],
        default="poisson",
        help="Open-loop arrival process",
    )
    a(
        parser,
        "--burstiness",
        type=float,
        default=None,
        help="gamma arrivals: shape k (k<1 burstier than Poisson, 1 = Poisson)",
    )
    a(
        parser,
        "--max-concurrency",
        type=int,
        default=None,
        help="Open loop: at most this many requests in flight (arrivals wait, and are counted)",
    )
    a(
        parser,
        "--rate-ramp",
        default="",
        help="Open-loop rate steps in req/s, e.g. 1,2,4,8 (with --step-time)",
    )
    a(
        parser,
        "--trace",
        default="",
        help="Replay a trace's arrival times and lengths (Azure CSV, Mooncake JSONL)",
    )
    a(
        parser,
        "--trace-format",
        choices=["auto", "azure", "mooncake"],
        default="auto",
        help="Trace file format",
    )
    a(parser, "--time-scale", type=float, default=1.0, help="Trace replay: X > 1 compresses time (more load)")
    a(
        parser,
        "--trace-spread",
        choices=["auto", "even", "random", "none"],
        default="auto",
        help="Spread requests of a quantized timestamp slot across the slot",
    )
    a(
        parser,
        "--trace-slot",
        type=float,
        default=None,
        help="Trace slot width in seconds (default: detected)",
    )
    a(parser, "--trace-start", default="", help="Replay from this trace offset, e.g. 10m")
    a(parser, "--trace-duration", default="", help="Replay only this much of the trace, e.g. 5m")
    a(parser, "--trace-limit", type=int, default=None, help="Replay at most this many requests")
    a(
        parser,
        "--slo",
        default="",
        help='SLO, e.g. "success>=99%%,ttft_p95<=5s,e2e_p95<=30s", or a YAML file; a failed SLO exits 3',
    )


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
        """Plain Locust: ``-u`` users for ``-t``; without an explicit ``-r`` they start within a second."""
        options = self.runner.environment.parsed_options  # type: ignore[union-attr]
        run_time = getattr(options, "run_time", None)
        if run_time and elapsed > run_time:
            return None
        users = int(getattr(options, "num_users", None) or 1)
        return users, float(run.spawn_rate() or users)
