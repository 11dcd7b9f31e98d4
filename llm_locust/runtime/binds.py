"""Where the web UI and the master listen, and the target without credentials: set at parse time.

Locust binds its web UI and its master port on every interface by default, without a login.
Whoever reaches the web UI can start a test; whoever reaches the master port can connect as a
worker and is sent every parsed option (:mod:`llm_locust.runtime.channel` keeps the secrets out
of those messages). So, before Locust creates either (it does so right after parsing):

- the web UI listens on ``127.0.0.1`` when llm-locust holds a secret (an API key, a header whose
  value is redacted), unless ``--web-host`` or ``--web-login`` was given;
- the master listens on ``127.0.0.1`` unless ``--master-bind-host`` was given or the process runs
  in Kubernetes (``KUBERNETES_SERVICE_HOST``; the manifests also set it explicitly);
- credentials in ``--host`` (``https://user:key@host``) are removed: nothing here sends them (the
  key goes in ``--api-key`` or a ``--header``), and a target URL is shown in many places.

Each change is said in one log line at ``init`` (:func:`notes`), when Locust's logging is set up.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping, Sequence

from llm_locust.config.redact import has_credentials, strip_credentials
from llm_locust.config.role import Role, role_of_options
from llm_locust.runtime.runners import ConfiguredRun

__all__ = ["LOOPBACK", "apply_binds", "log_notes", "notes", "strip_target_credentials"]

log = logging.getLogger("llm_locust")
LOOPBACK = "127.0.0.1"
_WEB_HOST = ("--web-host", "LOCUST_WEB_HOST")
_MASTER_BIND = ("--master-bind-host", "LOCUST_MASTER_BIND_HOST")
_IN_KUBERNETES = "KUBERNETES_SERVICE_HOST"


def _given(flag: str, env_var: str, argv: Sequence[str], environ: Mapping[str, str]) -> bool:
    return env_var in environ or any(arg == flag or arg.startswith(flag + "=") for arg in argv)


def apply_binds(
    options: argparse.Namespace,
    holds_secret: bool,
    *,
    argv: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> None:
    """Narrow Locust's binds in ``options`` (its parsed namespace)."""
    args = sys.argv[1:] if argv is None else argv
    env = os.environ if environ is None else environ
    values = vars(options)
    web_open = not _given(*_WEB_HOST, args, env) and not values.get("web_login")
    if holds_secret and web_open and values.get("web_host", "") in ("", "*"):
        options.web_host = LOOPBACK
    master = role_of_options(options) is Role.MASTER
    bind_open = not _given(*_MASTER_BIND, args, env) and _IN_KUBERNETES not in env
    if master and bind_open and values.get("master_bind_host", "*") in ("", "*"):
        options.master_bind_host = LOOPBACK


def strip_target_credentials(options: argparse.Namespace) -> None:
    """Remove ``user:password@`` from ``--host`` in ``options`` (before the configuration is built)."""
    host = getattr(options, "host", None)
    if host and has_credentials(host):
        options.host = strip_credentials(host)
        options.llm_locust_host_credentials = True  # for the note at init


def notes(options: argparse.Namespace | None, holds_secret: bool) -> list[str]:
    """The lines that say what :func:`apply_binds` decided (for the log at ``init``)."""
    values = vars(options) if options is not None else {}
    lines = []
    if values.get("llm_locust_host_credentials"):
        lines.append(
            "the credentials in --host were removed (never sent, never shown): give the key with --api-key, "
            "LLM_LOCUST_API_KEY or --header"
        )
    role = role_of_options(options)
    has_ui = not values.get("headless") and role is not Role.WORKER
    if holds_secret and has_ui and values.get("web_host") == LOOPBACK:
        lines.append(
            "the web UI listens on 127.0.0.1 only, because an API key or secret header is set: "
            "--web-host 0.0.0.0 (with --web-login) to expose it"
        )
    if role is Role.MASTER and values.get("master_bind_host") == LOOPBACK:
        lines.append(
            "the master accepts workers on 127.0.0.1 only: --master-bind-host 0.0.0.0 to accept remote "
            "workers on a private network (workers get every option but the API key and headers)"
        )
    return lines


def log_notes(run: ConfiguredRun) -> None:
    """At ``init``: one log line per bind or target change (not on workers, which bind nothing)."""
    if run.role == Role.WORKER:
        return
    for line in notes(run.environment.parsed_options, run.run_config.request.holds_secret()):
        log.warning("llm-locust: %s", line)
