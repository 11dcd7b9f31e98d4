"""``llm-locust rejudge DIR --slo S [--demand D] -o OUT``: judge a finished run again, no new load.

``DIR`` is a capacity folder (``llm-locust capacity``'s: ``capacity.json`` and a folder per plan)
or a single run's results folder. Every recorded stage and search step is judged again from
``requests.jsonl`` under ``--slo`` (in deployment time for a capacity folder: a sped-up
simulator's SLO is divided by its time scale, as the comparison ran it) and ``--demand``
(default: the original), by :mod:`llm_locust.results.rejudge`. Written to ``OUT``:

- a capacity folder: ``OUT/capacity.json`` (with a ``rejudged`` block), ``OUT/capacity.html`` and
  each plan's re-judged ``OUT/<plan>/summary.json``;
- a run: ``OUT/summary.json`` and ``OUT/report.html`` (with a copy of ``requests.jsonl``, which
  the report reads).

``DIR`` is only read (``OUT`` must be another folder) and no request is sent. Bad input: one
line naming the flag, exit 2. Exit code 0 when some plan meets the demand (a run: its SLO
passed), 3 when none does.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import NoReturn

from llm_locust.config.demand import Demand, parse_demand
from llm_locust.config.register import OneLineParser
from llm_locust.config.slo import SloSpec, parse_slo
from llm_locust.results.rejudge import CAPACITY_FILE, RejudgeError, rejudge_capacity, rejudge_run
from llm_locust.results.writer import REQUESTS_FILE, SUMMARY_FILE, write_summary

__all__ = ["main"]

PROG = "llm-locust rejudge"
NOT_MET = 3


def _fail(message: str) -> NoReturn:
    sys.stderr.write(f"{PROG}: error: {message}\n")
    raise SystemExit(2)


def _parser() -> OneLineParser:
    p = OneLineParser(prog=PROG, description=__doc__.split("\n\n")[0] if __doc__ else "")
    p.add_argument("directory", metavar="DIR", help="a capacity folder or a run's results folder (read only)")
    p.add_argument("--slo", required=True, help='the SLO to judge by, e.g. "success>=99%%,e2e_p95<=40s"')
    p.add_argument("--demand", default=None, help="the demand, e.g. concurrency=40 (default: the original)")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="the folder to write (not DIR)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        slo = parse_slo(args.slo)
    except ValueError as exc:
        _fail(f"--slo {args.slo!r}: {str(exc).removeprefix('--slo: ')}")
    try:
        demand = None if args.demand is None else parse_demand(args.demand)
    except ValueError as exc:
        _fail(f"--demand {args.demand!r}: {exc}")
    source, out = Path(args.directory), Path(args.output)
    if not source.is_dir():
        _fail(f"DIR {source}: not a directory")
    if out.exists() and not out.is_dir():
        _fail(f"-o {out}: exists and is not a directory")
    if out.resolve() == source.resolve() or source.resolve() in out.resolve().parents:
        _fail(f"-o {out}: inside DIR {source} (the folder judged again is only read)")
    try:
        if (source / CAPACITY_FILE).is_file():
            return _capacity(source, out, slo, demand)
        return _run(source, out, slo, demand)
    except RejudgeError as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(f"-o {out}: cannot write ({exc.strerror or exc})")


def _capacity(source: Path, out: Path, slo: SloSpec, demand: Demand | None) -> int:
    from llm_locust.report.decision_page import write_decision_page
    from llm_locust.results.plans import format_comparison

    report, summaries = rejudge_capacity(source, slo, demand)
    for name, summary in summaries.items():
        (out / name).mkdir(parents=True, exist_ok=True)
        write_summary(out / name / SUMMARY_FILE, summary)
    out.mkdir(parents=True, exist_ok=True)
    (out / CAPACITY_FILE).write_text(json.dumps(report.to_json(), indent=2) + "\n")
    print(format_comparison(report))
    for result in report.plans:
        if result.unmeasured:
            print(f"{result.name}: {result.unmeasured}")
    print(f"{PROG}: judged again from {source} without new load: {out / CAPACITY_FILE}")
    print(f"capacity.html: {write_decision_page(out)}")
    return 0 if report.cheapest is not None else NOT_MET


def _run(source: Path, out: Path, slo: SloSpec, demand: Demand | None) -> int:
    from llm_locust.report.build import REPORT_FILE, write_report
    from llm_locust.results.finalize import exit_code
    from llm_locust.results.report import end_of_run_text

    summary = rejudge_run(source, slo, demand)
    out.mkdir(parents=True, exist_ok=True)
    write_summary(out / SUMMARY_FILE, summary)
    shutil.copyfile(source / REQUESTS_FILE, out / REQUESTS_FILE)
    print(end_of_run_text(summary, f"judged again from {source} without new load: {out / SUMMARY_FILE}"))
    unmeasured = (summary.rejudged or {}).get("unmeasured")
    if unmeasured:
        print(unmeasured)
    print(f"report: {write_report([out], out / REPORT_FILE)}")
    return exit_code(summary, None) or 0
