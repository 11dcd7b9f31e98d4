"""``--cancel-rate`` / ``--cancel-after``: the grammar, the draws, the typed configuration."""

from __future__ import annotations

import pytest

from llm_locust.config.build import ConfigError, build_config
from llm_locust.config.cancel import CancelKind, CancelPoint, parse_cancel_after
from llm_locust.load.cancel import CancelPolicy


@pytest.mark.parametrize(
    ("text", "kind", "low", "high"),
    [
        ("first-token", "tokens", 1, 1),
        ("2s", "seconds", 2, 2),
        ("500ms", "seconds", 0.5, 0.5),
        ("1m", "seconds", 60, 60),
        ("seconds:2.5", "seconds", 2.5, 2.5),
        ("seconds:uniform:1,10", "seconds", 1, 10),
        ("32tokens", "tokens", 32, 32),
        ("1 token", "tokens", 1, 1),
        ("tokens:uniform:5,200", "tokens", 5, 200),
    ],
)
def test_grammar(text: str, kind: str, low: float, high: float) -> None:
    spec = parse_cancel_after(text)
    assert (spec.kind, spec.low, spec.high) == (kind, low, high)
    assert spec.kind is CancelKind(kind)  # the member, spelt as the grammar's word


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("soon", "expected first-token, a duration"),
        ("0s", "a cancel time is above 0 s"),
        ("tokens:0", "at least 1 token"),
        ("seconds:uniform:5,1", "uniform bounds reversed"),
        ("tokens:x", "'x' is not a number"),
        ("seconds:nan", "not a finite number"),
    ],
)
def test_bad_specs_say_why(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_cancel_after(text)


def test_draws_follow_the_rate_and_each_client_has_its_own_stream() -> None:
    policy = CancelPolicy(0.3, parse_cancel_after("tokens:uniform:10,20"), seed=7)
    first, second = policy.draws(), policy.draws()
    points = [first.next() for _ in range(10_000)]
    cancelled = [p for p in points if p is not None]
    assert abs(len(cancelled) / len(points) - 0.3) < 0.015  # 3 sigma of a binomial(10000, 0.3)
    assert all(p.seconds is None and 10 <= (p.chunks or 0) <= 20 for p in cancelled)
    assert {p.chunks for p in cancelled} == set(range(10, 21))
    assert [second.next() for _ in range(50)] != points[:50]  # another client, another stream
    again = CancelPolicy(0.3, parse_cancel_after("tokens:uniform:10,20"), seed=7).draws()
    assert [again.next() for _ in range(50)] == points[:50]  # reproducible by ordinal
    assert CancelPolicy(0.0, parse_cancel_after("2s")).draws().next() is None
    assert CancelPolicy(1.0, parse_cancel_after("2s")).draws().next() == CancelPoint(seconds=2.0)


def test_options_build_typed_and_bad_values_are_one_line() -> None:
    config = build_config({"cancel_rate": "0.25", "cancel_after": "3s"}, environ={})
    assert config.request.cancel_rate == 0.25 and config.request.cancel_after.kind is CancelKind.SECONDS
    assert config.options()["cancel_after"] == "3s"
    default = build_config({}, environ={})
    assert default.request.cancel_rate == 0 and str(default.request.cancel_after) == "first-token"
    for values, line in (
        ({"cancel_rate": "1.5"}, "--cancel-rate '1.5': "),
        ({"cancel_after": "soon"}, "--cancel-after 'soon': expected first-token"),
    ):
        with pytest.raises(ConfigError) as info:
            build_config(values, environ={})
        assert str(info.value).startswith(line) and "\n" not in str(info.value), str(info.value)


def test_the_web_forms_strings_build_the_same_options() -> None:
    import argparse

    from llm_locust.config.build import config_from_form

    options = argparse.Namespace(host="http://h", cancel_rate=0.0, cancel_after="first-token")
    config = config_from_form(
        options, {"cancel_rate": "0.2", "cancel_after": "tokens:uniform:2,9"}, environ={}
    )
    assert config.request.cancel_rate == 0.2 and (
        config.request.cancel_after.low,
        config.request.cancel_after.high,
    ) == (2, 9)
    with pytest.raises(ConfigError, match="--cancel-after 'never': expected"):
        config_from_form(options, {"cancel_after": "never"}, environ={})
