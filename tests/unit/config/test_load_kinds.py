"""The load's kinds are enums: ``LoadConfig.search`` and a plans file's ``search.kind`` a
:class:`StageKind`, written as the string it always was."""

from __future__ import annotations

import json

from llm_locust.config.build import build_config
from llm_locust.config.plans import SearchSettings
from llm_locust.config.stage_kind import StageKind

SLO = "ttft_p95<=1s"


def test_a_search_kind_is_a_member_and_written_as_its_old_string() -> None:
    config = build_config({"search": "users", "slo": SLO}, environ={})
    assert config.load.search is StageKind.USERS and not config.load.open_loop
    assert json.dumps(config.options()["search"]) == '"users"'  # summary.json's options block
    assert build_config({"search": "rate", "slo": SLO}, environ={}).load.search is StageKind.RATE
    assert SearchSettings.model_validate({"kind": "rate"}).kind is StageKind.RATE
    assert SearchSettings().kind is StageKind.USERS
