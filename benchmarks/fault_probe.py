"""Fault and bad-input probe: runs the installed ``llm-locust`` against misbehaving loopback
servers and bad options/files, and classifies each case as right, wrong or partly right.

    .venv/bin/python benchmarks/fault_probe.py [--jobs 2] [--only NAME,...]

The rule (COMMON house rules): a bad input gives one line naming the flag or value, exit 2, no
traceback; a failing server gives records with a class and message and the run goes on. Cases
that issue 26 numbered carry their item number. Every case is time-limited (``CASE_LIMIT_S``),
all traffic goes to 127.0.0.1 (``tests/scripted_server.py``, a closed port). One line a case:
what was done, exit code, the one-line message, whether a traceback appeared, records written,
and the verdict with its reason.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from benchmarks.fault_probe_dist import closed_port, master_killed, worker_paused  # noqa: E402
from tests.scripted_server import running_peer  # noqa: E402

BIN = Path(sys.executable).parent / "llm-locust"
CASE_LIMIT_S = 45.0


class Verdict(Enum):
    RIGHT = "right"
    WRONG = "wrong"
    PARTLY = "partly"


@dataclass
class Outcome:
    rc: int | None
    message: str
    traceback: bool
    rows: list[dict]
    summary: dict
    text: str
    wall: float


@dataclass
class Case:
    name: str
    item: str  # issue 26's item number, or "" for an added case
    argv: Callable[[str, Path], list[str]]  # (peer base URL, scratch dir) -> arguments
    judge: Callable[[Outcome], tuple[Verdict, str]]
    setup: Callable[[Path], None] = field(default=lambda d: None)
    #: a case of several processes (fault_probe_dist): (binary, base, dir) -> (exit, text, rows, note)
    runner: Callable[[Path, str, Path], tuple[int | None, str, list[dict], str]] | None = None


def _message(stderr: str, stdout: str) -> str:
    """The last line that is not Locust's log prefix or a usage line: the one-line message."""
    lines = [ln.strip() for ln in (stderr + "\n" + stdout).splitlines() if ln.strip()]
    for ln in reversed([ln for ln in stderr.splitlines() if ln.strip()] or lines):
        if not ln.startswith(("usage:", "  ", "-----", "Type ", "LLM ", "Aggregated", "Response time")):
            return ln.strip()[:160]
    return ""


def run_case(case: Case, base: str, root: Path) -> tuple[Case, Outcome]:
    scratch = root / case.name
    scratch.mkdir()
    case.setup(scratch)
    start = time.monotonic()
    if case.runner is not None:
        rc, text, rows, note = case.runner(BIN, base, scratch)
        return case, Outcome(rc, note, "Traceback" in text, rows, {}, text, time.monotonic() - start)
    cmd = [str(BIN), *case.argv(base, scratch)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=CASE_LIMIT_S, cwd=scratch)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out, err = None, _text(exc.stdout), _text(exc.stderr) + f"\n(killed after {CASE_LIMIT_S:.0f} s)"
    wall = time.monotonic() - start
    res = scratch / "res"
    rows = []
    if (res / "requests.jsonl").exists():
        rows = [
            json.loads(ln) for ln in (res / "requests.jsonl").read_text().splitlines() if ln.endswith("}")
        ]
    summary = json.loads((res / "summary.json").read_text()) if (res / "summary.json").exists() else {}
    text = out + "\n" + err
    return case, Outcome(rc, _message(err, out), "Traceback" in text, rows, summary, text, wall)


