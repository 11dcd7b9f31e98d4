"""Command-line options, declared once and registered on two kinds of parser.

Locust's parser (configargparse, via ``events.init_command_line_parser``) shows custom
options in the web UI's start form and reads ``LLM_LOCUST_*`` environment variables; the
``llm-locust`` CLI uses plain argparse for its subcommands. :func:`add_argument` hides the
difference so every module declares its options the same way.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

__all__ = ["add_argument", "env_name"]


def env_name(flag: str) -> str:
    """``--max-tokens`` -> ``LLM_LOCUST_MAX_TOKENS``."""
    return "LLM_LOCUST_" + flag.lstrip("-").replace("-", "_").upper()


def add_argument(parser: Any, flag: str, *, web_ui: bool = True, **kwargs: Any) -> None:
    """Add ``flag`` to ``parser`` with an ``LLM_LOCUST_*`` environment variable.

    On Locust's parser the option also appears in the web UI's start form unless
    ``web_ui`` is false (secrets are marked ``is_secret`` there).
    """
    kwargs.setdefault("env_var", env_name(flag))
    if _is_configargparse(parser):
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
    return type(parser).__module__.startswith(("configargparse", "locust"))
