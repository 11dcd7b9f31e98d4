"""A stage as the files keep it: Stage.to_json writes through StageBlock (search.json's model) and
Stage.of reads it back, so the plan's stage and the file's cannot drift (review D2)."""

from __future__ import annotations

import dataclasses
import json

from llm_locust.config.stage_kind import StageKind
from llm_locust.load.stages import Stage, StageBlock
from llm_locust.results.search_model import StepRecord
from llm_locust.results.summary_model import RunSummary, StageRow


def test_every_field_of_a_stage_has_its_key_in_the_file_model() -> None:
    assert {f.name for f in dataclasses.fields(Stage)} == set(StageBlock.model_fields)


def test_a_stage_reads_back_as_it_was_written() -> None:
    stages = [
        Stage(index=2, kind=StageKind.RATE, target=2.5, duration_s=30.0, start_s=60.0, spawn_rate=None,
              warmup_s=5.0, input="long", output="short", profile="chat", label="rate=2.5 long"),
        Stage(index=0, kind=StageKind.USERS, target=8.0, duration_s=10.0, spawn_rate=4.0, label="users=8"),
    ]  # fmt: skip
    for stage in stages:
        text = json.dumps(stage.to_json())  # as run.json and search.json hold it
        assert Stage.of(StageBlock.model_validate_json(text)) == stage
    # the keys a plain ramp's stage always had, and only the overrides it has
    assert list(stages[1].to_json()) == [
        "index", "kind", "target", "start_s", "duration_s", "spawn_rate", "warmup_s", "label",
    ]  # fmt: skip
    assert stages[0].to_json()["input"] == "long" and "input" not in stages[1].to_json()
    step = StepRecord.model_validate(
        {"index": 2, "level": 2.5, "stage": stages[0].to_json(), "begin": 0.0, "applied": 0.0}
    )
    assert Stage.of(step.stage) == stages[0]


def test_a_stage_row_reads_its_kind_as_a_member_and_writes_it_as_before() -> None:
    text = '{"index": 1, "kind": "rate", "target": 2.5}'  # as summary.json's stage table holds it
    row = StageRow.model_validate_json(text)
    assert row.kind is StageKind.RATE and StageRow().kind is StageKind.USERS
    assert json.dumps(row.model_dump(exclude_unset=True)) == text
    summary = RunSummary.model_validate({"stages": [json.loads(text)]})
    assert summary.stages is not None and summary.stages[0].kind is StageKind.RATE
    assert json.dumps(summary.to_json()) == '{"stages": [' + text + "]}"
