"""From Locust's parsed options to a prepared run: the configuration, its load plan, its workload.

Everything that can be checked before load is checked the moment Locust's parser has parsed
the command line (and the ``LLM_LOCUST_*`` environment): the typed configuration, the load
plan (a trace file is read here), the workload (a dataset is read here) where requests are
sent, the results folder where results are written. A problem is one line on stderr and exit
code 2, before Locust logs anything or starts a runner, for plain ``locust`` and
``llm-locust run`` alike.

Why at parse time, through the parser Locust hands to ``events.init_command_line_parser``:
``init`` comes after Locust's first log lines (and after ``--processes`` forked). Locust
parses again to render the web UI's form; a :class:`Preparer` keeps the last result and
returns it while the option values are the same, so each item is built once per process.

Roles at parse time: ``--worker`` is a worker; ``--master`` or ``--processes`` (whose parent
is the master) a master; else the local runner.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_locust.config.build import (
    LOCUST_FLAGS,
    ConfigError,
    check_environment,
    config_from_options,
    load_warnings,
)
from llm_locust.config.model import RunConfig
from llm_locust.config.options import OPTIONS
from llm_locust.config.role import Role, role_of_options
from llm_locust.config.tls import TlsSettings
from llm_locust.load.plan import LoadPlan, LoadPlanError, build_load_plan
from llm_locust.results.writer import ResultsDirError, check_results_dir
from llm_locust.runtime.binds import apply_binds, strip_target_credentials
from llm_locust.runtime.locust_adapter import after_parse
from llm_locust.workload.build import BuiltWorkload, WorkloadError, WorkloadFactory
from llm_locust.workload.prompts import draw_salt

__all__ = [
    "CONFIG_ERRORS",
    "PREPARER",
    "Prepared",
    "Preparer",
    "check_when_parsed",
    "prepare_or_exit",
    "results_dir",
    "salted",
    "source_of",
]

#: What a bad configuration raises (each a one-line message naming the flag).
CONFIG_ERRORS = (ConfigError, ResultsDirError, WorkloadError, LoadPlanError, ValueError)
#: The option values a configuration is built from: ours, and the Locust options it reads.
_OURS = tuple(sorted(o.dest for o in OPTIONS))
_SOURCE_KEYS = tuple(sorted({*_OURS, *LOCUST_FLAGS, "profile"}))


def source_of(options: argparse.Namespace | None, ours_only: bool = False) -> dict[str, Any]:
    """The values a configuration depends on, to tell whether the options changed.

    ``ours_only``: llm-locust's options alone. A run compares these at each test's start:
    Locust itself fills in ``-u``/``-r`` for a headless start after ``init`` (which must not
    count as the user's), and a master sends workers only ours.
    """
    values = vars(options) if options is not None else {}
    return {key: values.get(key) for key in (_OURS if ours_only else _SOURCE_KEYS)}


@dataclass(frozen=True)
class Prepared:
    """A validated configuration and what was built from it, for one role."""

    source: dict[str, Any]
    role: Role
    config: RunConfig
    plan: LoadPlan
    workload: BuiltWorkload | None  # None on the master, which sends no requests


class Preparer:
    """Builds configurations, plans and workloads; one per process (:data:`PREPARER`)."""

    def __init__(self) -> None:
        self.workloads = WorkloadFactory()  # reads each dataset file once
        self._last: Prepared | None = None

    def prepare(self, options: argparse.Namespace | None, role: Role) -> Prepared:
        """The run Locust's parsed ``options`` describe; the last one again if they are unchanged."""
        source = source_of(options)
        last = self._last
        if last is not None and last.source == source and last.role == role:
            return last
        values = vars(options) if options is not None else {}
        check_environment()
        starts_itself = bool(values.get("headless") or values.get("autostart"))
        config = config_from_options(options, require_host=starts_itself and role != Role.WORKER)
        self._last = self.adopt(config, role, source)
        if role != Role.WORKER:
            check_results(config, 1)
            for line in load_warnings(config):
                sys.stderr.write(f"llm-locust: warning: {line}\n")
        return self._last

    def adopt(self, config: RunConfig, role: Role, source: dict[str, Any], workload: bool = True) -> Prepared:
        """``config``'s plan (the last one if the load options are the same) and workload."""
        last = self._last
        if (
            last is not None
            and last.config.load == config.load
            and last.plan.seed == config.workload.seed
            and last.config.workload.think == config.workload.think
        ):
            plan = last.plan
        else:
            plan = build_load_plan(config.load, config.workload.seed, thinking=not config.workload.think.none)
        built = None
        if workload and role != Role.MASTER:
            built = self.workloads.build(config.workload, workload_info(config))
        return Prepared(source, role, config, plan, built)


PREPARER = Preparer()


def workload_info(
    config: RunConfig,
    host: str | None = None,
    model: str | None = None,
    server: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What a workload takes from the server: its facts (``max_model_len``), and for
    ``--tokenizer server`` its address, model, TLS settings and API key."""
    request = config.request
    return {
        **(server or {}),
        "base_url": host or config.host,
        "model": model or request.model,
        "tls": TlsSettings(request.ca_cert, request.insecure),
        "api_key": request.api_key_value(),
    }


def salted(config: RunConfig, options: argparse.Namespace | None) -> RunConfig:
    """A test's configuration with its prompt salt: ``--prompt-salt`` as given, else one drawn
    now (each test its own). Written into Locust's ``options``, which a master's spawn messages
    carry to its workers: every worker of the test builds its prompts with the same salt."""
    salt = config.workload.prompt_salt or draw_salt()
    if options is not None:
        options.prompt_salt = salt
    workload = config.workload.model_copy(update={"prompt_salt": salt})
    return config.model_copy(update={"workload": workload})


def results_dir(config: RunConfig, test: int) -> Path | None:
    """Test ``test``'s results folder, named as given, created. The first test's was checked
    (``--overwrite``) when the options were prepared, a later test's when its form was: one that
    holds an earlier test's results is refused there, never renamed."""
    results = config.results
    if not results.results_dir:
        return None
    return check_results_dir(results.results_dir, results.overwrite or test == 1)


def check_results(config: RunConfig, test: int) -> None:
    """Refuse test ``test``'s results folder before it starts if it cannot take the results
    (``--overwrite`` lets a test replace the results in it)."""
    if config.results.results_dir:
        check_results_dir(config.results.results_dir, config.results.overwrite)


def prepare_or_exit(options: argparse.Namespace | None, role: Role | None = None) -> Prepared:
    """:meth:`Preparer.prepare`; a bad option is one line on stderr and exit code 2."""
    try:
        return PREPARER.prepare(options, role or role_of_options(options))
    except CONFIG_ERRORS as exc:
        sys.stderr.write(f"llm-locust: error: {exc}\n")
        sys.stderr.flush()
        raise SystemExit(2) from None


def check_when_parsed(parser: argparse.ArgumentParser) -> None:
    """Prepare the run as soon as ``parser`` (Locust's) has parsed the command line."""

    def prepare(options: argparse.Namespace) -> None:
        strip_target_credentials(options)
        prepared = prepare_or_exit(options)
        apply_binds(options, prepared.config.request.holds_secret())

    after_parse(parser, prepare)  # Locust's parser (llm_locust/runtime/locust_adapter.py)
