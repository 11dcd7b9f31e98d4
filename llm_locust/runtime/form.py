"""The web UI's start form, checked by the typed configuration, then its target, before Locust starts a test.

Locust copies the form's fields into its parsed options as it finds them: a field whose
option defaults to ``None`` stays a string (``request_rate="4"``, which later divided an
``int``), and any other is converted with its default's type (``float("abc")`` raises inside
Locust's view: an HTTP 500 with a traceback). So ``/swarm`` is wrapped: the form's values
are laid over the current options and built into a :class:`~llm_locust.config.model.RunConfig`
with the same code and the same one-line messages as the command line. A bad value answers
``{"success": false, "message": "<flag> '<value>': <reason>"}`` (and the same line in the
log) and starts nothing; a good one is adopted by the run (its plan, its workload), then the
target the form names is checked with its values (:mod:`llm_locust.client.preflight`; a refusal is the
form's message), and Locust's own view starts the test. One wrapper of ``/swarm`` does both, in
that order; behind ``--web-login`` it runs only after login.
"""

from __future__ import annotations

from locust.runners import STATE_RUNNING, STATE_SPAWNING

import json
import logging
from typing import TYPE_CHECKING, Protocol

from llm_locust.config.build import config_from_form
from llm_locust.config.jsontypes import JsonObject
from llm_locust.config.model import RunConfig
from llm_locust.config.redact import strip_credentials
from llm_locust.config.register import form_layout
from llm_locust.live.routes import WEB_DIR, add_to_page
from llm_locust.runtime.locust_adapter import View, wrap_view
from llm_locust.runtime.prepare import CONFIG_ERRORS, check_results
from llm_locust.runtime.runners import ConfiguredRun
from llm_locust.runtime.webui_guard import WebUiGuard, scrub_page

if TYPE_CHECKING:
    from flask.typing import ResponseReturnValue

__all__ = [
    "FormRun",
    "check_form",
    "form_script",
    "install_form_check",
    "spawn_rate_as_given",
    "start_clean",
]

log = logging.getLogger("llm_locust")


class FormRun(ConfiguredRun, Protocol):
    """What the form check needs of the node where the web UI runs (the master, the local runner)."""

    @property
    def cli_spawn_rate(self) -> float | None: ...
    @property
    def cli_options(self) -> JsonObject: ...
    @property
    def tests(self) -> int: ...

    def configure(self, config: RunConfig, *, from_form: bool = False, workload: bool = True) -> None: ...

    def check_start(self, host: str) -> str | None: ...


def spawn_rate_as_given(run: FormRun, form: dict[str, str]) -> dict[str, str]:
    """Tell an explicit spawn rate in the form from the one Locust filled in.

    Locust's form always sends a spawn rate: the command line's ``-r``, or 1 when none was
    given. A value the user changed is explicit; an unchanged one keeps what the command line
    said (so a typed 1 without ``-r`` reads as "not given": start with ``-r 1`` for 1 user/s),
    and without ``-r`` each stage then reaches its level in about a second.
    """
    shown = run.cli_spawn_rate or 1.0
    try:
        unchanged = float(form.get("spawn_rate", shown)) == float(shown)
    except ValueError:
        return form  # the configuration names the bad value
    if unchanged:
        given = "" if run.cli_spawn_rate is None else str(run.cli_spawn_rate)
        return {**form, "spawn_rate": given}
    return form


def start_clean(run: FormRun) -> None:
    """A test from the form starts from the command line's llm-locust options, not the previous
    test's: Locust keeps each form's values in its options, so a field the next form does not
    send (an API client's POST) would have kept, say, the first test's ``--ramp``. A running
    test being edited (its user count) keeps its options."""
    options, runner = run.environment.parsed_options, run.environment.runner
    if runner is not None and runner.state in (STATE_RUNNING, STATE_SPAWNING):
        return
    if options is not None:
        for key, value in run.cli_options.items():
            setattr(options, key, value)


def check_form(run: FormRun, form: dict[str, str]) -> str | None:
    """Validate and adopt the form's configuration; the one-line problem, or ``None``."""
    start_clean(run)
    try:
        config = config_from_form(run.environment.parsed_options, spawn_rate_as_given(run, form))
        check_results(config, run.tests + 1)
        run.configure(config, from_form=True)
    except CONFIG_ERRORS as exc:
        log.error("llm-locust: %s", exc)
        return str(exc)
    return None


def install_form_check(run: FormRun) -> None:
    """Wrap the web UI's ``/swarm`` view (no web UI: nothing to do)."""
    web_ui = getattr(run.environment, "web_ui", None)
    if web_ui is None:
        return
    from flask import jsonify, request

    guard = WebUiGuard.of(run)
    options = run.environment.parsed_options  # --autostart: the target was checked at init
    check_target = options is not None and not options.headless and not getattr(options, "autostart", False)

    def check(swarm: View) -> View:
        def checked_swarm() -> ResponseReturnValue:
            form, problem = guard.screen(request.form)
            if problem is None:
                request.form = form  # what Locust's own view reads next
                problem = check_form(run, form.to_dict())
            else:
                log.error("llm-locust: %s", problem)
            if problem is not None:
                host = strip_credentials(run.environment.host or "")
                return jsonify({"success": False, "message": problem, "host": host})
            if check_target:  # then the target the form names, with the form's values
                host = request.form.get("host") or run.environment.host or ""
                refusal = run.check_start(host)
                if refusal is not None:
                    return jsonify({"success": False, "message": refusal, "host": host})
            return swarm()

        return checked_swarm

    if not wrap_view(web_ui, "/swarm", check):
        return
    scrub_page(web_ui)
    add_to_page(web_ui, form_script())


def form_script() -> str:
    """The page's ``<script>`` tags that lay out the start form (``web/form.js`` and its data),
    run before Locust's React bundle reads ``templateArgs``."""
    data = json.dumps(form_layout()).replace("</", "<\\/")
    code = (WEB_DIR / "form.js").read_text(encoding="utf-8")
    return f"<script>window.llmLocustForm = {data};</script><script>{code}</script>"
