"""Parsed option values in, one validated :class:`~llm_locust.config.model.RunConfig` out.

Three entry points, one path:

- :func:`config_from_options`: Locust's parsed options (a namespace), once per process at
  ``init``, and again at a test's start only if the options changed (a worker takes the
  master's options with every test);
- :func:`config_from_form`: the web UI's start form laid over those options (its values are
  strings), once per test started from the form;
- :func:`build_config`: a plain mapping ``dest -> value`` (tests, ``llm-locust workload``).

Values may be strings (command line, environment, form) or typed (Locust's own defaults);
an empty string means "not given", i.e. the table's default. Every problem becomes one
:class:`ConfigError` line that names the flag and the value as given: ``--ramp '1,x': 'x'
is not a number``. Locust's own options that matter to a run (``--host``, ``-u``, ``-r``,
``-t``, ``--headless``) are read from the same namespace and checked the same way.

Pure module: no Locust, no network.
"""

from __future__ import annotations

import argparse
import difflib
import os
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from llm_locust.config.load_config import LoadMode
from llm_locust.config.matrix import MatrixKey
from llm_locust.config.model import RunConfig
from llm_locust.config.options import OPTIONS, RUN_GROUPS, WORKLOAD_PROFILES, options_in
from llm_locust.config.stage_kind import StageKind
from llm_locust.config.units import OptionError, show
from llm_locust.config.urls import check_target_url

__all__ = [
    "LOCUST_FLAGS",
    "PARTS",
    "ConfigError",
    "build_config",
    "check_environment",
    "config_from_form",
    "config_from_options",
    "load_warnings",
    "raw_values",
]

#: Locust's options that the configuration reads: destination -> the flag in messages.
LOCUST_FLAGS = {
    "host": "--host",
    "num_users": "-u/--users",
    "spawn_rate": "-r/--spawn-rate",
    "run_time": "-t/--run-time",
    "headless": "--headless",
}
PARTS = {
    "request": "request",
    "workload": "workload",
    "load": "load",
    "results": "results",
    "export": "export",
}
_LOAD_FROM_LOCUST = ("num_users", "spawn_rate", "run_time")
_FLAGS = {o.dest: o.flag for o in OPTIONS} | {"headers": "--header"} | LOCUST_FLAGS
_FORM_KEYS = {"user_count": "num_users"}  # the start form's names for Locust's options
_ENV_PREFIX = "LLM_LOCUST_"


class ConfigError(ValueError):
    """A bad configuration: one line, naming the flag and the value."""


def raw_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """Every run option's value from ``values`` (by destination), the table's default where absent."""
    out: dict[str, Any] = {}
    for opt in options_in(*RUN_GROUPS):
        value = values.get(opt.dest)
        if isinstance(value, str):
            value = value.strip()
        if value is None or value == "" or value == []:
            value = opt.default
        if opt.action == "flag":
            value = _truth(value, opt.flag)
        out[opt.dest] = value
    return out


def _truth(value: object, flag: str) -> bool:
    if isinstance(value, bool) or value is None:
        return bool(value)
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("", "0", "false", "no", "off"):
        return False
    raise ConfigError(f"{flag} {show(value)}: expected true or false")


def build_config(
    values: Mapping[str, Any] | None = None,
    *,
    require_host: bool = False,
    environ: Mapping[str, str] | None = None,
) -> RunConfig:
    """The configuration for ``values`` (``dest -> value``, plus Locust's keys of :data:`LOCUST_FLAGS`).

    ``require_host``: a run that starts load by itself (headless, local or master) needs a target.
    ``environ`` supplies ``OPENAI_API_KEY`` when ``--api-key`` is not given.
    """
    values = dict(values or {})
    env = os.environ if environ is None else environ
    raw = raw_values(values)
    if raw["api_key"] is None and env.get("OPENAI_API_KEY"):
        raw["api_key"] = env["OPENAI_API_KEY"]
    _check_profile_label(values.get("profile"), raw["workload"])
    host = str(values.get("host") or "").strip()
    try:
        host = check_target_url(host, "--host") if host else _first_endpoint(raw["endpoints"])
    except OptionError as exc:
        raise ConfigError(str(exc)) from None
    if require_host and not host:
        raise ConfigError("--host: no target given (e.g. --host http://127.0.0.1:8000)")
    data: dict[str, Any] = {"host": host, "headless": bool(values.get("headless")), "slo": raw.pop("slo")}
    for group, part in PARTS.items():
        data[part] = {o.dest: raw[o.dest] for o in options_in(group)}
    data["load"].update({k: _blank_none(values.get(k)) for k in _LOAD_FROM_LOCUST})
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe(exc)) from None


