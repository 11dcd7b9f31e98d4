"""``llm-locust``: the command line.

    llm-locust run [llm-locust and locust options]   a load test (``locust`` with the packaged locustfile)
    llm-locust sim [options]                          the bundled OpenAI-compatible simulator
    llm-locust workload sample|describe|prompts ...   look at a workload before firing it
    llm-locust report RESULTS_DIR ... [-o FILE]       one self-contained HTML report (--compare A B)
    llm-locust summarize DIR                          rebuild DIR/summary.json from DIR/requests.jsonl
    llm-locust capacity PLANS.yaml --results-dir DIR  the SLO capacity of each deployment plan, and its cost
    llm-locust rejudge DIR --slo S -o OUT             a run or a comparison judged again, no new load
    llm-locust demo                                   three simulated plans compared: 4 or 8 GPUs?
    llm-locust calibrate RUN_DIR ... -o model.yaml    the engine model fitted to measured runs
    llm-locust predict model.yaml --slo S --demand D  the SLO capacity the model predicts (virtual time)
    llm-locust schema [summary] [--write]             the JSON Schema of a result file (docs/schemas/)
    llm-locust --version                              the installed version

Each subcommand imports only what it needs: ``sim`` must not import Locust (whose gevent
monkey-patching would change the simulator's asyncio), ``run`` must import Locust before
anything else, and ``summarize`` (after a master was killed) imports neither.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

__all__ = ["main"]

USAGE = __doc__.split("\n\n")[1] if __doc__ else ""


#: The exit code of a command whose reader went away (``llm-locust run --help | head``): 128 + SIGPIPE,
#: what a program killed by the signal reports.
BROKEN_PIPE_EXIT = 141


def main(argv: list[str] | None = None) -> int:
    """Every subcommand; a reader that stops reading (``| head``) ends it quietly."""
    try:
        code = _command(sys.argv[1:] if argv is None else argv)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's last flush
    except BrokenPipeError:
        # what is left unwritten goes nowhere: no traceback, no "Exception ignored" at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return BROKEN_PIPE_EXIT
    return code


def _command(args: list[str]) -> int:
    if not args or args[0] in ("-h", "--help"):
        print(
            "usage: llm-locust {run,sim,workload,report,summarize,capacity,rejudge,demo,calibrate,predict,"
            "schema} ...\n" + USAGE
        )
        return 0 if args else 2
    if args[0] in ("-V", "--version"):
        from llm_locust import __version__

        print(f"llm-locust {__version__}")
        return 0
    command, rest = args[0], args[1:]
    if command == "run":
        return run_command(rest)
    if command == "sim":
        from llm_locust.sim.cli import main as sim_main

        return sim_main(rest)
    if command == "workload":
        from llm_locust.commands.workload import main as workload_main

        return workload_main(rest)
    if command == "report":
        from llm_locust.report.cli import main as report_main

        return report_main(rest)
    if command == "summarize":
        return summarize_command(rest)
    if command == "capacity":
        from llm_locust.commands.capacity.cli import main as capacity_main

        return capacity_main(rest)
    if command == "rejudge":
        from llm_locust.commands.rejudge import main as rejudge_main

        return rejudge_main(rest)
    if command == "demo":
        from llm_locust.commands.demo import main as demo_main

        return demo_main(rest)
    if command == "calibrate":
        from llm_locust.commands.calibrate import main as calibrate_main

        return calibrate_main(rest)
    if command == "predict":
        from llm_locust.commands.predict import main as predict_main

        return predict_main(rest)
    if command == "schema":
        from llm_locust.results.schemas import main as schema_main

        return schema_main(rest)
    commands = "run, sim, workload, report, summarize, capacity, rejudge, demo, calibrate, predict, schema"
    _fail(f"unknown command {command!r} (choose from {commands})")


def summarize_command(args: list[str]) -> int:
    """``llm-locust summarize DIR``: the summary of a results folder, rebuilt from its records.

    Prints what the end of a run prints; exit code 0, 3 when the SLO failed, 7 when not one
    request was recorded, 2 on bad input.
    """
    from llm_locust.config.register import OneLineParser

    parser = OneLineParser(
        prog="llm-locust summarize",
        description="Rebuild DIR/summary.json from DIR/requests.jsonl and DIR/run.json (e.g. after the "
        "master was killed); the summary is marked 'rebuilt'.",
    )
    parser.add_argument("directory", metavar="DIR", help="a results folder (--results-dir of a run)")
    parser.add_argument(
        "--no-report", action="store_true", help="write summary.json only, not report.html (large runs)"
    )
    parsed = parser.parse_args(args)
    directory, no_report = parsed.directory, parsed.no_report
    from llm_locust.results.columns import skipped_sentence
    from llm_locust.results.finalize import exit_code
    from llm_locust.results.rebuild import RebuildError, rebuild
    from llm_locust.results.report import end_of_run_text

    try:
        summary = rebuild(directory)
    except RebuildError as exc:
        _fail(str(exc))
    path = Path(directory)
    skipped = (summary.rebuilt or {}).get("skipped_lines")
    file = skipped.get("file") if isinstance(skipped, dict) else None
    if isinstance(skipped, dict) and isinstance(file, str):
        sys.stderr.write(f"llm-locust summarize: {skipped_sentence(skipped, str(path / file))}\n")
    print(
        end_of_run_text(summary, f"results: {path / 'requests.jsonl'} and {path / 'summary.json'} (rebuilt)")
    )
    if not no_report:
        from llm_locust.report.build import report_after_run

        report_after_run(path)  # report.html from the rebuilt summary; a failure is one logged line
    return exit_code(summary, None) or 0


def default_locustfile() -> Path:
    """The packaged locustfile (``llm_locust/locustfile.py``): present in every install."""
    return Path(__file__).resolve().parent / "locustfile.py"


def names_locustfile(args: list[str]) -> bool:
    """Whether the user chose a locustfile: ``-f``/``--locustfile`` or ``LOCUST_LOCUSTFILE``."""
    if os.environ.get("LOCUST_LOCUSTFILE"):
        return True
    return any(a in ("-f", "--locustfile") or a.startswith("--locustfile=") for a in args)


def _fail(message: str) -> NoReturn:
    sys.stderr.write(f"llm-locust: error: {message}\n")
    raise SystemExit(2)


def run_help() -> str:
    """llm-locust's options (Locust prints its ``--help`` before loading a locustfile)."""
    from llm_locust.config.register import help_parser

    return help_parser().format_help()


def run_command(args: list[str]) -> int:
    """Hand over to Locust's own main with the default locustfile.

    The options are checked where every run checks them, as soon as Locust's parser has
    parsed them (``runtime/prepare.py``: one line and exit 2 on a bad one).
    """
    if any(a in ("-h", "--help") for a in args):
        print(run_help())
        return 0
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
