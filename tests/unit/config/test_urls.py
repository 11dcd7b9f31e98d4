"""A target's address (issue 26 §4): an http:// or https:// URL with a host, checked where it is read.

Before, ``--host 'not a url'`` ended in a traceback inside the HTTP client (exit 1),
``ftp://127.0.0.1:21`` was spoken to over HTTP, ``127.0.0.1:8000`` was reported as an unknown
host, and ``http://`` or ``http://:8000`` in a plan file were searched as plans. Each is now one
line naming the flag (or the plan file's key), the value, and what is expected.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_locust.config.build import ConfigError, build_config, config_from_form
from llm_locust.config.plans import PlanFileError, load_plan_file

EXPECTED = "expected an http:// or https:// URL with a host"
BAD = [
    ("not a url", "contains blanks"),
    ("ftp://127.0.0.1:21", "scheme 'ftp' is not http or https"),
    ("127.0.0.1:8000", "no scheme"),
    ("localhost", "no scheme"),
    ("http://", "no host"),
    ("http://:8000", "no host"),
    ("https:///v1", "no host"),
    ("http://127.0.0.1:port", "the port is not a number from 1 to 65535"),
    ("http://127.0.0.1:0", "the port is not a number from 1 to 65535"),
    ("http://[::1", "not a URL (invalid ipv6 url)"),
    ("http://127.0.0.1:8000/v1?x=1", "a base URL has no query or fragment"),
]
GOOD = ["http://127.0.0.1:8000", "https://127.0.0.1", "http://[::1]:8000/v1", "HTTP://LOCALHOST:1"]


@pytest.mark.parametrize(("value", "reason"), BAD)
def test_a_bad_host_is_one_line_naming_flag_value_and_what_is_expected(value: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        build_config({"host": value}, environ={})
    assert str(info.value) == f"--host '{value}': {reason}: {EXPECTED}, e.g. http://127.0.0.1:8000"


@pytest.mark.parametrize(("value", "reason"), BAD)
def test_a_bad_endpoints_entry_is_named_alone(value: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        build_config({"endpoints": f"http://127.0.0.1:1,{value}"}, environ={})
    assert str(info.value).startswith(f"--endpoints '{value}': {reason}: {EXPECTED}"), str(info.value)


@pytest.mark.parametrize(("value", "reason"), BAD)
def test_a_bad_host_in_the_web_form_is_refused(value: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        config_from_form(None, {"host": value, "user_count": "1"}, environ={})
    assert str(info.value).startswith(f"--host '{value}': {reason}"), str(info.value)


@pytest.mark.parametrize(("value", "reason"), [b for b in BAD if "'" not in b[0]])
def test_a_bad_plan_endpoint_names_the_file_and_key(tmp_path: Path, value: str, reason: str) -> None:
    path = tmp_path / "plans.yaml"
    path.write_text(
        'demand: {concurrency: 2}\nslo: "success>=99%"\n'
        f"plans:\n  - {{name: A, endpoints: ['http://127.0.0.1:1', '{value}'], gpus: 2, gpu_hour_cost: 1}}\n"
    )
    with pytest.raises(PlanFileError) as info:
        load_plan_file(path)
    assert str(info.value) == f"{path}: plans[0].endpoints: endpoint '{value}': {reason}: {EXPECTED}, " + (
        "e.g. http://127.0.0.1:8000"
    )


@pytest.mark.parametrize("value", GOOD)
def test_good_addresses_pass(value: str) -> None:
    assert build_config({"host": value}, environ={}).host == value
    assert build_config({"endpoints": value}, environ={}).request.endpoints == (value.rstrip("/"),)


def test_a_key_in_a_bad_address_is_never_shown() -> None:
    with pytest.raises(ConfigError) as info:
        build_config({"host": "http://user:sk-secret@127.0.0.1:port"}, environ={})
    assert "sk-secret" not in str(info.value) and "127.0.0.1:port" in str(info.value)
