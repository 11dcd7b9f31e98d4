"""The option table on a parser: Locust's (with the web UI and ``LLM_LOCUST_*``) or plain argparse.

- :func:`register` on Locust's parser (``events.init_command_line_parser``, configargparse):
  each option gets its ``env_var``, and ``include_in_web_ui`` / ``is_secret`` for the start
  form. No ``type=``: every value reaches :mod:`llm_locust.config.build` as the user gave it
  (a string), so the command line, the environment and the form are validated by the same
  code with the same one-line messages.
- :func:`register` on a plain ``argparse`` parser (``llm-locust workload``): the environment
  variable, if set, is the default; the help names it.
- :func:`help_parser`: ``llm-locust run --help``, every run option by group.

Pure module: no Locust, no network (a Locust parser is recognised by what it has).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import Any, NoReturn

from llm_locust.config.jsontypes import JsonObject, JsonValue
from llm_locust.config.option import SECTIONS
from llm_locust.config.options import RUN_GROUPS, Option, options_in

__all__ = ["OneLineParser", "form_layout", "help_parser", "is_locust_parser", "register", "section_order"]

_TRUE = ("1", "true", "yes", "on")


class OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one line (``prog: error: message``, no usage block), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def is_locust_parser(parser: object) -> bool:
    """Locust's ``LocustArgumentParser`` knows which options its web UI shows."""
    return hasattr(parser, "args_included_in_web_ui")


def register(
    parser: argparse.ArgumentParser,
    groups: tuple[str, ...] = RUN_GROUPS,
    *,
    environ: Mapping[str, str] | None = None,
    titled: bool = False,
    only: tuple[str, ...] | None = None,
) -> None:
    """Add every option of ``groups`` (or those of them whose destination is in ``only``) to
    ``parser``; a flag the parser already has is left alone. ``titled``: under the headings
    of :data:`SECTIONS`, in their order (the start form shows the same)."""
    locust = is_locust_parser(parser)
    env = os.environ if environ is None else environ
    chosen = [o for group in groups for o in options_in(group) if only is None or o.dest in only]
    if titled:
        chosen.sort(key=section_order)
    headings: dict[str, argparse._ArgumentGroup] = {}
    for opt in chosen:
        if opt.flag in getattr(parser, "_option_string_actions", {}):
            continue
        target: argparse._ActionsContainer = parser
        if titled:
            if opt.section not in headings:
                headings[opt.section] = parser.add_argument_group(opt.section)
            target = headings[opt.section]
        flags = [opt.short, opt.flag] if opt.short else [opt.flag]
        kwargs = _kwargs(opt)
        if locust:
            kwargs.update(include_in_web_ui=opt.web_ui, is_secret=opt.secret)
            if opt.env_var:
                kwargs["env_var"] = opt.env
        else:
            _plain_env(opt, kwargs, env)
        target.add_argument(*flags, **kwargs)


def section_order(opt: Option) -> tuple[int, bool]:
    """Where ``opt`` goes in the help and the start form: its section's place, the SLO first in
    its section (then the search it judges)."""
    rank = SECTIONS.index(opt.section) if opt.section in SECTIONS else len(SECTIONS)
    return rank, opt.group != "slo"


def _kwargs(opt: Option) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"dest": opt.dest, "help": opt.help.replace("%", "%%")}
    if opt.action == "flag":
        kwargs.update(action="store_true", default=False)
    elif opt.action == "append":
        kwargs.update(action="append", default=None)
    else:
        kwargs.update(default=opt.default, choices=opt.choices, metavar=opt.metavar)
    return kwargs


def _plain_env(opt: Option, kwargs: dict[str, Any], env: Mapping[str, str]) -> None:
    """argparse has no environment variables: a set variable becomes the default."""
    if not opt.env_var:
        return
    kwargs["help"] = f"{kwargs['help']} [env {opt.env}]"
    if opt.env not in env:
        return
    value = env[opt.env]
    if opt.action == "flag":
        kwargs["default"] = value.strip().lower() in _TRUE
    elif opt.action == "append":
        kwargs["default"] = _env_list(value)
    else:
        kwargs["default"] = value


def _env_list(value: str) -> list[str]:
    """``[a, b]`` (configargparse's list form, which Locust reads) or one value."""
    text = value.strip()
    if text.startswith("[") and text.endswith("]"):
        return [item.strip() for item in text[1:-1].split(",") if item.strip()]
    return [text]


def help_parser() -> argparse.ArgumentParser:
    """``llm-locust run --help``: every llm-locust option, by group, with its environment variable."""
    parser = argparse.ArgumentParser(
        prog="llm-locust run",
        usage="llm-locust run [llm-locust options] [locust options]",
        description="A Locust load test of an OpenAI-compatible server with the default locustfile. "
        "Every option below also works with plain `locust -f locustfiles/chat.py`, in the web UI's "
        "start form, and as an LLM_LOCUST_* environment variable. Locust's own options: `locust --help`.",
        add_help=False,
    )
    register(parser, RUN_GROUPS, environ={}, titled=True)
    return parser


def form_layout() -> JsonObject:
    """The web UI's start form as ``llm-locust run --help`` lays it out: each section's fields in
    order, and each field's whole help with its default (``llm_locust/web/form.js`` applies it)."""
    shown = sorted((o for o in options_in(*RUN_GROUPS) if o.web_ui), key=section_order)
    sections: dict[str, list[JsonValue]] = {}
    helps: JsonObject = {}
    for opt in shown:
        sections.setdefault(opt.section, []).append(opt.dest)
        default = opt.default_text
        said = default is None or "default" in opt.help.lower()
        helps[opt.dest] = f"{opt.flag}: {opt.help}" + ("" if said else f" (default: {default})")
    return {"sections": [{"title": t, "fields": f} for t, f in sections.items()], "help": helps}
