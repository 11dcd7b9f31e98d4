"""Seeds: same seed, same sequence; different seed, different; streams disjoint."""

from __future__ import annotations

import pytest

from llm_locust.workload.build import build_workload
from tests.unit.workload.args import workload_config


def _wl(*argv: str):
    return build_workload(workload_config(*argv))


def _seq(w, index: int, n: int = 50) -> list[tuple]:
    src = w.source(index)
    out = []
    for _ in range(n):
        s = src.next_request()
        out.append((s.prompt, s.max_tokens, s.target_input_tokens))
        src.observe(s, "a reply.", True)
    return out


@pytest.mark.parametrize(
    "argv",
    [
        ("--workload", "code"),
        ("--input-tokens", "lognormal:mean=300,std=100"),
        ("--workload", "long-context", "--max-model-len", "20000"),
        ("--prompt-tokens", "40", "--multi-turn", "3"),
    ],
)
def test_same_seed_same_sequence(argv: tuple[str, ...]) -> None:
    a = _seq(_wl(*argv, "--seed", "5"), 3)
    b = _seq(_wl(*argv, "--seed", "5"), 3)
    c = _seq(_wl(*argv, "--seed", "6"), 3)
    assert a == b
    assert a != c


def test_streams_are_disjoint_and_independent_of_other_streams() -> None:
    w = _wl("--workload", "chat", "--seed", "1")
    s0, s1 = _seq(w, 0), _seq(w, 1)
    assert not {p for p, *_ in s0} & {p for p, *_ in s1}
    assert [x[1:] for x in s0] != [x[1:] for x in s1]
    # a stream's sequence does not depend on which other streams exist or were drawn first
    w2 = _wl("--workload", "chat", "--seed", "1")
    assert _seq(w2, 1) == s1


def test_union_does_not_depend_on_worker_split() -> None:
    """Four streams on one worker or two workers (separate workload objects): same union."""
    one = _wl("--workload", "sharegpt", "--seed", "9")
    union_one = {x for i in range(4) for x in _seq(one, i, 20)}
    wa, wb = _wl("--workload", "sharegpt", "--seed", "9"), _wl("--workload", "sharegpt", "--seed", "9")
    union_two = {x for i in (0, 2) for x in _seq(wa, i, 20)} | {x for i in (1, 3) for x in _seq(wb, i, 20)}
    assert union_one == union_two
    assert len(union_one) == 80  # no duplicates across streams
