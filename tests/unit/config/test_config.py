"""The option table, the typed configuration and its file formats (no Locust, no network)."""

from __future__ import annotations

import argparse
import enum
import json
import typing
from pathlib import Path

import pytest
from pydantic import ValidationError

from llm_locust.config.build import PARTS, ConfigError, build_config, check_environment, config_from_form
from llm_locust.config.matrix import MatrixKey, parse_matrix_spec
from llm_locust.config.model import RunConfig
from llm_locust.config.options import OPTIONS, RUN_GROUPS, WORKLOAD_PROFILES, options_in
from llm_locust.config.register import register
from llm_locust.config.slo import parse_slo
from llm_locust.config.units import names_file

_PARTS = {
    "request": "request",
    "workload": "workload",
    "load": "load",
    "results": "results",
    "export": "export",
}


def _field(group: str, dest: str) -> typing.Any:
    model = typing.get_type_hints(RunConfig)[PARTS[group]]
    fields = {f.alias or name: f for name, f in model.model_fields.items()}
    return fields[dest]


def test_every_run_option_is_one_field_of_its_part_and_its_choices_agree() -> None:
    assert len({o.flag for o in OPTIONS}) == len(OPTIONS) and len({o.env for o in OPTIONS}) == len(OPTIONS)
    for opt in options_in(*RUN_GROUPS):
        if opt.group == "slo":
            assert "slo" in RunConfig.model_fields
            continue
        field = _field(opt.group, opt.dest)
        if opt.choices:
            assert _literal(field.annotation) == opt.choices, opt.flag


def _literal(annotation: typing.Any) -> tuple[str, ...]:
    if typing.get_origin(annotation) is typing.Literal:
        return typing.get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return tuple(member.value for member in annotation)
    return next(_literal(a) for a in typing.get_args(annotation) if a is not type(None))


def test_the_table_agrees_with_the_domain_modules() -> None:
    from llm_locust.load.arrivals import ARRIVAL_KINDS
    from llm_locust.load.traces import TRACE_FORMATS
    from llm_locust.workload.datasets import FORMATS
    from llm_locust.workload.limits import POLICIES
    from llm_locust.workload.profiles import PROFILES

    by_flag = {o.flag: o for o in OPTIONS}
    assert WORKLOAD_PROFILES == PROFILES
    assert by_flag["--dataset-format"].choices == FORMATS
    assert by_flag["--length-policy"].choices == POLICIES
    assert by_flag["--arrival"].choices == ARRIVAL_KINDS
    assert by_flag["--trace-format"].choices == ("auto", *TRACE_FORMATS)


def test_defaults_build_and_the_configuration_is_frozen_and_closed() -> None:
    config = build_config({}, environ={})
    assert config.load.mode is None and config.workload.max_tokens is None and config.slo is None
    with pytest.raises(ValidationError):
        config.load.ramp = (1,)  # type: ignore[misc]
    data = config.model_dump()
    data["load"]["raamp"] = "1,2"
    with pytest.raises(ValidationError, match="raamp"):
        RunConfig.model_validate(data)


def test_strings_from_anywhere_become_the_same_typed_values() -> None:
    config = build_config(
        {
            "request_rate": "4",
            "max_concurrency": "2",
            "temperature": "0.5",
            "header": ["A: b"],
            "num_users": "3",
        },
        environ={},
    )
    assert config.load.request_rate == 4.0 and config.load.max_concurrency == 2 and config.load.open_loop
    assert config.request.temperature == 0.5 and config.request.headers == {"A": "b"}
    assert config.load.num_users == 3
    blank = build_config({"request_timeout": "", "ramp": " ", "step_time": ""}, environ={})
    assert blank.request.request_timeout == 600.0 and blank.load.ramp is None and blank.load.step_time == 60.0


@pytest.mark.parametrize(
    ("values", "line"),
    [
        ({"ramp": "1,x"}, "--ramp '1,x': 'x' is not a number"),
        ({"num_users": 0}, "-u/--users '0': must be at least 1"),
        ({"num_users": -5}, "-u/--users '-5': must be at least 1"),
        ({"max_tokens": "abc"}, "--max-tokens 'abc': not a whole number"),
        ({"endpoint": "x"}, "--endpoint 'x': choose from chat, completions"),
        # an enum field (config.balance), as the web form or LLM_LOCUST_BALANCE gives it
        ({"balance": "random"}, "--balance 'random': choose from round-robin, least-in-flight"),
        ({"balance_scope": "session"}, "--balance-scope 'session': choose from request, user"),
        ({"step_time": "0s"}, "--step-time '0s': must be above 0"),
        ({"seed": "1.5"}, "--seed '1.5': not a whole number"),
        ({"ramp": "1", "trace": "t.csv"}, "--ramp and --trace cannot be combined: choose one load model"),
        ({"trace": "t.csv", "dataset": "d.jsonl"}, "--trace takes its lengths from the trace"),
        (
            {"profile": "code"},
            "--profile 'code' is Locust's run label, not the workload: use --workload code",
        ),
        ({"extra_body": "[]"}, "--extra-body '[]': must be a JSON object"),
        ({"tools": "/no/tools.json"}, "--tools '/no/tools.json': cannot read /no/tools.json"),
        ({"tools": "builtin", "endpoint": "completions"}, "--tools builtin: tool calls need --endpoint chat"),
        ({"tool_share": "2"}, "--tool-share '2': must be at most 1"),
        ({"tool_choice": "get_weather"}, "--tool-choice 'get_weather': needs --tools"),
        (
            {"tools": "builtin", "tool_choice": "lookup"},
            "--tool-choice 'lookup': not auto, required, none or a tool of --tools (get_weather, search_",
        ),
    ],
)
def test_one_line_naming_flag_and_value(values: dict[str, object], line: str) -> None:
    with pytest.raises(ConfigError) as info:
        build_config(values, environ={})
    assert str(info.value).startswith(line) and "\n" not in str(info.value)


