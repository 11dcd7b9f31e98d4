"""``llm-locust predict model.yaml --slo S --demand D``: the SLO capacity of a calibrated model.

Runs the capacity search of ``--search users`` (:mod:`llm_locust.load.search`, the same
doubling and bisection, from near the demand) on the engine model of ``llm-locust calibrate``
in virtual time (:mod:`llm_locust.sim.predict`): each step is ``--virtual-seconds`` of a
closed loop on the model, so the answer takes seconds. ``--replicas N`` is N engines behind
the balancer a run would use (``--balance``, ``--balance-scope``: round robin for every
request by default, as a run's; a user's requests then move between replicas). The workload
is a run's: ``--workload`` (a profile), or ``--input-tokens``/``--output-tokens``
distributions, outputs capped at ``--max-tokens``; ``--think-time`` between a user's
requests. A step near an SLO threshold runs on to
``--level-requests`` requests (:func:`llm_locust.sim.predict.level_verdict`): a P95 of ~1,000
requests moved the answer by a bisection step from one workload seed to the next. The interval
is the range of the capacities the same search finds with ``--draws`` of the model's bootstrap
parameter draws, each with its own workload seed (``--seed`` + 1, + 2 ...): the parameters'
uncertainty and the virtual runs' own noise.

Every line says it is a prediction and from which runs; ``-o FILE`` writes it as JSON
(``capacity``, ``interval``, the demand's ``verdict``, the model file, the runs). Times are
deployment seconds. Exit 0 the demand is met, 3 it is not (or not surely), 2 bad input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

from llm_locust.config.balance import BALANCE_POLICIES, BALANCE_SCOPES, BalancePolicy, BalanceScope
from llm_locust.config.demand import Demand, DemandKind, parse_demand
from llm_locust.config.engine_model import EngineModel, ModelFileError, load_engine_model
from llm_locust.config.register import OneLineParser
from llm_locust.config.slo import SloSpec, parse_slo
from llm_locust.config.stage_kind import StageKind
from llm_locust.config.think import ThinkTime, parse_think_time
from llm_locust.load.replicas import Routing
from llm_locust.load.search import Probe, SearchSpec, start_near
from llm_locust.results.capacity_model import DemandUnit, PredictedStep, PredictedVerdict
from llm_locust.results.prediction_model import Prediction
from llm_locust.sim.predict import DOUBT_MARGIN, Horizon, search_capacity, unsupported_lines
from llm_locust.workload.distributions import SpecError, SyntheticLengths, parse_distribution
from llm_locust.workload.profiles import ProfileLengths, load_profile

__all__ = ["main", "predict"]

NOT_MET = 3
#: A search step near an SLO threshold runs on to this many requests (its P95 then moves by a
#: fraction of a bisection step between workload seeds), or LEVEL_LIMIT virtual seconds.
LEVEL_REQUESTS = 8000
LEVEL_LIMIT = 18_000.0
T = TypeVar("T")


def _sampler(args: argparse.Namespace) -> SyntheticLengths | ProfileLengths:
    if args.input_tokens or args.output_tokens:
        try:
            inp = parse_distribution(args.input_tokens or "fixed:512")
        except SpecError as e:
            raise ValueError(f"argument --input-tokens: {e}") from None
        try:
            out = parse_distribution(args.output_tokens or "fixed:128")
        except SpecError as e:
            raise ValueError(f"argument --output-tokens: {e}") from None
        return SyntheticLengths(inp, out)
    try:
        return load_profile(args.workload)
    except KeyError as e:
        raise ValueError(f"argument --workload: {e.args[0] if e.args else e}") from None


def _make_draw(
    sampler: SyntheticLengths | ProfileLengths, max_tokens: int | None, seed: int
) -> Callable[[int], Callable[[], tuple[int, int]]]:
    def make(replica: int) -> Callable[[], tuple[int, int]]:
        rng = np.random.default_rng(seed * 1000 + replica)

        def draw() -> tuple[int, int]:
            s = sampler.draw(rng)
            out = s.output_tokens if max_tokens is None else min(s.output_tokens, max_tokens)
            return int(s.input_tokens), max(1, int(out))

        return draw

    return make


def _think(t: ThinkTime | None, seed: int) -> Callable[[], float] | None:
    if t is None or t.none:
        return None
    rng = np.random.default_rng(seed + 7)
    return lambda: t.draw(rng)


def predict(model: EngineModel, slo: SloSpec, demand: Demand, args: argparse.Namespace) -> Prediction:
    """The prediction (printed by :func:`text`, written by ``-o``)."""
    sampler = _sampler(args)
    think_spec = args.think_time or demand.think
    think = parse_think_time(think_spec) if think_spec else None
    minimum = args.search_min or max(1.0, start_near(demand.value))
    spec = SearchSpec(
        StageKind.USERS, minimum, args.search_max, args.search_precision, args.search_max_steps, 0
    )
    seconds = args.virtual_seconds
    horizon = Horizon(seconds, seconds / 6, args.level_requests or None, args.level_limit)
    routing = Routing(BalancePolicy(args.balance), BalanceScope(args.balance_scope))

    def one(draw: dict[str, float] | None, seed: int) -> tuple[float, list[Probe], list[int]]:
        make = _make_draw(sampler, args.max_tokens, seed)
        think_draw = _think(think, seed)
        return search_capacity(model, slo, spec, make, horizon, args.replicas, think_draw, draw, routing)

    capacity, probes, counts = one(None, args.seed)
    # each draw with its own workload seed: the interval covers the virtual runs' seed noise
    # as well as the parameters' uncertainty
    others = [one(d, args.seed + 1 + i)[0] for i, d in enumerate(model.draws[: args.draws])]
    low, high = (min([capacity, *others]), max([capacity, *others]))
    value = demand.value
    verdict = (
        PredictedVerdict.MEETS
        if low >= value
        else PredictedVerdict.MISSES
        if high < value
        else PredictedVerdict.UNCERTAIN
    )
    return Prediction(
        capacity=capacity,
        unit=DemandUnit.USERS if think else DemandUnit.CONCURRENCY,
        interval=[low, high],
        interval_source=(
            f"the same search with {len(others)} bootstrap parameter draws of the model, each with "
            "its own workload seed (the parameters' uncertainty and the virtual runs' seed noise)"
        ),
        demand=dict(demand.to_json()),
        verdict=verdict,
        slo=slo.to_json(),
        replicas=args.replicas,
        balance=routing.policy,
        balance_scope=routing.scope,
        workload=sampler.describe() | ({"max_tokens": args.max_tokens} if args.max_tokens else {}),
        think_time=think.spec() if think else None,
        model_file=model.source,
        runs=list(model.runs),
        not_identified=list(model.notes),
        steps=[
            PredictedStep(level=p.level, verdict=p.verdict, requests=n)
            for p, n in zip(probes, counts, strict=True)
        ],
        virtual_seconds_per_step=args.virtual_seconds,
        requests_per_precise_step=horizon.requests,
    )


def text(result: Prediction) -> str:
    lo, hi = result.interval
    steps = ", ".join(f"{s.level:g} {s.verdict.value} ({s.requests})" for s in result.steps)
    where = f"{result.replicas} replica{'s' if result.replicas > 1 else ''}"
    if result.replicas > 1:
        where += f" ({Routing(result.balance, result.balance_scope).text()})"
    unit = "users" if result.unit is DemandUnit.USERS else "concurrent"
    return "\n".join(
        [
            f"PREDICTION (not a measurement) from the engine model {result.model_file}, "
            f"calibrated on {', '.join(result.runs) or 'no recorded runs'}",
            f"SLO capacity: {result.capacity:g} {unit} on {where} (range {lo:g}..{hi:g}: "
            f"{result.interval_source})",
            f"demand {Demand.model_validate(result.demand).text()}: {result.verdict.value}",
            f"search steps (virtual time, {result.virtual_seconds_per_step:g} s each, "
            f"a step within {DOUBT_MARGIN:.0%} of an SLO threshold run on to "
            f"{result.requests_per_precise_step or 'no more'} requests; requests judged): {steps}",
        ]
    )


def _parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="llm-locust predict", description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="the model file of llm-locust calibrate")
    p.add_argument("--slo", required=True, help="as for a run, e.g. ttft_p95<=5s,e2e_p95<=30s")
    p.add_argument("--demand", required=True, help="concurrency=N, users=N[,think=T], or N (concurrent)")
    p.add_argument("--replicas", type=int, default=1, help="engines behind the balancer (default 1)")
    p.add_argument(
        "--balance", default=BalancePolicy.ROUND_ROBIN.value, choices=BALANCE_POLICIES,
        help="how requests are spread over the replicas, as for a run (default round-robin)",
    )  # fmt: skip
    p.add_argument(
        "--balance-scope", default=BalanceScope.REQUEST.value, choices=BALANCE_SCOPES,
        help="pick a replica for every request, or once for each user (default request)",
    )  # fmt: skip
    p.add_argument("--workload", default="chat", help="length profile (default chat)")
    p.add_argument("--input-tokens", default=None, help="input length distribution, as for a run")
    p.add_argument("--output-tokens", default=None, help="output length distribution, as for a run")
    p.add_argument("--max-tokens", type=int, default=None, help="cap on output tokens")
    p.add_argument("--think-time", default=None, help="pause between a user's requests")
    p.add_argument("--search-min", type=float, default=None, help="first level (default near the demand)")
    p.add_argument("--search-max", type=float, default=None, help="highest level")
    p.add_argument("--search-precision", type=float, default=0.10, help="bracket precision (default 0.10)")
    p.add_argument("--search-max-steps", type=int, default=12, help="step limit (default 12)")
    p.add_argument("--draws", type=int, default=10, help="parameter draws for the interval (default 10)")
    p.add_argument("--virtual-seconds", type=float, default=900.0, help="virtual seconds per step (900)")
    p.add_argument(
        "--level-requests", type=int, default=LEVEL_REQUESTS,
        help=f"requests of a step near an SLO threshold (default {LEVEL_REQUESTS}; 0: none)",
    )  # fmt: skip
    p.add_argument(
        "--level-limit", type=float, default=LEVEL_LIMIT,
        help=f"virtual seconds of such a step at most (default {LEVEL_LIMIT:g})",
    )  # fmt: skip
    p.add_argument("--seed", type=int, default=0, help="the workload's seed")
    p.add_argument("-o", "--output", default=None, help="also write the prediction as JSON")
    return p


def _demand(text: str) -> Demand:
    spec = f"concurrency={text}" if text.replace(".", "", 1).isdigit() else text
    demand = parse_demand(spec)
    if demand.kind is DemandKind.RATE:
        raise ValueError(
            "a rate demand needs an open-loop search, which predict does not run; give users or concurrency"
        )
    return demand


def _checked(parser: argparse.ArgumentParser, flag: str, parse: Callable[[], T]) -> T:
    """``parse()``, or one line naming ``flag`` and exit 2."""
    try:
        return parse()
    except ValueError as e:
        parser.error(f"argument {flag}: {str(e).removeprefix(flag + ': ')}")


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    for flag, value, ok in (
        ("--replicas", args.replicas, args.replicas >= 1),
        ("--draws", args.draws, args.draws >= 0),
        ("--virtual-seconds", args.virtual_seconds, args.virtual_seconds > 60),
        ("--level-requests", args.level_requests, args.level_requests >= 0),
        ("--level-limit", args.level_limit, args.level_limit >= args.virtual_seconds),
        ("--max-tokens", args.max_tokens, args.max_tokens is None or args.max_tokens >= 1),
    ):
        if not ok:
            parser.error(f"argument {flag}: out of range: {value}")
    try:
        model = load_engine_model(args.model)
    except ModelFileError as e:
        parser.error(f"argument model: {e}")
    slo = _checked(parser, "--slo", lambda: parse_slo(args.slo))
    demand = _checked(parser, "--demand", lambda: _demand(args.demand))
    if args.think_time:
        _checked(parser, "--think-time", lambda: parse_think_time(args.think_time))
    _checked(
        parser,
        "--search-min",
        lambda: SearchSpec(
            StageKind.USERS,
            args.search_min or 1.0,
            args.search_max,
            args.search_precision,
            args.search_max_steps,
        ),
    )
    bad = unsupported_lines(slo)
    if bad:
        parser.error(f"argument --slo: a model judges request latencies only, not {', '.join(bad)}")
    try:
        result = predict(model, slo, demand, args)
    except ValueError as e:
        parser.error(str(e))
    sys.stdout.write(text(result) + "\n")
    if args.output:
        try:
            Path(args.output).write_text(result.json_text())
        except OSError as e:
            parser.error(f"argument -o: cannot write {args.output!r}: {e.strerror or e}")
    return 0 if result.verdict is PredictedVerdict.MEETS else NOT_MET
