"""The llm-locust listeners on Locust's events: options, init, test start/stopping/stop, quitting.

Registered once per process when the locustfile imports :class:`~llm_locust.runtime.user.LLMUser`
(before Locust builds its parser), so every option of the table (:mod:`llm_locust.config.options`)
is on the command line, in the web UI's form and in ``LLM_LOCUST_*`` variables, and the run is
prepared the moment the command line is parsed (:mod:`llm_locust.runtime.prepare`). What each
listener does lives in :class:`~llm_locust.runtime.run.LLMRun` and :mod:`llm_locust.runtime.stopping`.
"""

from __future__ import annotations

from locust import events
from locust.env import Environment

import logging
from typing import Any

import gevent

from llm_locust.config.register import register
from llm_locust.live.exporter import install_exporter
from llm_locust.live.server_metrics import install_server_metrics
from llm_locust.live.webui import install_web_ui
from llm_locust.runtime import preflight, stopping
from llm_locust.runtime.form import install_form_check
from llm_locust.runtime.prepare import CONFIG_ERRORS, check_when_parsed, prepare_or_exit
from llm_locust.runtime.run import client_config, run_for

__all__ = ["install"]

log = logging.getLogger("llm_locust")


_installed = False


def install() -> None:
    """Register the listeners on Locust's global events, once per process."""
    global _installed
    if _installed:
        return
    _installed = True

    @events.init_command_line_parser.add_listener
    def _options(parser: Any) -> None:
        register(parser)
        stopping.mark_default_stop_timeout(parser)
        check_when_parsed(parser)

    @events.init.add_listener
    def _init(environment: Environment, **_: Any) -> None:
        options = environment.parsed_options
        run = run_for(environment)
        run.adopt(prepare_or_exit(options, run.role))
        if options is not None:
            run.drain = stopping.apply_drain(environment, run.run_config.request.request_timeout)
        stopping.install_signal_handlers(run)
        # added after the runner's own listeners, so it runs before them (quitting fires reversed)
        environment.events.quitting.add_listener(lambda **_: stopping.stop_before_quitting(run))
        exporter = install_exporter(run)
        install_server_metrics(run, exporter)
        install_web_ui(run)
        # the target: headless, exit 2 before any load; web UI, at each start, after the form check
        # (installed next, so its wrapper of /swarm runs first and the preflight sees the form's values)
        preflight.install(run, client_config)
        install_form_check(run)

    @events.test_start.add_listener
    def _test_start(environment: Environment, **_: Any) -> None:
        try:
            run_for(environment).on_test_start()
        except CONFIG_ERRORS as exc:
            log.error("llm-locust: %s", exc)
            environment.process_exit_code = 2
            gevent.spawn(environment.runner.quit)

    @events.test_stopping.add_listener
    def _test_stopping(environment: Environment, **_: Any) -> None:
        run_for(environment).stopping = True

    @events.test_stop.add_listener
    def _test_stop(environment: Environment, **_: Any) -> None:
        run_for(environment).on_test_stop()

    @events.quitting.add_listener
    def _quitting(environment: Environment, **_: Any) -> None:
        run_for(environment).on_quitting()
