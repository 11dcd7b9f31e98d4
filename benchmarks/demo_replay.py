"""Replay ``make demo`` logs with the search's current rules: where each plan would stop, and the
wall time it would not spend.

    .venv/bin/python benchmarks/demo_replay.py demo-run1.log demo-run2.log --settled-precision 0.25

Each log is a whole ``make demo`` (or ``llm-locust demo``) output. Its judged steps (``search:
users=N verdict (...)``) go through :func:`llm_locust.load.search.decide` with the demo's search
(from 32 users, demand 50, 10 % precision, two extensions) and the given settled precision. A plan
stops at the first step after which ``decide`` says stop; the wall time saved is the log's own
timestamp of the plan's last judged step minus that step's. A replay, not a run: it assumes each
step would have been judged as it was (the same verdicts, the same durations), which holds for the
steps both searches run, since they are the same steps in the same order up to the earlier stop.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from llm_locust.load.search import Action, Probe, SearchSpec, Verdict, decide  # noqa: E402

PLANS = ("A-1x4gpu-tp4", "B-1x8gpu-tp8", "C-2x4gpu-tp4")
JUDGED = r"\[(\d+):(\d+)\] \[{plan}\] search: users=(\d+) (pass|fail|inconclusive|invalid)\b"


def replay(lines: list[str], plan: str, settled: float | None) -> tuple[list[Probe], str, int]:
    """The plan's probes up to the replayed stop, the stop reason, and the seconds saved."""
    spec = SearchSpec("users", 32, demand=50, settled_precision=settled)
    pattern = re.compile(JUDGED.format(plan=re.escape(plan)))
    judged = [
        (int(m[1]) * 60 + int(m[2]), float(m[3]), Verdict(m[4])) for m in map(pattern.match, lines) if m
    ]
    probes: list[Probe] = []
    extend = False
    for at, level, verdict in judged:
        if extend:  # the step ran on: its verdict replaces the last one
            probes[-1] = Probe(level, verdict, probes[-1].extensions + 1)
        else:
            probes.append(Probe(level, verdict))
        decision = decide(spec, probes)
        extend = decision.action == Action.EXTEND
        if decision.action == Action.STOP:
            return probes, str(decision.reason), judged[-1][0] - at
    return probes, "not stopped in the log", 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+", type=Path)
    parser.add_argument("--settled-precision", type=float, default=0.25)
    args = parser.parse_args()
    for log in args.logs:
        lines = log.read_text().splitlines()
        saved = 0
        for plan in PLANS:
            probes, reason, seconds = replay(lines, plan, args.settled_precision)
            steps = ", ".join(f"{p.level:g} {p.verdict}" + "+" * p.extensions for p in probes)
            print(f"{log.name} {plan}: {steps} -> stop ({reason}), {seconds} s saved")
            saved += seconds
        print(f"{log.name}: {saved} s saved in all")


if __name__ == "__main__":
    main()
