"""The capacity search's state machine, exhaustively over boundaries, first levels and precisions."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from llm_locust.load.search import (
    Action,
    Decision,
    Phase,
    Probe,
    SearchSpec,
    StopReason,
    Verdict,
    bracket,
    decide,
    replay,
    start_near,
)

Judge = Callable[[float, int], str]


def run(spec: SearchSpec, judge: Judge, limit: int = 200) -> tuple[list[Probe], Decision]:
    """Drive the search like the shape does: judge each step, extend it or move on."""
    probes: list[Probe] = []
    decision = decide(spec, probes)
    for _ in range(limit):
        if decision.action == "stop":
            return probes, decision
        assert decision.level is not None
        if decision.action == "extend":
            last = probes.pop()
            probes.append(Probe(last.level, judge(last.level, last.extensions + 1), last.extensions + 1))
        else:
            probes.append(Probe(decision.level, judge(decision.level, 0)))
        decision = decide(spec, probes)
    raise AssertionError("the search did not stop")


def boundary(b: float) -> Judge:
    return lambda level, _ext: "pass" if level <= b else "fail"


def check_documented_sequence(spec: SearchSpec, probes: list[Probe]) -> None:
    """Doubling (or halving) until the first change of verdict, then the bracket's midpoints."""
    levels = [p.level for p in probes]
    assert levels[0] == spec.minimum
    i = 1
    first = probes[0].verdict
    while i < len(probes) and probes[i - 1].verdict == first:
        prev = levels[i - 1]
        if first == "pass":
            expected = 2 * prev if spec.maximum is None else min(2 * prev, spec.maximum)
        else:
            expected = max(math.floor(prev / 2), 1) if spec.kind == "users" else max(prev / 2, spec.floor)
        assert levels[i] == pytest.approx(expected, rel=1e-3), (levels, i)
        i += 1
    for j in range(i, len(probes)):
        lo, hi = bracket(probes[:j])
        assert lo is not None and hi is not None and lo < levels[j] < hi, (levels, j)
        mid = (lo + hi) // 2 if spec.kind == "users" else (lo + hi) / 2
        assert levels[j] == pytest.approx(mid, rel=1e-3)


@pytest.mark.parametrize("precision", [0.05, 0.10, 0.25])
def test_users_every_boundary_and_first_level(precision: float) -> None:
    for minimum in (1, 2, 3, 5, 8, 16, 40):
        for b in range(0, 301):
            spec = SearchSpec("users", minimum, precision=precision, max_steps=100)
            probes, stop = run(spec, boundary(b))
            check_documented_sequence(spec, probes)
            lo, hi = bracket(probes)
            if b == 0:
                assert stop.reason == "minimum" and lo is None and hi == 1
                continue
            assert stop.reason == "precision", (minimum, b, probes)
            assert lo is not None and hi is not None and lo <= b < hi
            assert hi - lo <= max(1.0, precision * lo), (minimum, b, lo, hi)
            assert lo == max(p.level for p in probes if p.verdict == "pass")
            # doubling or halving to a factor-2 bracket, then halving its width to the precision
            span = max(b / minimum, minimum / b, 1.0)
            assert len(probes) <= math.ceil(math.log2(span)) + 2 + math.ceil(math.log2(1 / precision)) + 1


def test_rates_bisect_to_the_precision() -> None:
    for b in (0.3, 0.9, 1.0, 1.7, 4.2, 9.99, 33.0, 120.0):
        spec = SearchSpec("rate", 1.0, precision=0.1)
        probes, stop = run(spec, boundary(b))
        check_documented_sequence(spec, probes)
        lo, hi = bracket(probes)
        assert stop.reason == "precision" and lo is not None and hi is not None
        assert lo <= b < hi and hi - lo <= 0.1 * lo * (1 + 1e-6)


def test_a_rate_search_halves_to_its_floor() -> None:
    spec = SearchSpec("rate", 8.0)
    probes, stop = run(spec, boundary(0.01))
    assert [p.level for p in probes] == [8.0, 4.0, 2.0, 1.0, 0.5]
    assert stop.reason == "minimum"


