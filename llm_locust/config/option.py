"""One option of the table, and the groups it belongs to (:mod:`llm_locust.config.options` has the table).

Pure module: no Locust, no network.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["GROUPS", "RUN_GROUPS", "SECTIONS", "Option", "env_name", "option"]

#: group -> help title, in help order. Each group except ``workload-command`` is one typed part.
GROUPS = {
    "request": "request",
    "workload": "workload",
    "load": "load model",
    "slo": "SLO",
    "results": "results",
    "export": "Prometheus exporter and server metrics",
    "workload-command": "llm-locust workload",
}
#: The groups of a load test (Locust's parser, ``llm-locust run --help``).
RUN_GROUPS = ("request", "workload", "load", "slo", "results", "export")
#: How ``llm-locust run --help`` and the web UI's start form present the run options, in order.
SECTIONS = ("target and model", "workload", "load model", "SLO and search", "outputs")
_SECTION_OF_GROUP = {
    "request": "target and model",
    "workload": "workload",
    "load": "load model",
    "slo": "SLO and search",
    "results": "outputs",
    "export": "outputs",
}


def env_name(flag: str) -> str:
    """``--max-tokens`` -> ``LLM_LOCUST_MAX_TOKENS``."""
    return "LLM_LOCUST_" + flag.lstrip("-").replace("-", "_").upper()


@dataclass(frozen=True)
class Option:
    """One command-line option. ``action`` is ``store`` (a value), ``flag`` or ``append``."""

    flag: str
    group: str
    help: str
    default: object = None
    type: str = "text"  # for the help only: text, int, float, duration, list, json, path, url
    choices: tuple[str, ...] | None = None
    action: str = "store"
    web_ui: bool = True
    secret: bool = False
    short: str | None = None
    env_var: bool = True  # reads LLM_LOCUST_<NAME>
    dest: str = field(default="")

    def __post_init__(self) -> None:
        if not self.dest:
            object.__setattr__(self, "dest", self.flag.lstrip("-").replace("-", "_"))

    @property
    def section(self) -> str:
        """Its heading in the help and the start form (:data:`SECTIONS`); a search's options
        sit with the SLO that judges its steps."""
        if self.group == "load" and (self.dest.startswith("search") or self.dest == "demand"):
            return "SLO and search"
        return _SECTION_OF_GROUP.get(self.group, GROUPS.get(self.group, self.group))

    @property
    def default_text(self) -> str | None:
        """The default as the help and the form say it; ``None`` when there is none to say."""
        if self.action != "store" or self.default is None or self.default == "":
            return None
        return f"{self.default:g}" if isinstance(self.default, float) else str(self.default)

    @property
    def env(self) -> str:
        return env_name(self.flag)

    @property
    def metavar(self) -> str | None:
        if self.action != "store" or self.choices:
            return None
        return {"int": "N", "float": "X", "duration": "TIME", "path": "FILE", "url": "URL"}.get(self.type)


def option(flag: str, group: str = "", help: str = "", **kw: Any) -> Option:
    """A row of the table (the flag, its group and help first)."""
    return Option(flag, group, help, **kw)
