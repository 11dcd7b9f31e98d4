"""The load's kinds are enums: ``LoadConfig.mode`` a :class:`LoadMode` (its value the flag the
messages print), ``LoadConfig.search`` and a plans file's ``search.kind`` a :class:`StageKind`;
each is written as the string it always was."""

from __future__ import annotations

import json

import pytest

from llm_locust.config.build import build_config
from llm_locust.config.load_config import LoadConfig, LoadMode
from llm_locust.config.plans import SearchSettings
from llm_locust.config.stage_kind import StageKind

SLO = "ttft_p95<=1s"


@pytest.mark.parametrize(
    ("values", "mode"),
    [
        ({"ramp": "1,2"}, LoadMode.RAMP),
        ({"matrix": "users=1,2;input=128"}, LoadMode.MATRIX),
        ({"request_rate": "2"}, LoadMode.REQUEST_RATE),
        ({"rate_ramp": "1,2"}, LoadMode.RATE_RAMP),
        ({"trace": "t.csv"}, LoadMode.TRACE),
        ({"search": "rate", "slo": SLO}, LoadMode.SEARCH),
    ],
)
def test_the_load_model_is_a_mode_whose_value_is_its_flag(values: dict[str, str], mode: LoadMode) -> None:
    load = build_config(values, environ={}).load
    assert load.mode is mode
    assert f"{load.mode}" == str(load.mode) == mode.value == "--" + mode.field.replace("_", "-")
    assert mode.field in LoadConfig.model_fields


def test_locust_s_own_users_are_no_mode() -> None:
    assert build_config({"num_users": "3"}, environ={}).load.mode is None


def test_a_search_kind_is_a_member_and_written_as_its_old_string() -> None:
    config = build_config({"search": "users", "slo": SLO}, environ={})
    assert config.load.search is StageKind.USERS and not config.load.open_loop
    assert json.dumps(config.options()["search"]) == '"users"'  # summary.json's options block
    assert build_config({"search": "rate", "slo": SLO}, environ={}).load.search is StageKind.RATE
    assert SearchSettings.model_validate({"kind": "rate"}).kind is StageKind.RATE
    assert SearchSettings().kind is StageKind.USERS