def test_the_maximum_caps_doubling_and_a_passing_maximum_stops() -> None:
    spec = SearchSpec("users", 4, maximum=20)
    probes, stop = run(spec, boundary(1000))
    assert [p.level for p in probes] == [4, 8, 16, 20] and stop.reason == "maximum"
    probes, stop = run(spec, boundary(18))
    assert [p.level for p in probes][:4] == [4, 8, 16, 20] and stop.reason == "precision"
    assert bracket(probes) == (18, 19)


def test_the_step_limit_stops_with_the_bracket_so_far() -> None:
    spec = SearchSpec("users", 1, max_steps=5)
    probes, stop = run(spec, boundary(100))
    assert [p.level for p in probes] == [1, 2, 4, 8, 16] and stop.reason == "step_limit"
    assert bracket(probes) == (16, None)


def test_an_inconclusive_step_is_extended_then_bounds_the_search_as_not_passed() -> None:
    # levels 9..12 cannot be told apart from noise, whatever the extensions
    def judge(level: float, _ext: int) -> str:
        return "pass" if level <= 8 else "inconclusive" if level <= 12 else "fail"

    spec = SearchSpec("users", 1, max_extensions=2)
    probes, stop = run(spec, judge)
    assert [(p.level, p.verdict, p.extensions) for p in probes][4:] == [
        (16, "fail", 0),
        (12, "inconclusive", 2),
        (10, "inconclusive", 2),
        (9, "inconclusive", 2),
    ]
    # the answer is the highest level shown to pass; 9 is not shown to pass, so it is no pass
    assert stop.reason == "precision" and bracket(probes) == (8, 9)


def test_inconclusive_from_the_first_step_halves_until_a_pass() -> None:
    def judge(level: float, _ext: int) -> str:
        return "pass" if level <= 3 else "inconclusive"

    probes, stop = run(SearchSpec("users", 16, max_extensions=0), judge)
    assert [p.level for p in probes] == [16, 8, 4, 2, 3] and bracket(probes) == (3, 4)
    assert stop.reason == "precision"


def test_an_extension_that_settles_the_verdict_lets_the_search_go_on() -> None:
    def judge(level: float, ext: int) -> str:
        if level == 12 and ext < 1:
            return "inconclusive"
        return "pass" if level <= 12 else "fail"

    probes, stop = run(SearchSpec("users", 1), judge)
    assert [(p.level, p.extensions) for p in probes] == [
        (1, 0),
        (2, 0),
        (4, 0),
        (8, 0),
        (16, 0),
        (12, 1),
        (14, 0),
        (13, 0),
    ]
    assert stop.reason == "precision" and bracket(probes) == (12, 13)


def test_an_invalid_step_is_rerun_once_then_the_answer_is_withheld() -> None:
    spec = SearchSpec("users", 1)
    probes = [Probe(1, "pass"), Probe(2, "pass"), Probe(4, "invalid", reason="client saturated")]
    assert decide(spec, probes) == Decision(Action.RERUN, 4, Phase.RERUN)
    probes.append(Probe(4, "invalid", reason="client saturated"))
    assert decide(spec, probes) == Decision(Action.STOP, reason=StopReason.INVALID)


def test_an_invalid_step_is_neither_a_pass_nor_a_fail() -> None:
    # invalid at 16, then the rerun at 16 fails: the bracket is (8, 16), as if 16 ran once
    spec = SearchSpec("users", 1)
    probes = [Probe(lv, "pass") for lv in (1, 2, 4, 8)] + [Probe(16, "invalid")]
    assert bracket(probes) == (8, None)
    probes.append(Probe(16, "fail"))
    assert bracket(probes) == (8, 16) and decide(spec, probes) == Decision(Action.PROBE, 12, Phase.BISECT)
    # an invalid step at a level below the bracket does not move it either
    assert bracket([Probe(8, "pass"), Probe(6, "invalid"), Probe(16, "fail")]) == (8, 16)