def load_warnings(config: RunConfig) -> list[str]:
    """Options the load model overrules, one line each: ``-u`` with a model that sets the users."""
    load = config.load
    if load.num_users is None:
        return []
    user_axis = load.matrix is not None and load.matrix.axis(MatrixKey.USERS) is not None
    if load.mode is LoadMode.RAMP or (load.mode is LoadMode.MATRIX and user_axis):
        decides = str(load.mode)
    elif load.search is StageKind.USERS:
        decides = f"{LoadMode.SEARCH} {load.search}"
    else:
        return []
    return [f"-u/--users {load.num_users} is ignored: {decides} decides the number of users of each stage"]


def _first_endpoint(endpoints: object) -> str:
    """With ``--endpoints`` and no ``--host``, the first replica stands in for Locust's target."""
    if isinstance(endpoints, str):
        return endpoints.split(",")[0].strip().rstrip("/")
    if isinstance(endpoints, (list, tuple)) and endpoints:
        return str(endpoints[0]).rstrip("/")
    return ""


def _blank_none(value: object) -> object:
    return None if isinstance(value, str) and not value.strip() else value


def _check_profile_label(label: object, workload: object) -> None:
    """Locust's ``--profile`` is a run label; naming a workload profile there would silently do nothing."""
    if workload is None and isinstance(label, str) and label.strip() in WORKLOAD_PROFILES:
        name = label.strip()
        raise ConfigError(
            f"--profile {name!r} is Locust's run label, not the workload: use --workload {name} "
            "(env LLM_LOCUST_WORKLOAD)"
        )


def config_from_options(
    options: argparse.Namespace | None,
    *,
    require_host: bool = False,
    environ: Mapping[str, str] | None = None,
) -> RunConfig:
    """The configuration from Locust's parsed options (``None``: every default)."""
    return build_config(
        vars(options) if options is not None else {}, require_host=require_host, environ=environ
    )


def config_from_form(
    options: argparse.Namespace | None, form: Mapping[str, str], *, environ: Mapping[str, str] | None = None
) -> RunConfig:
    """The configuration a test started from the web UI's form will run with.

    ``form`` holds the POSTed fields (strings) of ``/swarm``; fields the form does not send
    keep their value in ``options``. A test started from the form always needs a target.
    """
    values = dict(vars(options)) if options is not None else {}
    known = {o.dest for o in OPTIONS} | set(LOCUST_FLAGS) | {"profile"}
    for key, value in form.items():
        dest = _FORM_KEYS.get(key, key)
        if dest in known:
            values[dest] = value
    return build_config(values, require_host=True, environ=environ)


def check_environment(environ: Mapping[str, str] | None = None) -> None:
    """An ``LLM_LOCUST_*`` variable that is no option's would be ignored: refuse it, with a hint."""
    env = os.environ if environ is None else environ
    label = env.get("LOCUST_PROFILE", "").strip()
    if label in WORKLOAD_PROFILES:  # Locust reads no such variable: it would do nothing at all
        raise ConfigError(
            f"environment variable LOCUST_PROFILE={label}: Locust does not read it (its --profile is a run "
            f"label); the workload profile is LLM_LOCUST_WORKLOAD={label}"
        )
    known = {o.env for o in OPTIONS if o.env_var}
    for name in sorted(n for n in env if n.startswith(_ENV_PREFIX) and n not in known):
        hint = {"LLM_LOCUST_PROFILE": "LLM_LOCUST_WORKLOAD", "LLM_LOCUST_HOST": "LOCUST_HOST"}.get(name)
        close = [hint] if hint else difflib.get_close_matches(name, sorted(known), n=1)
        suggestion = f" (did you mean {close[0]}?)" if close else ""
        raise ConfigError(f"environment variable {name}: not an llm-locust option{suggestion}")


# -- messages ----------------------------------------------------------------------------


def describe(exc: ValidationError) -> str:
    """The first problem of a validation error as one line naming the flag and the value."""
    err = exc.errors(include_url=False)[0]
    dest = next((p for p in reversed(err["loc"]) if isinstance(p, str) and p in _FLAGS), None)
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, OptionError):
        return str(cause)
    reason = _reason(err)
    if dest is None or reason.startswith("-"):
        return reason  # a rule across options, or a message that names its flag itself
    return f"{_FLAGS[dest]} {show(err.get('input'))}: {reason}"


def _reason(err: ErrorDetails) -> str:
    ctx = err.get("ctx") or {}
    kind = err["type"]
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return "not a whole number"
    if kind in ("float_parsing", "float_type"):
        return "not a number"
    if kind == "finite_number":
        return "must be a finite number"
    if kind in ("greater_than", "greater_than_equal", "less_than_equal", "less_than"):
        word = {"greater_than": "above", "greater_than_equal": "at least", "less_than_equal": "at most"}
        bound = next(iter(ctx.values()))
        return f"must be {word.get(kind, 'below')} {bound:g}"
    if kind in ("literal_error", "enum"):
        return f"choose from {ctx.get('expected', '').replace(chr(39), '')}".replace(" or ", ", ")
    if kind == "bool_parsing":
        return "expected true or false"
    msg = str(err.get("msg", ""))
    return msg.removeprefix("Value error, ")
