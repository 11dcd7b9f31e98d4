"""``llm-locust report``: the HTML report of one or more results folders.

    llm-locust report RESULTS_DIR [RESULTS_DIR ...] [-o report.html] [--window 30s] [--gpus N]
    llm-locust report --compare A B [-o compare.html]

A capacity folder (``llm-locust capacity``'s, with ``capacity.json``) gets its decision page,
``DIR/capacity.html``. One folder writes ``RESULTS_DIR/report.html`` unless ``-o`` says
otherwise; several folders (overlaid on every chart) or ``--compare`` write ``./report.html``
by default. A bad folder or option is one line on stderr naming it, exit code 2.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import NoReturn

from llm_locust.report.build import REPORT_FILE, write_report
from llm_locust.report.data import ReportError
from llm_locust.report.decision import DecisionError, is_capacity_folder
from llm_locust.report.decision_page import DECISION_FILE, write_decision_page
from llm_locust.results.windows import AUTO_WINDOW_RULE, parse_window

__all__ = ["main"]

PROG = "llm-locust report"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        _fail(message)


def _fail(message: str) -> NoReturn:
    sys.stderr.write(f"{PROG}: error: {message}\n")
    raise SystemExit(2)


def _gpus(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of GPUs > 0, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number of GPUs > 0, got {text!r}")
    return value


def _window(text: str) -> float | None:
    try:
        return parse_window(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--window: ")) from None


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="One self-contained HTML report (opens offline) of results folders.")
    p.add_argument("dirs", nargs="*", metavar="RESULTS_DIR", help="results folders (overlaid when several)")
    p.add_argument(
        "-o",
        "--output",
        default=None,
        help=f"the HTML file to write (default: RESULTS_DIR/{REPORT_FILE} for one folder, "
        f"RESULTS_DIR/{DECISION_FILE} for a capacity folder, ./{REPORT_FILE} for several or --compare)",
    )
    p.add_argument("--compare", nargs=2, metavar=("A", "B"), help="two folders side by side, with B - A")
    p.add_argument(
        "--window",
        type=_window,
        default=None,
        help=f"time-window width, e.g. 30s (default: auto: {AUTO_WINDOW_RULE})",
    )
    p.add_argument(
        "--gpus",
        type=_gpus,
        default=None,
        help="GPUs behind the target, for tok/s per GPU charts (default: the summary's config gpus; "
        "none: no per-GPU charts)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.compare and args.dirs:
        _fail("give the folders either as RESULTS_DIR ... or as --compare A B, not both")
    dirs = list(args.compare or args.dirs)
    if not dirs:
        _fail("no results folder given (llm-locust report RESULTS_DIR, or --compare A B)")
    output = (
        Path(args.output)
        if args.output
        else (Path(dirs[0]) / REPORT_FILE if len(dirs) == 1 else Path(REPORT_FILE))
    )
    if output.is_dir():
        _fail(f"-o {output}: is a directory (name the HTML file)")
    started = time.perf_counter()
    try:
        if len(dirs) == 1 and not args.compare and is_capacity_folder(dirs[0]):
            # a capacity folder (capacity.json): its decision page, DIR/capacity.html by default
            output = Path(args.output) if args.output else Path(dirs[0]) / DECISION_FILE
            path = write_decision_page(dirs[0], output)
        else:
            path = write_report(
                dirs, output, window_s=args.window, gpus=args.gpus, compare=bool(args.compare)
            )
    except (ReportError, DecisionError) as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(f"-o {output}: cannot write ({exc.strerror or exc})")
    size = path.stat().st_size
    print(f"{PROG}: wrote {path} ({size / 1e6:.1f} MB, {time.perf_counter() - started:.1f} s)")
    return 0
