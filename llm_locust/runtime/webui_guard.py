"""The web UI's gates: no secret in its page, no target or results folder the operator did not allow.

Locust's web UI has no login by default, and whoever can reach it can start a test:

- **The page.** Locust renders every web-UI option's value into ``GET /`` (``templateArgs``);
  ``is_secret`` only masks the input box, so ``--api-key`` (or ``LLM_LOCUST_API_KEY``) was in the
  page source. :func:`scrub_page` blanks every secret option's value there, and says in its help
  that a key is set; an empty field in a submitted form keeps the configured key
  (:meth:`WebUiGuard.screen`). Credentials in the target URL are stripped from the page.
- **The target.** A ``POST /swarm`` with ``host=http://attacker:port`` sent the run's
  ``Authorization`` header to that host. A test started from the form may only target the
  command line's ``--host`` or one of ``--allowed-hosts`` (``'*'``: any). With neither, any host
  is allowed only while llm-locust holds no secret (no key, no redacted header): there is then
  nothing to leak.
- **The results folder.** A folder typed into the form must lie under the results root: the
  parent of the command line's ``--results-dir`` (or the working directory without one); no
  ``../``, no absolute path elsewhere. Whether it may be overwritten is checked by the form
  check, as on the command line (``--overwrite``).

Where the UI listens (127.0.0.1 when a secret is held) is decided at parse time, before Locust
creates it: :mod:`llm_locust.runtime.binds`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llm_locust.config.redact import SECRET_OPTIONS, strip_credentials
from llm_locust.config.urls import target_url_problem
from llm_locust.runtime.locust_adapter import after_template_args
from llm_locust.runtime.runners import ConfiguredRun

if TYPE_CHECKING:
    from locust.web import WebUI

    from werkzeug.datastructures import ImmutableMultiDict

__all__ = ["WebUiGuard", "normal_host", "scrub_page", "scrub_template_args"]

log = logging.getLogger("llm_locust")
ANY_HOST = "*"
SET_NOTE = "(a value is set and not shown; leave the field empty to keep it)"


def normal_host(url: str) -> str:
    """A target URL as compared with the allowed ones: no credentials, no trailing slash, lower case."""
    return strip_credentials(url.strip()).rstrip("/").lower()


def scrub_template_args(args: dict[str, Any]) -> None:
    """Blank the secret options' values and the target's credentials in Locust's page arguments."""
    for dest, spec in (args.get("extra_options") or {}).items():
        if dest in SECRET_OPTIONS and spec.get("default_value"):
            spec["default_value"] = ""
            spec["help_text"] = f"{spec.get('help_text') or ''} {SET_NOTE}".strip()
    if args.get("host"):
        args["host"] = strip_credentials(str(args["host"]))


def scrub_page(web_ui: WebUI) -> None:
    """Scrub Locust's page arguments now and each time Locust rebuilds them (every ``GET /``)."""
    after_template_args(web_ui, scrub_template_args)  # llm_locust/runtime/locust_adapter.py


@dataclass(frozen=True)
class WebUiGuard:
    """What a test started from the form may target and where it may write (fixed at ``init``)."""

    cli_host: str  # the command line's target, credentials stripped ("" if none)
    allowed: tuple[str, ...]  # --allowed-hosts
    holds_secret: bool
    results_root: Path

    @classmethod
    def of(cls, run: ConfiguredRun) -> WebUiGuard:
        config = run.run_config
        host = strip_credentials(run.environment.host or config.host or "")
        given = config.results.results_dir
        root = Path(given).resolve().parent if given else Path.cwd().resolve()
        return cls(host, config.request.allowed_hosts, config.request.holds_secret(), root)

    def host_problem(self, host: str) -> str | None:
        """Why the form's target is refused, or ``None``."""
        allowed = [*self.allowed, self.cli_host] if self.allowed else [self.cli_host]
        if ANY_HOST in allowed or (not self.cli_host and not self.allowed and not self.holds_secret):
            return None
        if normal_host(host) in {normal_host(a) for a in allowed if a}:
            return None
        shown = strip_credentials(host) or "(none)"
        names = ", ".join(a for a in allowed if a) or "none given"
        return (
            f"host {shown!r}: not an allowed target for a test started from the web UI (allowed: {names}); "
            "give it with --host or --allowed-hosts (--allowed-hosts '*' allows any)"
        )

    def results_problem(self, results_dir: str) -> str | None:
        """Why the form's results folder is refused, or ``None``."""
        if not results_dir.strip():
            return None
        path = Path(results_dir.strip())
        resolved = (path if path.is_absolute() else Path.cwd() / path).resolve()
        if resolved == self.results_root or self.results_root in resolved.parents:
            return None
        return (
            f"--results-dir {results_dir!r}: outside the results root {self.results_root} "
            "(a test started from the web UI writes under the parent of the command line's --results-dir, "
            "or the working directory)"
        )

    def screen(self, form: ImmutableMultiDict[str, str]) -> tuple[ImmutableMultiDict[str, str], str | None]:
        """The form as the run may take it (an empty secret field dropped: the configured value
        stays; credentials stripped from the target), or the one-line refusal."""
        from werkzeug.datastructures import ImmutableMultiDict

        items = [
            (key, value)
            for key, value in form.items(multi=True)
            if not (key in SECRET_OPTIONS and not str(value).strip())
        ]
        host = form.get("host")
        if host is not None:
            problem = target_url_problem(host, "--host") or self.host_problem(host)
            if problem is not None:
                return form, problem
            items = [(k, strip_credentials(v) if k == "host" else v) for k, v in items]
        problem = self.results_problem(form.get("results_dir") or "")
        return ImmutableMultiDict(items), problem