def test_a_valid_rerun_lets_the_search_go_on_and_reruns_do_not_spend_steps() -> None:
    def judge(level: float, _ext: int, seen: dict[float, int] = {}) -> str:  # noqa: B006
        seen[level] = seen.get(level, 0) + 1
        if level == 8 and seen[level] == 1:
            return "invalid"  # the first run at 8 saturated the client
        return "pass" if level <= 10 else "fail"

    spec = SearchSpec("users", 1, max_steps=8)
    probes, stop = run(spec, judge)
    assert [(p.level, p.verdict) for p in probes][:6] == [
        (1, "pass"),
        (2, "pass"),
        (4, "pass"),
        (8, "invalid"),
        (8, "pass"),
        (16, "fail"),
    ]
    # 8 judged steps besides the invalid one: the limit is not reached by the rerun
    assert stop.reason == StopReason.PRECISION and bracket(probes) == (10, 11)


def test_every_level_invalid_withholds_the_answer_after_one_rerun() -> None:
    probes, stop = run(SearchSpec("users", 32), lambda level, _ext: "invalid")
    assert [p.level for p in probes] == [32, 32]
    assert stop == Decision(Action.STOP, reason=StopReason.INVALID)


@pytest.mark.parametrize(
    ("boundary_at", "demand"), [(49, 50), (50, 50), (51, 50), (45, 50), (57, 50), (6, 5)]
)
def test_the_demand_inside_the_bracket_is_measured(boundary_at: int, demand: float) -> None:
    """The answer at the demand is a judged step whenever the search brackets it."""
    first = start_near(demand)
    spec = SearchSpec("users", first, demand=demand)
    probes, stop = run(spec, boundary(boundary_at))
    assert stop.reason == StopReason.PRECISION
    lo, hi = bracket(probes)
    assert lo is not None and hi is not None and lo <= boundary_at < hi
    at_demand = [p for p in probes if p.level == demand]
    assert len(at_demand) == 1, [p.level for p in probes]
    assert at_demand[0].verdict == ("pass" if demand <= boundary_at else "fail")


def test_the_demand_is_probed_as_soon_as_the_bracket_contains_it() -> None:
    spec = SearchSpec("users", 32, demand=50)
    probes = [Probe(32, "pass"), Probe(64, "fail")]
    assert decide(spec, probes) == Decision(Action.PROBE, 50, Phase.DEMAND)
    # a bracket within the precision around the demand (48-52, 10 %) still measures the demand
    probes = [Probe(48, "pass"), Probe(52, "fail")]
    assert decide(spec, probes) == Decision(Action.PROBE, 50, Phase.DEMAND)
    assert decide(spec, [*probes, Probe(50, "pass")]) == Decision(Action.STOP, reason=StopReason.PRECISION)
    # without a demand the same bracket is done
    assert decide(SearchSpec("users", 32), probes).reason == StopReason.PRECISION
    # a fractional demand of users needs the whole number above it; a rate demand is a rate
    assert decide(SearchSpec("users", 32, demand=49.5), probes).level == 50
    rate = SearchSpec("rate", 1.0, demand=2.5)
    assert decide(rate, [Probe(2, "pass"), Probe(4, "fail")]) == Decision(Action.PROBE, 2.5, Phase.DEMAND)


def test_a_step_where_every_request_failed_is_a_failing_step() -> None:
    """A single-slot server that cuts every stream at 2 concurrent: capacity 1."""
    spec = SearchSpec("users", 4, demand=4)
    probes, stop = run(spec, lambda level, _ext: "pass" if level < 2 else "fail")
    assert [p.level for p in probes] == [4, 2, 1] and stop.reason == StopReason.PRECISION
    assert bracket(probes) == (1, 2)


def test_no_extensions_means_an_inconclusive_step_is_final_at_once() -> None:
    spec = SearchSpec("users", 4, max_extensions=0)
    assert decide(spec, [Probe(4, "inconclusive")]) == Decision("probe", 2, "halve")
    assert decide(spec, [Probe(4, "inconclusive")]).action is Action.PROBE
    assert Probe(4, "pass").verdict is Verdict.PASS