def test_host_is_required_only_when_asked() -> None:
    assert build_config({}, environ={}).host == ""
    with pytest.raises(ConfigError, match="--host: no target given"):
        build_config({}, require_host=True, environ={})


def test_the_form_is_laid_over_the_options_and_needs_a_target() -> None:
    options = argparse.Namespace(ramp="1,2", request_rate=None, host="http://h", num_users=None)
    config = config_from_form(options, {"ramp": "", "request_rate": "4", "user_count": "3"}, environ={})
    assert config.load.mode == "--request-rate" and config.load.num_users == 3 and config.host == "http://h"
    with pytest.raises(ConfigError, match="--host"):
        config_from_form(argparse.Namespace(), {"host": ""}, environ={})


def test_api_key_falls_back_to_openai_api_key_and_never_reaches_the_options_block() -> None:
    config = build_config({}, environ={"OPENAI_API_KEY": "sk-x"})
    assert config.request.api_key_value() == "sk-x" and "sk-x" not in repr(config)
    assert "api_key" not in config.options()
    given = ["Authorization: Bearer y", "X-Api-Key: k", "User-Agent: me"]
    headers = build_config({"header": given}, environ={}).options()["headers"]
    # every value but a harmless few: a deny-list of auth-like names kept X-Api-Key (issue 10 §3)
    assert headers == {"Authorization": "<redacted>", "X-Api-Key": "<redacted>", "User-Agent": "me"}


def test_unknown_llm_locust_variables_are_refused() -> None:
    check_environment({"LLM_LOCUST_RAMP": "1", "OTHER": "x"})
    with pytest.raises(ConfigError, match="did you mean LLM_LOCUST_RAMP"):
        check_environment({"LLM_LOCUST_RAPM": "1"})


def test_the_file_rule_is_one_for_every_spec_or_file_option() -> None:
    assert names_file("slo.yaml") and names_file(" m.YML ") and names_file("dir/x.json")
    assert not names_file("ttft_p95<=5s") and not names_file("users=1,2") and not names_file("a.yaml,b")


def test_a_matrix_axis_is_a_member_from_text_file_or_mapping_and_errors_name_the_key(tmp_path: Path) -> None:
    """Axis keys are :class:`MatrixKey` members, read the same from the text, a file and a
    mapping (case and spaces as typed); they write as the strings they always were."""
    want = ((MatrixKey.USERS, ("1", "2")), (MatrixKey.INPUT, ("16",)))
    matrix = tmp_path / "m.yaml"
    matrix.write_text("Users: [1, 2]\ninput: 16\n")
    for spec in (" USERS =1,2; input=16", str(matrix), {"users": [1, 2], " Input": 16}):
        parsed = parse_matrix_spec(spec)
        assert parsed.axes == want and {type(key) for key, _ in parsed.axes} == {MatrixKey}
        assert parsed.axis(MatrixKey.INPUT) == ("16",) and parsed.axis(MatrixKey.RATE) is None
    assert json.dumps(parse_matrix_spec("users=1").model_dump()["axes"]) == '[["users", ["1"]]]'
    with pytest.raises(
        ValueError, match=r"unknown key 'uesrs' \(expected one of users, rate, input, output, profile\)"
    ):
        parse_matrix_spec("uesrs=1")
    with pytest.raises(ValueError, match="key 'users' given twice"):
        parse_matrix_spec("users=1;USERS=2")


def test_yaml_typos_are_errors_naming_the_key(tmp_path: Path) -> None:
    matrix = tmp_path / "m.yaml"
    matrix.write_text("uesrs: [1, 2]\n")
    with pytest.raises(ValueError, match="unknown key 'uesrs'"):
        parse_matrix_spec(str(matrix))
    matrix.write_text("users: [1, 2]\nstep_tiem: 2m\n")
    with pytest.raises(ValueError, match="unknown key 'step_tiem'"):
        parse_matrix_spec(str(matrix))
    slo = tmp_path / "slo.yaml"
    slo.write_text("slo:\n  ttft_p95: 5s\nsucess: 99%\n")
    with pytest.raises(ValueError, match="unknown key 'sucess'"):
        parse_slo(str(slo))
    slo.write_text("tfft_p95: 5s\n")
    with pytest.raises(ValueError, match="tfft_p95"):
        parse_slo(str(slo))


def test_plain_argparse_reads_the_environment_and_shows_it_in_the_help() -> None:
    parser = argparse.ArgumentParser()
    register(
        parser, ("workload", "load"), environ={"LLM_LOCUST_WORKLOAD": "code", "LLM_LOCUST_IGNORE_EOS": "1"}
    )
    options = parser.parse_args([])
    assert options.workload == "code" and options.ignore_eos is True
    assert "[env LLM_LOCUST_RAMP]" in parser.format_help()
