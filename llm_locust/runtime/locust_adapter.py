"""Locust's private internals (its parser, its worker's report, its web UI's Flask views), in one place.

llm-locust extends Locust through its events and hooks; four needs have no public hook, and each
reach for them is here, and nowhere else:

- :func:`set_option_default`: an option's default on Locust's parser after Locust declared it
  (argparse's ``_option_string_actions``): ``--stop-timeout``'s default is marked, so an
  explicit ``0`` can be told from Locust's default (:mod:`llm_locust.runtime.stopping`);
- :func:`after_parse`: Locust's ``main`` fires ``init_command_line_parser`` with its parser,
  then calls that very object's ``parse_args()``; the method is replaced on the instance so the
  run is prepared (a bad option: one line, exit 2) as soon as the command line is parsed;
- :func:`send_stats_now`: a worker's own statistics report (``WorkerRunner._send_stats``, the
  ``stats`` message), sent at the end of a test instead of up to 3 s later;
- :func:`wrap_view`: a web UI view replaced in Flask's ``app.view_functions`` (by the endpoint
  of its URL rule), wrapped again in Locust's login check. Wrappers compose: the one installed
  last runs first (so ``/swarm``: the form check, installed after the preflight, runs before it,
  and both after the login check);
- :func:`after_template_args`: the web UI rebuilds its page's arguments (``template_args``) in
  ``update_template_args`` at every ``GET /``; the method is replaced on the instance so a
  change to them (the secrets blanked) follows each rebuild.

tests/unit/runtime/test_locust_adapter.py pins each behaviour relied on, and fails naming the
installed versions and :data:`CHECKED_WITH` when one differs.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from llm_locust.config.jsontypes import JsonObject

if TYPE_CHECKING:
    from locust.runners import Runner
    from locust.web import WebUI

    from flask.typing import ResponseReturnValue

__all__ = [
    "CHECKED_WITH",
    "after_parse",
    "after_template_args",
    "send_stats_now",
    "set_option_default",
    "wrap_view",
]

#: The versions whose internals were read and pinned: {package: versions}.
CHECKED_WITH = {"locust": ("2.47.0",), "flask": ("3.1.3",)}
#: A Flask view function.
View = Callable[..., "ResponseReturnValue"]


def set_option_default(parser: argparse.ArgumentParser, flag: str, default: object) -> bool:
    """Give ``flag``'s option on ``parser`` the default ``default``; ``False``: no such option."""
    action = getattr(parser, "_option_string_actions", {}).get(flag)
    if action is None:
        return False
    action.default = default
    return True


def after_parse(parser: argparse.ArgumentParser, then: Callable[[argparse.Namespace], None]) -> None:
    """Call ``then(options)`` each time ``parser.parse_args`` returns (before its caller sees them)."""
    parse = parser.parse_args

    def parse_then(*args: Any, **kwargs: Any) -> Any:
        options = parse(*args, **kwargs)
        then(options)
        return options

    parser.parse_args = parse_then  # type: ignore[method-assign]


def send_stats_now(runner: Runner | None) -> None:
    """A worker's statistics report to its master, now (nothing on another runner)."""
    send = getattr(runner, "_send_stats", None)
    if send is not None:
        send()


def wrap_view(web_ui: WebUI | None, rule: str, wrapper: Callable[[View], View]) -> bool:
    """Replace the view of URL ``rule`` (e.g. ``"/swarm"``) with ``wrapper(view)``, behind Locust's
    login check; ``False``: no web UI app or no such rule."""
    app = getattr(web_ui, "app", None)
    if web_ui is None or app is None:
        return False
    endpoint = next((r.endpoint for r in app.url_map.iter_rules() if r.rule == rule), None)
    if endpoint is None or endpoint not in app.view_functions:
        return False
    app.view_functions[endpoint] = web_ui.auth_required_if_enabled(wrapper(app.view_functions[endpoint]))
    return True


def after_template_args(web_ui: WebUI, then: Callable[[JsonObject], None]) -> None:
    """Call ``then(web_ui.template_args)`` now and each time Locust rebuilds them."""
    update = web_ui.update_template_args

    def update_then() -> None:
        update()
        then(web_ui.template_args)

    web_ui.update_template_args = update_then  # type: ignore[method-assign]
    then(web_ui.template_args)
