"""Preflight in a run: before any user spawns, or when the web UI's start button is pressed.

- Headless (or ``--autostart``): at ``init``, on the local runner or the master, before the
  runner starts. A refusal is one line on stderr and exit code 2; no request of the load is
  sent. With ``--endpoints`` every replica is checked, and a refusal names it. Workers never
  check (the master did, once).
- Web UI: each ``POST /swarm`` (after Locust's own login check) checks the target the form
  names; a refusal is the form's error message and nothing starts.
- ``test_start``: :func:`server_info` reuses what the check learned (no second
  ``GET /v1/models``), or asks for it when the check was skipped (``--skip-preflight``,
  workers), and refuses to start without a model: a run never sends ``"model": null``.

The check itself is :func:`llm_locust.preflight.preflight`; this module is its Locust wiring.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from llm_locust.client import ClientConfig, shown_host
from llm_locust.config.build import ConfigError
from llm_locust.config.model import RequestConfig
from llm_locust.preflight import Preflight, fetch_server_info, preflight
from llm_locust.runtime.locust_adapter import View, wrap_view
from llm_locust.runtime.runners import ConfiguredRun

__all__ = ["PreflightRun", "install", "run_preflight", "server_info"]

log = logging.getLogger("llm_locust")
MakeConfig = Callable[[RequestConfig, str], ClientConfig]


class PreflightRun(ConfiguredRun, Protocol):
    """What the preflight wiring needs of a run (the master's or the local runner's node); it
    keeps the last check."""

    preflight_result: Preflight | None


def run_preflight(config: ClientConfig, replicas: tuple[str, ...] | None = None) -> Preflight:
    """Check the target (each of ``replicas`` when given: the first refusal, naming its replica,
    or the first's result) and log what was learned (warnings as warnings)."""
    if replicas:
        results = [run_preflight(replace(config, host=url)) for url in replicas]
        refused = next((r for r in results if not r.ok), None)
        if refused is not None and len(replicas) > 1:
            return replace(refused, cause=f"replica {refused.target}: {refused.cause}")
        return refused or results[0]
    result = preflight(config)
    if result.ok:
        head, *warnings = result.report()
        log.info("llm-locust: %s", head)
        for line in warnings:
            log.warning("llm-locust: preflight: %s", line)
    return result


def install(run: PreflightRun, make_config: MakeConfig) -> None:
    """At ``init`` on the master or the local runner: check now (headless) or at every start from
    the web UI (workers never check: the master did, once)."""
    environment = run.environment
    options = environment.parsed_options
    if options is None:
        return
    request = run.run_config.request
    if options.headless or getattr(options, "autostart", False):
        if request.skip_preflight:
            return
        try:
            config = make_config(request, environment.host or run.run_config.host)
        except ConfigError:
            return  # reported by the run's own option checks
        result = run.preflight_result = run_preflight(config, request.endpoints)
        if not result.ok:
            sys.stderr.write(f"llm-locust: error: {result.cause}\n")
            sys.stderr.flush()
            raise SystemExit(2)
    elif getattr(environment, "web_ui", None) is not None:
        _gate_web_start(run, make_config)


def server_info(run: PreflightRun, config: ClientConfig) -> dict[str, Any]:
    """The target's facts for ``test_start``; fills ``config.model`` or raises :class:`ConfigError`."""
    checked = run.preflight_result
    same = (
        checked is not None
        and checked.ok
        and checked.target == shown_host(config.host)
        and config.model in (None, checked.model)
    )
    if same:
        assert checked is not None
        info = checked.server_info()
    else:
        info = fetch_server_info(config)
        if "error" in info:
            log.warning("llm-locust: %s", info["error"])
    if config.model is None:
        config.model = info.get("model")
    if config.model is None:
        raise ConfigError(f"no model to request ({info.get('error', 'none listed')}); pass --model NAME")
    return info


def _gate_web_start(run: PreflightRun, make_config: MakeConfig) -> None:
    """Wrap Locust's ``/swarm`` view: login first (Locust's), then the check, then the start.

    Installed before :func:`llm_locust.runtime.form.install_form_check`, whose wrapper runs
    first: by the time this check runs, the form's values are the run's configuration.
    """
    web_ui = run.environment.web_ui
    if web_ui is None:
        return

    def gate(start: View) -> View:
        def checked_start(*args: Any, **kwargs: Any) -> Any:
            refusal = _check_form(run, make_config)
            return refusal if refusal is not None else start(*args, **kwargs)

        return checked_start

    wrap_view(web_ui, "/swarm", gate)


def _check_form(run: PreflightRun, make_config: MakeConfig) -> Any:
    from flask import jsonify, request

    environment = run.environment
    host = request.form.get("host") or environment.host or ""
    config_request = run.run_config.request  # the form's, adopted by the form check
    if config_request.skip_preflight:
        return None
    try:
        config = make_config(config_request, host)
    except ConfigError as exc:
        return jsonify({"success": False, "message": str(exc), "host": host})
    result = run.preflight_result = run_preflight(config, config_request.endpoints)
    if result.ok:
        return None
    log.error("llm-locust: preflight: %s", result.cause)
    return jsonify({"success": False, "message": f"preflight: {result.cause}", "host": host})