def _text(data: bytes | str | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


# ----- judges -----


def bad_input(*names: str) -> Callable[[Outcome], tuple[Verdict, str]]:
    """Exit 2, no traceback, and the message names one of ``names`` (the flag or the value)."""

    def judge(o: Outcome) -> tuple[Verdict, str]:
        if o.traceback:
            return Verdict.WRONG, f"traceback, exit {o.rc}"
        if o.rc == 0:
            return Verdict.WRONG, "accepted (exit 0)"
        named = any(n.lower() in o.message.lower() for n in names)
        if o.rc == 2 and not o.traceback and named:
            return Verdict.RIGHT, "refused in one line naming it"
        why = [f"exit {o.rc}" if o.rc != 2 else "", "" if named else f"message names none of {names}"]
        return Verdict.PARTLY, "; ".join(w for w in why if w)

    return judge


def _records_ok(o: Outcome) -> str:
    """'' when the run wrote records, each failed one with a class and message, no traceback."""
    if o.traceback:
        return "traceback"
    if not o.rows:
        return f"no records (exit {o.rc})"
    bad = [r for r in o.rows if r["outcome"] != "ok" and not (r["outcome"] and r["message"])]
    return f"{len(bad)} failed records without class/message" if bad else ""


def server(
    check: Callable[[Outcome], tuple[bool, str]] | None = None,
) -> Callable[[Outcome], tuple[Verdict, str]]:
    def judge(o: Outcome) -> tuple[Verdict, str]:
        problem = _records_ok(o)
        if problem:
            return Verdict.WRONG, problem
        if check is None:
            return Verdict.RIGHT, "records with class and message"
        good, why = check(o)
        return (Verdict.RIGHT if good else Verdict.PARTLY), why

    return judge


def refused_preflight(o: Outcome) -> tuple[Verdict, str]:
    """A target that cannot be load-tested: refused in one line, no traceback, no load."""
    if o.traceback:
        return Verdict.WRONG, "traceback"
    if o.rc not in (0, None) and not o.rows:
        return Verdict.RIGHT, "refused before load, one line"
    return Verdict.PARTLY, f"exit {o.rc}, {len(o.rows)} records"


def _all_ok_fast(limit_s: float) -> Callable[[Outcome], tuple[bool, str]]:
    def check(o: Outcome) -> tuple[bool, str]:
        outs = Counter(r["outcome"] for r in o.rows)
        slow = max((r["e2e"] or 0) for r in o.rows)
        return outs.keys() == {"ok"} and slow < limit_s, f"outcomes {dict(outs)}, max e2e {slow:.2f} s"

    return check


def _backs_off(max_rows: int, also: str = "") -> Callable[[Outcome], tuple[bool, str]]:
    def check(o: Outcome) -> tuple[bool, str]:
        named = also.lower() in (o.rows[0]["message"] or "").lower() if also else True
        msg = f"{len(o.rows)} requests in 4 s (back-off: <= {max_rows})"
        msg += f"; message names {also!r}: {named}" if also else ""
        return len(o.rows) <= max_rows and named, msg

    return check


def _token_kept(o: Outcome) -> tuple[bool, str]:
    lost = sum(1 for r in o.rows if not r["completion_tokens"] and "0 tokens" in (r["message"] or ""))
    return lost == 0, f"{lost} of {len(o.rows)} records lost the token before the bad bytes"


def _gzip(o: Outcome) -> tuple[bool, str]:
    okays = sum(1 for r in o.rows if r["outcome"] == "ok" and r["completion_tokens"] == 3)
    named = sum(1 for r in o.rows if "gzip" in (r["message"] or "").lower())
    return okays + named == len(o.rows), f"{okays} decoded ok, {named} name gzip, of {len(o.rows)}"


def _conflict_said(o: Outcome) -> tuple[bool, str]:
    # every request of this scenario gets 5 content chunks and a usage of 50 tokens: a
    # contradiction where the stream kept within a max_tokens under 50 (the documented rule; at
    # or above 50, 10 tokens a chunk is batching the client cannot rule out, and under 5 the
    # server ignored max_tokens, so the usage is believed)
    must = [r for r in o.rows if r["max_tokens"] is not None and 5 <= r["max_tokens"] < 50]
    flagged = sum(1 for r in must if r.get("usage_conflict"))
    over = sum(1 for r in o.rows if r["max_tokens"] and r["completion_tokens"] > r["max_tokens"])
    in_summary = bool(o.summary.get("usage_conflicts"))
    in_text = "conflict" in o.text.lower() or "contradict" in o.text.lower()
    return flagged == len(must) and in_summary and in_text, (
        f"{flagged} of {len(must)} rows with max_tokens 5-49 flagged ({over} counted over max_tokens); "
        f"summary usage_conflicts={o.summary.get('usage_conflicts')!r}; "
        f"end text says so: {in_text}; total_output_tokens {o.summary.get('total_output_tokens')}"
    )


def _max_tokens_warned(o: Outcome) -> tuple[bool, str]:
    said = [ln for ln in o.text.splitlines() if "max_tokens" in ln and ("ignor" in ln or "exceed" in ln)]
    return bool(said), f"warning that max_tokens is ignored: {said[0][-90:] if said else 'none'}"


def _ran_after_wait(o: Outcome) -> tuple[bool, str]:
    okays = sum(1 for r in o.rows if r["outcome"] == "ok")
    return okays > 0, f"{okays} ok records after the busy answer"


def _summarize_skips(o: Outcome) -> tuple[Verdict, str]:
    if o.traceback:
        return Verdict.WRONG, f"traceback, exit {o.rc}"
    said = "skip" in o.text.lower() or "corrupt" in o.text.lower()
    if o.rc == 0 and said:
        return Verdict.RIGHT, "rebuilt, corrupt line counted"
    return Verdict.PARTLY, f"exit {o.rc}, says skipped: {said}"


def _resumed(o: Outcome) -> tuple[Verdict, str]:
    """Item 1: the paused worker checks its master again and carries on (or the run says it stopped)."""
    if o.traceback or not o.rows:
        return Verdict.WRONG, "traceback" if o.traceback else "no records"
    got, of = o.message.split()[0], o.message.split()[2]
    if got == of and "outlived" not in o.message:
        return Verdict.RIGHT, "every worker resumed its load"
    said = [ln for ln in o.text.splitlines() if "llm_locust" in ln and ("missing" in ln or "early" in ln)]
    return Verdict.PARTLY if said else Verdict.WRONG, f"llm-locust said so: {said[0][-80:] if said else 'no'}"


def _orphan_exits(o: Outcome) -> tuple[Verdict, str]:
    """Item 11: a worker whose master is gone stops and exits with a code of its own, in bounded time."""
    if o.traceback:
        return Verdict.WRONG, "traceback"
    if "exited" not in o.message:
        return Verdict.WRONG, "the worker outlived its master by 30 s"
    gone = float(o.message.split()[2])
    if o.rc not in (0, None) and gone <= 20:
        return Verdict.RIGHT, f"exit {o.rc} within 20 s"
    return Verdict.PARTLY, f"exit {o.rc} after {gone:.0f} s"


# ----- cases -----

#: Load past the preflight (which refuses a target whose test request fails, in one line: the
#: ``preflight_*`` cases), so the run's own records show how each fault is classified.
SKIP = ("--skip-preflight", "--model", "m")
LOAD = ["run", "--headless", "-t", "4s", "--request-timeout", "3", "--results-dir", "res"]


def load(scenario: str, *extra: str, users: int = 1) -> Callable[[str, Path], list[str]]:
    return lambda base, d: [*LOAD, "-u", str(users), "--host", f"{base}/{scenario}", *extra]


def opts(*extra: str) -> Callable[[str, Path], list[str]]:
    return lambda base, d: [*LOAD, "-u", "1", "--host", f"{base}/ok", *extra]


def _write(name: str, content: str) -> Callable[[Path], None]:
    return lambda d: (d / name).write_text(content)


def _corrupt_results(d: Path) -> None:
    (d / "res").mkdir()
    good = {"request_id": "local-0", "start_time": 1.0, "outcome": "ok", "message": "", "status": 200}
    good |= {"endpoint": "chat", "ttft": 0.01, "tpot": 0.02, "e2e": 0.05, "itl": [0.02], "prompt_tokens": 7}
    good |= {"completion_tokens": 3, "finish_reason": "stop"}
    lines = [json.dumps(good | {"request_id": f"local-{i}", "start_time": 1.0 + i}) for i in range(5)]
    lines.insert(2, '{"request_id": "local-x", "outc')  # a write cut by a crash / a full disk
    (d / "res" / "requests.jsonl").write_text("\n".join(lines) + "\n")


CASES: list[Case] = [
    # issue 26's numbered items that a single run can show
    Case("done_open", "2", load("done_open"), server(_all_ok_fast(1.0))),
    Case("big_10MB_event", "3", load("big10240k"), server(_all_ok_fast(2.5))),
    Case(
        "host_not_a_url", "4", lambda b, d: [*LOAD, "-u", "1", "--host", "not a url"], bad_input("not a url")
    ),
    Case("host_ftp", "4", lambda b, d: [*LOAD, "-u", "1", "--host", "ftp://127.0.0.1:1"], bad_input("ftp")),
    Case(
        "host_no_scheme",
        "4",
        lambda b, d: [*LOAD, "-u", "1", "--host", "127.0.0.1:8000"],
        bad_input("scheme"),
    ),
    Case(
        "summarize_corrupt_line", "5", lambda b, d: ["summarize", "res"], _summarize_skips, _corrupt_results
    ),
    Case("gzip_body", "6", load("gzip"), server(_gzip)),
    Case("html_200", "7", load("html", "--skip-preflight"), server(_backs_off(60))),
    Case("json_200", "7", load("json_200", "--skip-preflight"), server(_backs_off(60))),
    Case(
        "redirect_301",
        "7",
        load("redirect", "--skip-preflight"),
        server(_backs_off(60, "login.example.test")),
    ),
    Case("bad_chunk_with_token", "8", load("bad_chunk_with_token", *SKIP), server(_token_kept)),
    Case("not_utf8_with_token", "8", load("not_utf8_with_token", *SKIP), server(_token_kept)),
    Case("usage_conflict", "9", load("usage_conflict"), server(_conflict_said)),
    Case("preflight_429_retry_after", "10", load("busy_429"), server(_ran_after_wait)),
    Case("preflight_503_retry_after", "10", load("busy_503"), server(_ran_after_wait)),
    Case("max_tokens_ignored", "10", load("long_answer", "--max-tokens", "4"), server(_max_tokens_warned)),
    Case("worker_paused_6s_of_2", "1", opts(), _resumed, runner=worker_paused(2)),
    Case("only_worker_paused_6s", "1", opts(), _resumed, runner=worker_paused(1)),
    Case("master_killed", "11", opts(), _orphan_exits, runner=master_killed),
    # more misbehaving servers
    Case("rst_mid_stream", "", load("broken", *SKIP), server()),
    Case("silent_server", "", load("silent", *SKIP), server()),
    Case("stall_after_2_tokens", "", load("stall", *SKIP), server()),
    Case("malformed_event", "", load("malformed", *SKIP), server()),
    Case("error_event_in_stream", "", load("stream_error", *SKIP), server()),
    Case("cut_without_finish", "", load("cut_close", *SKIP), server()),
    # the same faults met by the preflight: refused in one line before any load
    *(
        Case(f"preflight_{scen}", "", load(scen), refused_preflight)
        for scen in ("broken", "stall", "malformed", "stream_error", "cut_close", "bad_chunk_with_token")
    ),
    Case("unauthorized_401", "", load("unauthorized"), refused_preflight),
    Case(
        "connection_refused",
        "",
        lambda b, d: [*LOAD, "-u", "1", "--host", f"http://127.0.0.1:{closed_port()}"],
        refused_preflight,
    ),
    # bad options and files
    Case("users_negative", "", opts("-u", "-1"), bad_input("-1", "users", "-u")),
    Case("endpoint_unknown", "", opts("--endpoint", "foo"), bad_input("foo", "--endpoint")),
    Case("workload_unknown", "", opts("--workload", "nope"), bad_input("nope", "--workload")),
    Case(
        "request_timeout_negative", "", opts("--request-timeout", "-1"), bad_input("-1", "--request-timeout")
    ),
    Case("cancel_rate_2", "", opts("--cancel-rate", "2"), bad_input("--cancel-rate", "2")),
    Case("slo_garbage", "", opts("--slo", "fast please"), bad_input("fast please", "--slo")),
    Case("slo_unknown_metric", "", opts("--slo", "ttft_p95<=abc"), bad_input("abc", "--slo")),
    Case("ramp_letters", "", opts("--ramp", "a,b"), bad_input("a,b", "--ramp")),
    Case("percentiles_bad", "", opts("--percentiles", "abc"), bad_input("abc", "--percentiles")),
    Case("header_no_colon", "", opts("--header", "nocolon"), bad_input("nocolon", "--header")),
    Case("extra_body_bad_json", "", opts("--extra-body", "{bad"), bad_input("{bad", "--extra-body")),
    Case("max_tokens_zero", "", opts("--max-tokens", "0"), bad_input("--max-tokens", "0")),
    Case("dataset_missing", "", opts("--dataset", "missing.jsonl"), bad_input("missing.jsonl")),
    Case(
        "dataset_garbage",
        "",
        opts("--dataset", "g.jsonl", "--strict"),
        bad_input("g.jsonl"),
        _write("g.jsonl", "this is not json\n{also not\n"),
    ),
    Case("tools_missing", "", opts("--tools", "nope.json"), bad_input("nope.json")),
    Case("trace_missing", "", opts("--trace", "nope.csv"), bad_input("nope.csv")),
    Case(
        "results_dir_is_file",
        "",
        lambda b, d: [
            "run",
            "--headless",
            "-t",
            "3s",
            "-u",
            "1",
            "--host",
            f"{b}/ok",
            "--results-dir",
            "afile",
        ],
        bad_input("afile"),
        _write("afile", "x"),
    ),
    Case(
        "plans_yaml_bad",
        "",
        lambda b, d: ["capacity", "plans.yaml", "--results-dir", "out"],
        bad_input("plans.yaml"),
        _write("plans.yaml", "plans: [unclosed\n  - : :\n"),
    ),
    Case(
        "plans_yaml_missing",
        "",
        lambda b, d: ["capacity", "none.yaml", "--results-dir", "out"],
        bad_input("none.yaml"),
    ),
    Case("summarize_missing_dir", "", lambda b, d: ["summarize", "nodir"], bad_input("nodir")),
    Case("report_missing_dir", "", lambda b, d: ["report", "nodir"], bad_input("nodir")),
    Case(
        "predict_missing_model",
        "",
        lambda b, d: ["predict", "m.yaml", "--slo", "ttft_p95<=1s", "--demand", "concurrency=4"],
        bad_input("m.yaml"),
    ),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="", help="comma-separated case names")
    args = ap.parse_args()
    cases = [c for c in CASES if not args.only or c.name in args.only.split(",")]
    print(f"load average before: {os.getloadavg()[0]:.1f}", flush=True)
    start = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="fault-probe-"))
    counts: Counter[Verdict] = Counter()
    try:
        with running_peer() as base, ThreadPoolExecutor(args.jobs) as pool:
            for case, o in pool.map(lambda c: run_case(c, base, root), cases):
                verdict, why = case.judge(o)
                counts[verdict] += 1
                item = f"#{case.item}" if case.item else "+"
                print(
                    f"| {case.name} | {item} | {o.rc} | {'yes' if o.traceback else 'no'} | {len(o.rows)} "
                    f"| {o.message.replace('|', '/')} | **{verdict.value}**: {why.replace('|', '/')} |",
                    flush=True,
                )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    total = sum(counts.values())
    print(
        f"{total} cases: {counts[Verdict.RIGHT]} right, {counts[Verdict.WRONG]} wrong, "
        f"{counts[Verdict.PARTLY]} partly; {time.monotonic() - start:.0f} s; "
        f"load average after: {os.getloadavg()[0]:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
