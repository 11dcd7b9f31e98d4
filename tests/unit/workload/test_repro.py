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


# -- the prompt salt (issue 22 §7) ---------------------------------------------------------


def _sent(w, index: int, n: int = 30) -> list[tuple]:
    """(the text sent: system message and prompt, max tokens, target input tokens) per request."""
    src = w.source(index)
    out = []
    for _ in range(n):
        s = src.next_request()
        system = "".join(m["content"] for m in s.messages or () if m["role"] == "system")
        out.append((system + "|" + s.prompt, s.max_tokens, s.target_input_tokens))
        src.observe(s, "a reply.", True)
    return out


@pytest.mark.parametrize(
    "argv",
    [
        ("--workload", "chat"),
        ("--prompt-tokens", "300", "--shared-prefix-fraction", "1", "--shared-prefix-tokens", "128"),
        ("--workload", "long-context", "--max-model-len", "20000"),
        ("--prompt-tokens", "40", "--multi-turn", "3"),
    ],
)
def test_the_salt_changes_every_text_and_nothing_else(argv: tuple[str, ...]) -> None:
    plain = _sent(_wl(*argv, "--seed", "5", "--prompt-salt", "one"), 2)
    again = _sent(_wl(*argv, "--seed", "5", "--prompt-salt", "one"), 2)
    other = _sent(_wl(*argv, "--seed", "5", "--prompt-salt", "two"), 2)
    assert plain == again  # a salt repeats a run exactly
    assert [x[1:] for x in plain] == [x[1:] for x in other]  # lengths: the seed's alone
    # no request of one salt opens like any request of the other: a prefix cache finds nothing
    assert not {t[:60] for t, *_ in plain} & {t[:60] for t, *_ in other}


def test_intended_shared_prefixes_stay_shared_within_a_salt() -> None:
    argv = ("--prompt-tokens", "300", "--shared-prefix-fraction", "1", "--shared-prefixes", "1")
    w = _wl(*argv, "--shared-prefix-tokens", "128", "--prompt-salt", "s")
    systems = {t.split("|")[0] for i in (0, 1) for t, *_ in _sent(w, i, 10)}
    assert len(systems) == 1 and len(next(iter(systems))) > 100  # one system prompt for every stream
    other = _wl(*argv, "--shared-prefix-tokens", "128", "--prompt-salt", "t")
    assert not systems & {t.split("|")[0] for t, *_ in _sent(other, 0, 10)}


def test_a_session_keeps_its_history_within_a_salt() -> None:
    w = _wl("--prompt-tokens", "40", "--multi-turn", "3", "--prompt-salt", "s")
    src = w.source(0)
    first = src.next_request()
    src.observe(first, "a reply.", True)
    second = src.next_request()
    assert second.messages[0]["content"] == first.messages[0]["content"]  # the history, sent again
