"""The load model's options (``--ramp``, ``--matrix``, ``--request-rate``, ``--search``, ...).

:mod:`llm_locust.config.options` puts them in help order with the rest; the load model itself is
built from their values by :mod:`llm_locust.load.plan`. Pure module: no Locust, no network.
"""

from __future__ import annotations

from llm_locust.config.option import Option
from llm_locust.config.option import option as _o

__all__ = ["LOAD_OPTIONS"]

LOAD_OPTIONS: tuple[Option, ...] = (
    _o("--ramp", "load", "Closed-loop step ramp: user counts, e.g. 1,5,10,20,50", type="list"),
    _o(
        "--step-time",
        "load",
        "How long each ramp/matrix/rate step holds, e.g. 60s, 2m",
        default="60s",
        type="duration",
    ),
    _o(
        "--warmup",
        "load",
        "Start of each stage excluded from its statistics (kept in requests.jsonl, marked)",
        default="0s",
        type="duration",
    ),
    _o(
        "--matrix",
        "load",
        'Test matrix, e.g. "users=1,10,50;input=128,1024;output=128,512", or a YAML file',
    ),
    _o("--request-rate", "load", "Open loop: arrivals per second (all workers)", type="float"),
    _o(
        "--num-requests",
        "load",
        "Send exactly N requests (all workers together), then stop once they finished, as vllm bench "
        "serve --num-prompts; with -u users or a --request-rate (-t, if given, can end it sooner)",
        type="int",
    ),
    _o(
        "--arrival",
        "load",
        "Open-loop arrival process",
        default="poisson",
        choices=("poisson", "gamma", "constant"),
    ),
    _o(
        "--burstiness",
        "load",
        "gamma arrivals: shape k (k<1 burstier than Poisson, 1 = Poisson)",
        type="float",
    ),
    _o(
        "--burst",
        "load",
        "Synchronized waves on top of the base load, open loop: every=60s,size=50[,start=5s][,count=3]",
    ),
    _o(
        "--max-concurrency",
        "load",
        "Open loop: at most this many requests in flight (arrivals wait, and are counted)",
        type="int",
    ),
    _o("--rate-ramp", "load", "Open-loop rate steps in req/s, e.g. 1,2,4,8 (with --step-time)", type="list"),
    _o(
        "--trace",
        "load",
        "Replay a trace's arrival times and lengths (Azure CSV, Mooncake JSONL)",
        type="path",
    ),
    _o(
        "--trace-format",
        "load",
        "Trace file format",
        default="auto",
        choices=("auto", "azure", "mooncake"),
    ),
    _o("--time-scale", "load", "Trace replay: X > 1 compresses time (more load)", default=1.0, type="float"),
    _o(
        "--trace-spread",
        "load",
        "Spread requests of a quantized timestamp slot across the slot",
        default="auto",
        choices=("auto", "even", "random", "none"),
    ),
    _o("--trace-slot", "load", "Trace slot width in seconds (default: detected)", type="float"),
    _o("--trace-start", "load", "Replay from this trace offset, e.g. 10m", type="duration"),
    _o("--trace-duration", "load", "Replay only this much of the trace, e.g. 5m", type="duration"),
    _o("--trace-limit", "load", "Replay at most this many requests", type="int"),
    _o(
        "--trace-block-tokens",
        "load",
        "Trace replay: tokens per hash_ids block (Mooncake: 512); equal ids get equal text",
        default=512,
        type="int",
    ),
    _o(
        "--search",
        "load",
        "SLO capacity search, users or rate: double from --search-min until a step fails --slo, "
        "then bisect to --search-precision; each step holds --step-time at its level",
        # no choices: the web UI's form would preselect one, and every test started there would search
    ),
    _o("--search-min", "load", "The search's first level (default 1 user, or 1 req/s)", type="float"),
    _o("--search-max", "load", "The search never goes above this level", type="float"),
    _o(
        "--search-precision",
        "load",
        "Stop when the highest pass and lowest fail are this close (relative to the pass)",
        default="10%",
    ),
    _o(
        "--search-settled-precision",
        "load",
        "With --demand: the coarser precision once a level at or below the demand fails (a finer "
        "capacity would not change the verdict; the stop reason says so). Default: --search-precision",
    ),
    _o("--search-max-steps", "load", "Stop after this many search steps", default=12, type="int"),
    _o(
        "--search-extensions",
        "load",
        "How often an inconclusive step (too few requests for its percentile) runs another "
        "--step-time before the search stops there",
        default=2,
        type="int",
    ),
    _o(
        "--demand",
        "load",
        'The peak the deployment must carry: "concurrency=50", "rate=5" or '
        '"users=400,think=lognormal:mean=20s,std=10s"; the verdict reports the headroom',
    ),
)