def test_replay_gives_one_decision_per_step() -> None:
    spec = SearchSpec("users", 2)
    decisions = replay(spec, [(2, "pass", 0), (4, "pass", 0), (8, "fail", 0), (6, "pass", 1), (7, "fail", 0)])
    assert [d.level for d in decisions[:-1]] == [2, 4, 8, 6, 7]
    assert decisions[-1].reason == "precision"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "tokens", "minimum": 1}, "search kind"),
        ({"kind": "users", "minimum": 0}, "positive"),
        ({"kind": "users", "minimum": 1.5}, "whole number"),
        ({"kind": "users", "minimum": 8, "maximum": 4}, "below its minimum"),
        ({"kind": "rate", "minimum": 1, "precision": 0}, "fraction"),
        ({"kind": "rate", "minimum": 1, "max_steps": 0}, "step limit"),
    ],
)
def test_bad_specs_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SearchSpec(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("demand", "first"), [(50, 32), (64, 64), (63.9, 32), (400, 256), (1, 1), (1.5, 1), (0.5, 0.5)]
)
def test_a_first_level_near_the_demand_is_the_power_of_two_below_it(demand: float, first: float) -> None:
    assert start_near(demand) == first
    assert start_near(demand) <= demand < 2 * start_near(demand)  # the second probe passes the demand


def test_a_demand_that_is_no_number_is_refused() -> None:
    for bad in (0, -1, math.inf, math.nan):
        with pytest.raises(ValueError, match="positive"):
            start_near(bad)


@pytest.mark.parametrize(
    ("boundary_at", "demand"), [(24, 50), (41, 50), (44, 50), (45, 50), (53, 50), (6, 9)]
)
def test_a_plan_short_of_the_demand_stops_at_the_settled_precision(boundary_at: int, demand: int) -> None:
    """Once a level at or below the demand fails, the bracket only needs the coarser settled
    precision (the answer "short of the demand" cannot change); a plan that meets the demand is
    still bracketed to the search's own precision. Each stop is checked against its rule here."""
    fine = SearchSpec("users", start_near(demand), demand=demand)
    coarse = SearchSpec("users", start_near(demand), demand=demand, settled_precision=0.25)
    fine_probes, fine_stop = run(fine, boundary(boundary_at))
    probes, stop = run(coarse, boundary(boundary_at))
    lo, hi = bracket(probes)
    assert lo is not None and hi is not None and lo <= boundary_at < hi  # still a true bracket
    if boundary_at >= demand:  # meets the demand: refined exactly as before
        assert probes == fine_probes and stop == fine_stop
        return
    assert hi <= demand  # shown short of the demand
    if hi - lo > max(0.10 * lo, 1):  # coarser than the search's precision: stopped by the settled one
        assert stop == Decision(Action.STOP, reason=StopReason.SETTLED)
        assert hi - lo <= 0.25 * lo
        assert len(probes) < len(fine_probes)
    else:
        assert stop.reason == StopReason.PRECISION
    # the bracket before the last probe was wider than 25 %: the search stopped as soon as it could
    before = bracket(probes[:-1])
    assert before[0] is None or before[1] is None or before[1] - before[0] > 0.25 * before[0]


def test_the_demo_sequences_with_a_settled_precision() -> None:
    """The demo's plans A and C (demand 50, from 32): A stops at 24-28, C at 41-50."""
    spec = SearchSpec("users", 32, demand=50, settled_precision=0.25)
    a = [Probe(32, "fail"), Probe(16, "pass"), Probe(24, "pass"), Probe(28, "fail")]
    assert decide(spec, a[:3]) == Decision(Action.PROBE, 28, Phase.BISECT)
    assert decide(spec, a) == Decision(Action.STOP, reason=StopReason.SETTLED)
    c = [Probe(32, "pass"), Probe(64, "fail"), Probe(50, "fail"), Probe(41, "pass")]
    assert decide(spec, c[:3]) == Decision(Action.PROBE, 41, Phase.BISECT)
    assert decide(spec, c) == Decision(Action.STOP, reason=StopReason.SETTLED)
    # an inconclusive step at or below the demand settles it too (it is not shown to pass)
    undecided = [*c[:2], Probe(50, "inconclusive", 2), Probe(41, "pass")]
    assert decide(spec, undecided).reason == StopReason.SETTLED
    # without a settled precision the 10 % bisection goes on
    assert decide(SearchSpec("users", 32, demand=50), c) == Decision(Action.PROBE, 45, Phase.BISECT)
    with pytest.raises(ValueError, match="settled precision"):
        SearchSpec("users", 32, settled_precision=1.5)
