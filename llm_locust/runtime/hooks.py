"""The llm-locust listeners on Locust's events: options, init, test start/stopping/stop, quitting.

Registered once per process when the locustfile imports :class:`~llm_locust.runtime.user.LLMUser`
(before Locust builds its parser), so every option is on the command line, in the web UI's
form and in ``LLM_LOCUST_*`` variables. What each listener does lives in
:class:`~llm_locust.runtime.run.LLMRun` and :mod:`llm_locust.runtime.stopping`.
"""

from __future__ import annotations

from locust import events
from locust.env import Environment

import logging
import sys
from typing import Any

import gevent

from llm_locust.config.options import OptionError, parse_extra_body, parse_headers
from llm_locust.config.tls import check_tls_options
from llm_locust.live.exporter import install_exporter
from llm_locust.live.server_metrics import install_server_metrics
from llm_locust.live.webui import install_web_ui
from llm_locust.load.plan import build_load_plan, take_run_time
from llm_locust.results.slo import parse_slo
from llm_locust.results.writer import ResultsDirError, check_results_dir
from llm_locust.runtime import preflight, stopping
from llm_locust.runtime.run import client_config, option_parsers, role_of, run_for
from llm_locust.workload.build import WorkloadError, build_workload

__all__ = ["install"]

log = logging.getLogger("llm_locust")


def _validate(environment: Environment) -> None:
    """Everything that can be checked before load: one line and exit 2 if wrong."""
    options = environment.parsed_options
    if options is None:
        return
    try:
        parse_extra_body(options.extra_body)
        parse_headers(options.header)
        check_tls_options(options.ca_cert, options.insecure)
        if role_of(environment.runner) != "worker" and options.results_dir:
            check_results_dir(options.results_dir, options.overwrite)
        build_load_plan(options)
        if options.slo:
            parse_slo(options.slo)
        if role_of(environment.runner) != "master":
            build_workload(options, {})
    except (OptionError, ResultsDirError, WorkloadError, ValueError) as exc:
        sys.stderr.write(f"llm-locust: error: {exc}\n")
        sys.stderr.flush()
        raise SystemExit(2) from None


_installed = False


def install() -> None:
    """Register the listeners on Locust's global events, once per process."""
    global _installed
    if _installed:
        return
    _installed = True

    @events.init_command_line_parser.add_listener
    def _options(parser: Any) -> None:
        for _, register in option_parsers():
            register(parser)
        stopping.mark_default_stop_timeout(parser)

    @events.init.add_listener
    def _init(environment: Environment, **_: Any) -> None:
        _validate(environment)
        options = environment.parsed_options
        run = run_for(environment)
        if options is not None:
            take_run_time(options)
            run.spawn_rate_given = getattr(options, "spawn_rate", None) is not None
            run.drain = stopping.apply_drain(environment, options.request_timeout)
        stopping.install_signal_handlers(run)
        # added after the runner's own listeners, so it runs before them (quitting fires reversed)
        environment.events.quitting.add_listener(lambda **_: stopping.stop_before_quitting(run))
        exporter = install_exporter(run)
        install_server_metrics(run, exporter)
        install_web_ui(run)
        preflight.install(run, client_config)  # last check: headless exit 2 before any load; web UI at start

    @events.test_start.add_listener
    def _test_start(environment: Environment, **_: Any) -> None:
        try:
            run_for(environment).on_test_start()
        except (OptionError, ResultsDirError, WorkloadError, ValueError) as exc:
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
