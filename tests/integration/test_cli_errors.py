"""First contact (issue 9 §2): every subcommand's help works, every bad input is one line and exit 2.

Each bad input runs the real command (``llm-locust ...`` or plain ``locust -f``) and must exit
with code 2, print exactly one line on stderr that names the flag and the value (every
character kept: ``'missing.jsonl'`` with both quotes), and no traceback anywhere. Nothing
here needs a server: a refused option never sends a request. Each command line runs in a
child forked from a process that imported the package once (tests/forkcli.py: the same entry
points and exit, 0.4 s instead of 6-22 s each on a busy host): ``run`` and plain ``locust``
from one that imported Locust first, as they do, the other subcommands from one that imported
neither Locust nor gevent, as they do. The help written into a closed pipe, and ``--version``,
start processes of their own.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.forkcli import ForkCli, Ran
from tests.locustproc import BIN, LOCUSTFILE, REPO, env, expect_exit

pytestmark = pytest.mark.slow  # ~40 process starts
HOST = ("--host", "http://127.0.0.1:9")
RUN = ("run", *HOST, "--headless", "-t", "1s")


@dataclass
class Forked:
    locust: ForkCli  # for `run` and plain `locust`
    plain: ForkCli  # for the other subcommands

    def run(self, *args: str, locust: bool = False) -> Ran:
        """``llm-locust ARGS`` (``locust -f LOCUSTFILE ARGS`` when ``locust``), forked."""
        if locust:
            return self.locust.run("-f", str(LOCUSTFILE), *args, locust=True)
        return (self.locust if args[:1] == ("run",) else self.plain).run(*args)


@pytest.fixture(scope="module")
def forked() -> Iterator[Forked]:
    with ForkCli(locust=True) as with_locust, ForkCli(locust=False) as plain:
        yield Forked(with_locust, plain)


def _run(*args: str, locust: bool = False, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    cmd = [str(BIN / "locust"), "-f", str(LOCUSTFILE), *args] if locust else [str(BIN / "llm-locust"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env(), cwd=str(cwd))


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),  # --version and run --help: the two tests after this one
        ("sim", "--help"),
        ("workload", "--help"),
        ("workload", "sample", "--help"),
        ("workload", "describe", "--help"),
        ("workload", "prompts", "--help"),
        ("demo", "--help"),
        ("summarize", "--help"),
        ("report", "--help"),
        ("rejudge", "--help"),
    ],
)
def test_every_help_works(forked: Forked, args: tuple[str, ...]) -> None:
    proc = forked.run(*args)
    expect_exit(proc, 0)
    assert proc.stdout.strip() and "Traceback" not in proc.stdout + proc.stderr


def test_version_names_the_package() -> None:
    from llm_locust import __version__

    proc = _run("--version")
    expect_exit(proc, 0)
    assert proc.stdout.strip() == f"llm-locust {__version__}"


def test_run_help_lists_every_option_with_its_variable() -> None:
    from llm_locust.config.options import RUN_GROUPS, options_in

    proc = _run("run", "--help")
    expect_exit(proc, 0)
    text = proc.stdout
    for opt in options_in(*RUN_GROUPS):
        assert opt.flag in text and opt.env in text.replace("\n", "").replace(" ", ""), opt.flag


BAD = [
    # (command line, is it plain locust, the exact line after "error: ", or a fragment of it)
    (("run", "--headless", "-t", "2s"), False, "--host: no target given (e.g. --host http://127.0.0.1:8000)"),
    ((*RUN[1:], "-u", "-5"), True, "-u/--users '-5': must be at least 1"),
    ((*RUN, "-u", "-5"), False, "-u/--users '-5': must be at least 1"),
    ((*RUN, "-u", "0"), False, "-u/--users '0': must be at least 1"),
    ((*RUN, "-u", "x"), False, "-u/--users: invalid int value: 'x'"),  # Locust's own parser
    ((*RUN, "--ramp", "1,x"), False, "--ramp '1,x': 'x' is not a number"),
    ((*RUN, "--ramp", "1", "--step-time", "0s"), False, "--step-time '0s': must be above 0"),
    ((*RUN, "--ramp", "1", "--step-time", "5s", "--warmup", "10s"), False, "--warmup '10s': must be shorter"),
    ((*RUN, "--ramp", "1", "--request-rate", "2"), False, "--ramp and --request-rate cannot be combined"),
    ((*RUN, "--request-rate", "0"), False, "--request-rate '0': must be above 0"),
    ((*RUN, "--percentiles", "50,999"), False, "--percentiles '50,999': '999' is not in (0, 100]"),
    ((*RUN, "--num-requests", "0"), False, "--num-requests '0': must be at least 1"),
    ((*RUN, "--max-concurrency", "3"), False, "--max-concurrency applies to open-loop modes"),
    ((*RUN, "--matrix", "users=1;color=red"), False, "--matrix: unknown key 'color'"),
    ((*RUN, "--slo", "tfft_p95<=1s"), False, "--slo: 'tfft_p95<=1s': unknown metric"),
    ((*RUN, "--slo", "missing.yaml"), False, "--slo: cannot read missing.yaml"),
    ((*RUN, "--trace", "missing.csv"), False, "--trace: trace missing.csv: no such file"),
    # --dataset missing.jsonl: test_a_missing_file_keeps_every_character_of_its_name
    ((*RUN, "--input-tokens", "uniform:10"), False, "--input-tokens: uniform needs max in 'uniform:10'"),
    ((*RUN, "--workload", "nope"), False, "--workload 'nope': unknown profile 'nope'"),
    ((*RUN, "--profile", "code"), False, "--profile 'code' is Locust's run label, not the workload"),
    ((*RUN, "--max-tokens", "abc"), False, "--max-tokens 'abc': not a whole number"),
    ((*RUN, "--request-timeout", "-1"), False, "--request-timeout '-1': must be above 0"),
    ((*RUN, "--temperature", "nan"), False, "--temperature 'nan': must be a finite number"),
    ((*RUN, "--extra-body", "[1]"), False, "--extra-body '[1]': must be a JSON object"),
    ((*RUN, "--extra-body", "{not json"), False, "--extra-body '{not json': not valid JSON"),
    ((*RUN, "--header", "no-colon"), False, "--header 'no-colon': expected NAME:VALUE"),
    ((*RUN, "--endpoint", "embeddings"), False, "--endpoint"),
    ((*RUN, "--balance", "random"), False, "--balance: invalid choice: 'random' (choose from 'round-robin'"),
    ((*RUN, "--balance-scope", "session"), False, "--balance-scope: invalid choice: 'session' (choose from"),
    ((*RUN, "--prometheus-port", "70000"), False, "--prometheus-port '70000': must be at most 65535"),
    ((*RUN, "--server-metrics-interval", "0"), False, "--server-metrics-interval '0': must be above 0"),
    ((*RUN, "--shared-prefix-fraction", "2"), False, "--shared-prefix-fraction '2': must be at most 1"),
    # a malformed target (issue 26 §4): a traceback, spoken to over HTTP, "unknown host" before
    (("run", "--headless", "--host", "not a url"), False, "--host 'not a url': contains blanks"),
    (("run", "--headless", "--host", "ftp://127.0.0.1:9"), False, "--host 'ftp://127.0.0.1:9': scheme 'ftp'"),
    (("run", "--headless", "--host", "127.0.0.1:9"), False, "--host '127.0.0.1:9': no scheme: expected"),
    (("--headless", "--host", "not a url"), True, "--host 'not a url': contains blanks"),
    (
        ("run", "--headless", "--endpoints", "http://127.0.0.1:9,127.0.0.1:8"),
        False,
        "--endpoints '127.0.0.1:8'",
    ),
    (("workload", "sample", "--workload", "nope"), False, "--workload 'nope': unknown profile 'nope'"),
    (("workload", "sample", "-n", "0"), False, "-n '0': must be at least 1"),
    (("workload", "sample", "--input-tokens", "uniform:10"), False, "--input-tokens: uniform needs max"),
    (("workload", "sample", "--endpoint", "x"), False, "--endpoint: invalid choice: 'x'"),
    (("nope",), False, "unknown command 'nope'"),
    (("summarize",), False, "the following arguments are required: DIR"),
    (("summarize", "missing-folder"), False, "missing-folder: no requests.jsonl (not a results folder)"),
    (("rejudge", "docs", "-o", "out"), False, "the following arguments are required: --slo"),
    (("rejudge", "gone", "--slo", "e2e_p95<=1s", "-o", "out"), False, "DIR gone: not a directory"),
    (("rejudge", "docs", "--slo", "e2e_p95<=1x", "-o", "out"), False, "--slo 'e2e_p95<=1x': 'e2e_p95<=1x'"),
    (("rejudge", "docs", "--slo", "e2e_p95<=1s", "--demand", "x=1", "-o", "out"), False, "--demand 'x=1'"),
    (("rejudge", "docs", "--slo", "e2e_p95<=1s", "-o", "docs/out"), False, "-o docs/out: inside DIR docs"),
    (("rejudge", "docs", "--slo", "e2e_p95<=1s", "-o", "out"), False, "docs: no requests.jsonl"),
]


@pytest.mark.parametrize(("args", "plain", "message"), BAD, ids=[" ".join(b[0][-3:]) for b in BAD])
def test_bad_input_is_one_line_and_exit_2(
    forked: Forked, args: tuple[str, ...], plain: bool, message: str
) -> None:
    proc = forked.run(*args, locust=plain)
    lines = proc.stderr.strip().splitlines()
    expect_exit(proc, 2)
    assert len(lines) == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    assert " error: " in lines[0] and message in lines[0], lines[0]


def test_a_missing_file_keeps_every_character_of_its_name(forked: Forked) -> None:
    proc = forked.run(*RUN, "--dataset", "missing.jsonl")
    expect_exit(proc, 2)
    line = proc.stderr.strip()
    assert len(line.splitlines()) == 1 and "No such file or directory: 'missing.jsonl'" in line, line
    assert line.startswith("llm-locust: error: --dataset: ") and line.endswith("'missing.jsonl'"), line


@pytest.mark.parametrize("endpoint", ["not a url", "ftp://127.0.0.1:9", "127.0.0.1:9", "http://:8000"])
def test_a_malformed_plan_endpoint_stops_capacity_before_any_run(
    forked: Forked, tmp_path: Path, endpoint: str
) -> None:
    """Issue 26 §4: ``http://:8000`` was searched as a plan (an "unknown host" step, exit 0)."""
    plans = tmp_path / "plans.yaml"
    plans.write_text(
        'demand: {concurrency: 2}\nslo: "success>=99%"\nsearch: {step_time: 2s, max_steps: 1}\n'
        f"plans:\n  - {{name: A, endpoints: ['{endpoint}'], gpus: 1, gpu_hour_cost: 1}}\n"
    )
    proc = forked.run("capacity", str(plans), "--results-dir", str(tmp_path / "r"))
    expect_exit(proc, 2)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    where = f"{plans}: plans[0].endpoints: endpoint '{endpoint}'"
    assert lines[0].startswith(f"llm-locust capacity: error: {where}"), lines[0]
    assert "expected an http:// or https:// URL with a host" in lines[0]
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("balance", "random", "'round-robin' or 'least-in-flight'"),
        ("balance_scope", "session", "'request' or 'user'"),
    ],
)
def test_a_bad_balance_in_a_plan_file_stops_capacity_before_any_run(
    forked: Forked, tmp_path: Path, key: str, value: str, expected: str
) -> None:
    plans = tmp_path / "plans.yaml"
    plans.write_text(
        'demand: {concurrency: 2}\nslo: "success>=99%"\n'
        f"search: {{step_time: 2s, max_steps: 1, {key}: {value}}}\n"
        "plans:\n  - {name: A, endpoints: ['http://127.0.0.1:9'], gpus: 1, gpu_hour_cost: 1}\n"
    )
    proc = forked.run("capacity", str(plans), "--results-dir", str(tmp_path / "r"))
    expect_exit(proc, 2)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    where = f"{plans}: search.{key}"
    assert lines[0] == f"llm-locust capacity: error: {where}: Input should be {expected}", lines[0]
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("args", "code"),
    [(("run", "--help"), 141), (("--help",), 141), (("report", "--help"), 0), (("capacity", "--help"), 0)],
)
def test_help_into_a_closed_pipe_ends_quietly(args: tuple[str, ...], code: int) -> None:
    """Issue 27 §4: ``llm-locust run --help | head`` printed a BrokenPipeError traceback (exit 1)
    whenever head left before the help was written. Here the reader is gone before the first
    write (the read end closed), so every run meets the closed pipe: no traceback, nothing on
    stderr, and 141 (128 + SIGPIPE, what a program the signal ends reports); argparse's own
    help drops the failed write itself and exits 0."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [str(BIN / "llm-locust"), *args], stdout=write, stderr=subprocess.PIPE, text=True,
            timeout=120, env=env(), cwd=str(REPO),
        )  # fmt: skip
    finally:
        os.close(write)
    assert proc.stderr == "" and proc.returncode == code, proc.stderr[-3000:]


def test_report_help_says_its_defaults(forked: Forked) -> None:
    text = " ".join(forked.run("report", "-h").stdout.split())
    assert "(default: see above)" not in text
    assert (
        "(default: RESULTS_DIR/report.html for one folder, RESULTS_DIR/capacity.html for a capacity folder"
        in text
    )
    assert "(default: auto: 30s for runs of 10 minutes or more" in text
    assert "(default: the summary's config gpus; none: no per-GPU charts)" in text
