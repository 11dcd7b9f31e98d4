"""The role a process plays: from the command line, and written as the strings runs always wrote."""

from __future__ import annotations

import argparse
import json

import orjson

from llm_locust.config.role import Role, role_of_options


def test_roles_from_the_options() -> None:
    assert role_of_options(argparse.Namespace(worker=True)) is Role.WORKER
    assert role_of_options(argparse.Namespace(master=True)) is Role.MASTER
    assert role_of_options(argparse.Namespace(processes=4)) is Role.MASTER
    assert role_of_options(argparse.Namespace()) is Role.LOCAL
    assert role_of_options(None) is Role.LOCAL


def test_a_role_is_written_as_its_old_string() -> None:
    # summary.json (json), the web UI's state (json), the records (orjson), logs (str, f-strings)
    old = {Role.LOCAL: "local", Role.MASTER: "master", Role.WORKER: "worker"}
    assert set(old) == set(Role)
    for role, text in old.items():
        assert json.loads(json.dumps({"role": role})) == {"role": text}
        assert json.dumps(role) == f'"{text}"'
        assert orjson.loads(orjson.dumps({"role": role})) == {"role": text}
        assert str(role) == f"{role}" == text
        assert Role(text) is role and role == text
