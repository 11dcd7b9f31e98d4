"""``llm-locust``: the command line.

    llm-locust run [llm-locust and locust options]   a load test (``locust`` with the packaged locustfile)
    llm-locust sim [options]                          the bundled OpenAI-compatible simulator
    llm-locust workload sample|describe|prompts ...   look at a workload before firing it
    llm-locust demo                                   simulator + a short headless run

Each subcommand imports only what it needs: ``sim`` must not import Locust (whose gevent
monkey-patching would change the simulator's asyncio), and ``run`` must import Locust
before anything else.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import NoReturn

__all__ = ["main"]

USAGE = __doc__.split("\n\n")[1] if __doc__ else ""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print("usage: llm-locust {run,sim,workload,demo} ...\n" + USAGE)
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command == "run":
        return run_command(rest)
    if command == "sim":
        from llm_locust.sim.cli import main as sim_main

        return sim_main(rest)
    if command == "workload":
        from llm_locust.workload.cli import main as workload_main

        return workload_main(rest)
    if command == "demo":
        from llm_locust.demo import main as demo_main

        return demo_main(rest)
    _fail(f"unknown command {command!r} (choose from run, sim, workload, demo)")


def default_locustfile() -> Path:
    """The packaged locustfile (``llm_locust/locustfile.py``): present in every install."""
    return Path(__file__).resolve().parent / "locustfile.py"


def names_locustfile(args: list[str]) -> bool:
    """Whether the user chose a locustfile: ``-f``/``--locustfile`` or ``LOCUST_LOCUSTFILE``."""
    if os.environ.get("LOCUST_LOCUSTFILE"):
        return True
    return any(a in ("-f", "--locustfile") or a.startswith("--locustfile=") for a in args)


class _OneLineParser(argparse.ArgumentParser):
    """argparse that reports an error as one line (no usage block) and exits 2."""

    def error(self, message: str) -> NoReturn:
        _fail(message)


def _fail(message: str) -> NoReturn:
    sys.stderr.write(f"llm-locust: error: {message}\n")
    raise SystemExit(2)


def validate_run_options(args: list[str]) -> None:
    """Check llm-locust's own options before Locust starts: one line and exit 2 if wrong."""
    from llm_locust.config.options import (
        OptionError,
        parse_extra_body,
        parse_headers,
        register_request_options,
    )
    from llm_locust.config.tls import check_tls_options
    from llm_locust.load.plan import build_load_plan
    from llm_locust.results.slo import parse_slo
    from llm_locust.results.writer import ResultsDirError, check_results_dir
    from llm_locust.runtime.shape import register_load_options
    from llm_locust.workload.build import WorkloadError, add_workload_arguments, build_workload

    parser = _OneLineParser(prog="llm-locust run", add_help=False)
    # Locust's own --host, so that checks needing the target (--tokenizer server) see it
    parser.add_argument("-H", "--host", default=os.environ.get("LOCUST_HOST") or None)
    register_request_options(parser)
    add_workload_arguments(parser)
    register_load_options(parser)
    options, _ = parser.parse_known_args(args)
    try:
        parse_extra_body(options.extra_body)
        parse_headers(options.header)
        check_tls_options(options.ca_cert, options.insecure)
        if options.results_dir:
            check_results_dir(options.results_dir, options.overwrite)
        build_workload(options, {})
        build_load_plan(options)
        if options.slo:
            parse_slo(options.slo)
    except (OptionError, ResultsDirError, WorkloadError, ValueError) as exc:
        _fail(str(exc))


def run_help() -> str:
    """llm-locust's options (Locust prints its ``--help`` before loading a locustfile)."""
    from llm_locust.runtime.run import option_parsers

    parser = argparse.ArgumentParser(
        prog="llm-locust run",
        usage="llm-locust run [llm-locust options] [locust options]",
        description="A Locust load test of an OpenAI-compatible server with the default locustfile. "
        "Every option below also works with plain `locust` and the same locustfile, in the web UI's "
        "start form, and as an LLM_LOCUST_* environment variable. Locust's own options: `locust --help`.",
        add_help=False,
    )
    for title, register in option_parsers():
        register(parser.add_argument_group(title))
    return parser.format_help()


def run_command(args: list[str]) -> int:
    """Validate, then hand over to Locust's own main with the default locustfile."""
    if any(a in ("-h", "--help") for a in args):
        print(run_help())
        return 0
    validate_run_options(args)
    if not names_locustfile(args):
        path = default_locustfile()
        if not path.exists():
            _fail(f"no locustfile given and {path} not found; pass -f FILE")
        args = ["-f", str(path), *args]
    import locust.main  # gevent monkey-patches here, after nothing else network-related ran

    sys.argv = ["locust", *args]
    try:
        locust.main.main()
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
