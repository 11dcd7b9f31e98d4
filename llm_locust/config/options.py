"""Command-line options, declared once and registered on two kinds of parser.

Locust's parser (configargparse, via ``events.init_command_line_parser``) shows custom
options in the web UI's start form and reads ``LLM_LOCUST_*`` environment variables; the
``llm-locust`` CLI uses plain argparse for its subcommands. :func:`add_argument` hides the
difference so every module declares its options the same way.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

__all__ = [
    "OptionError",
    "add_argument",
    "api_key_from",
    "env_name",
    "parse_extra_body",
    "parse_headers",
    "register_request_options",
    "registered_names",
]


_REGISTERED: set[str] = set()


def registered_names() -> list[str]:
    """Destination names of every option declared through :func:`add_argument`."""
    return sorted(_REGISTERED)


def env_name(flag: str) -> str:
    """``--max-tokens`` -> ``LLM_LOCUST_MAX_TOKENS``."""
    return "LLM_LOCUST_" + flag.lstrip("-").replace("-", "_").upper()


def add_argument(parser: Any, flag: str, *, web_ui: bool = True, **kwargs: Any) -> None:
    """Add ``flag`` to ``parser`` with an ``LLM_LOCUST_*`` environment variable.

    On Locust's parser the option also appears in the web UI's start form unless
    ``web_ui`` is false (secrets are marked ``is_secret`` there).
    """
    kwargs.setdefault("env_var", env_name(flag))
    _REGISTERED.add(kwargs.get("dest") or flag.lstrip("-").replace("-", "_"))
    if _is_configargparse(parser):
        if flag in getattr(parser, "_option_string_actions", {}):
            # Locust already has it (``--profile``): share Locust's option and its value.
            return
        if web_ui:
            kwargs.setdefault("include_in_web_ui", True)
        else:
            kwargs["include_in_web_ui"] = False
        parser.add_argument(flag, **kwargs)
        return
    env = kwargs.pop("env_var")
    if env in os.environ and kwargs.get("action") not in ("store_true", "store_false", "append"):
        kwargs["default"] = os.environ[env]  # argparse applies ``type`` to string defaults
    kwargs.pop("is_secret", None)
    kwargs.pop("include_in_web_ui", None)
    help_text = kwargs.get("help")
    if help_text is not None and help_text is not argparse.SUPPRESS:
        kwargs["help"] = f"{help_text} [env {env}]"
    parser.add_argument(flag, **kwargs)


def _is_configargparse(parser: Any) -> bool:
    return type(parser).__module__.startswith("locust")


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def register_request_options(parser: Any) -> None:
    """The options of the request itself and of the results folder (issue: streaming core)."""
    add_argument(
        parser,
        "--model",
        default=None,
        help="Model name to request (default: the first id from GET /v1/models)",
    )
    add_argument(
        parser,
        "--api-key",
        default=None,
        is_secret=True,
        help="Bearer token (default: $OPENAI_API_KEY); never printed or written to results",
    )
    add_argument(
        parser,
        "--endpoint",
        choices=["chat", "completions"],
        default="chat",
        help="chat -> /v1/chat/completions, completions -> /v1/completions",
    )
    add_argument(
        parser,
        "--max-tokens",
        type=_positive_int,
        default=None,
        help="max_tokens for every request (default: from the workload)",
    )
    add_argument(parser, "--temperature", type=float, default=None, help="Sampling temperature")
    add_argument(
        parser,
        "--extra-body",
        default="",
        help='JSON object merged into every request body, e.g. {"ignore_eos": true}',
    )
    add_argument(
        parser,
        "--header",
        action="append",
        default=None,
        web_ui=False,
        help="Extra HTTP header K:V (repeatable)",
    )
    add_argument(
        parser,
        "--request-timeout",
        type=_positive_float,
        default=600.0,
        help="Seconds before a request counts as a timeout",
    )
    add_argument(
        parser,
        "--ca-cert",
        default=None,
        help="PEM file of the CA(s) to trust for an https target (a private CA); host names still checked",
    )
    add_argument(
        parser,
        "--insecure",
        action="store_true",
        default=False,
        help="Do not verify the target's TLS certificate (a self-signed test server); warns",
    )
    add_argument(
        parser,
        "--skip-preflight",
        action="store_true",
        default=False,
        help="Send load without first checking the target (reachable, authorised, model served, "
        "one short streaming request)",
    )
    add_argument(
        parser,
        "--results-dir",
        default="",
        help="Write requests.jsonl (as requests finish) and summary.json here",
    )
    add_argument(
        parser,
        "--overwrite",
        action="store_true",
        default=False,
        help="Allow a --results-dir that already holds results",
    )


class OptionError(ValueError):
    """A bad option value; the message names the flag and fits on one line."""


def parse_extra_body(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise OptionError(f"--extra-body: not valid JSON ({exc.msg} at position {exc.pos})") from None
    if not isinstance(value, dict):
        raise OptionError("--extra-body: must be a JSON object, e.g. '{\"ignore_eos\": true}'")
    return value


def parse_headers(values: list[str] | None) -> dict[str, str]:
    headers: dict[str, str] = {}
    for item in values or []:
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            raise OptionError(f"--header {item!r}: expected NAME:VALUE")
        headers[name.strip()] = value.strip()
    return headers


def api_key_from(options: Any) -> str | None:
    """``--api-key`` / ``LLM_LOCUST_API_KEY``, else ``OPENAI_API_KEY``."""
    return getattr(options, "api_key", None) or os.environ.get("OPENAI_API_KEY") or None
