"""The reference the profile tests compare against, computed from the raw trace files.

The traces (``../shared/data/traces``, about 5 MB) are not part of the repository, so what
the fidelity tests need is committed as ``data/trace_reference.json``: per trace, its file,
row count and git blob, its input and output quantiles (numpy's default linear
percentiles over all rows) at every integer level and at 99.5, the Spearman correlation
of input and output, and the median output of the requests in the lowest and highest
input quartile. The files are parsed here on their own (not with the package's loader),
so a loader bug cannot move the truth along with it.

Regenerate (from the repository root)::

    .venv/bin/python -m tests.unit.workload.trace_reference ../shared/data/traces
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FILES", "FIXTURE", "LEVELS", "TRACES", "compute", "git_blob", "trace_columns"]

# beside the repository, as in CI; TRACES_DIR overrides (a git worktree elsewhere)
TRACES = Path(
    os.environ.get("TRACES_DIR") or Path(__file__).resolve().parents[4] / "shared" / "data" / "traces"
)
FIXTURE = Path(__file__).resolve().parent / "data" / "trace_reference.json"
FILES = {
    "chat": "AzureLLMInferenceTrace_conv.csv",
    "code": "AzureLLMInferenceTrace_code.csv",
    "long-context": "conversation_trace.jsonl",
    "sharegpt": "sharegpt_8k_filtered_stats_llama2_tokenizer.csv",
}
LEVELS = sorted([float(x) for x in range(101)] + [99.5])
QUARTILES = ((0, 25), (75, 100))


def git_blob(path: Path) -> str:
    """``git hash-object`` of the file: the id that names it in its source repository."""
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def trace_columns(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(input lengths, output lengths) of every row."""
    if path.suffix == ".jsonl":
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return np.array([r["input_length"] for r in rows]), np.array([r["output_length"] for r in rows])
    with path.open(newline="") as f:
        body = list(csv.reader(f))[1:]
    col = (1, 2) if "Azure" in path.name else (0, 1)  # Azure: TIMESTAMP,ContextTokens,GeneratedTokens
    return np.array([int(r[col[0]]) for r in body]), np.array([int(r[col[1]]) for r in body])


def average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks with ties given their average rank, as Spearman's coefficient defines them.

    (The ranks of an argsort of an argsort break ties in whatever order the sort leaves them,
    which changed between numpy releases: the reference moved in the sixth decimal.)"""
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    first = np.cumsum(counts) - counts  # 0-based rank of each distinct value's first row
    return (first + (counts - 1) / 2.0)[inverse]


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.corrcoef(average_ranks(x), average_ranks(y))[0, 1])


def _one(name: str, traces: Path) -> dict[str, Any]:
    path = traces / FILES[name]
    inp, out = trace_columns(path)
    by_quartile = []
    for q_lo, q_hi in QUARTILES:
        lo, hi = np.percentile(inp, [q_lo, q_hi])
        median = float(np.median(out[(inp >= lo) & (inp <= hi)]))
        by_quartile.append(
            {"input_quantiles": [q_lo, q_hi], "input_bounds": [float(lo), float(hi)], "output_median": median}
        )
    return {
        "file": FILES[name],
        "git_blob": git_blob(path),
        "rows": len(inp),
        "input": [round(float(v), 3) for v in np.percentile(inp, LEVELS)],
        "output": [round(float(v), 3) for v in np.percentile(out, LEVELS)],
        "spearman": round(spearman(inp, out), 6),
        "output_median_by_input_quartile": by_quartile,
    }


def compute(traces: Path = TRACES) -> dict[str, Any]:
    return {
        "source": "../shared/data/traces (origin and licence of each file: shared/data/traces/SOURCES.md)",
        "how": "numpy.percentile (method linear) over all rows; "
        "spearman: Pearson correlation of the ranks, ties at their average rank; "
        "output_median_by_input_quartile: median output of the rows whose input lies between the given "
        "input percentiles (inclusive). Computed by tests/unit/workload/trace_reference.py",
        "command": ".venv/bin/python -m tests.unit.workload.trace_reference ../shared/data/traces",
        "levels": LEVELS,
        "profiles": {name: _one(name, traces) for name in FILES},
    }


def main(argv: list[str]) -> int:
    traces = Path(argv[0]) if argv else TRACES
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(compute(traces), indent=1)
    text = re.sub(r"\[\s+([-\d.,\s]+?)\s+\]", lambda m: "[" + " ".join(m.group(1).split()) + "]", text)
    FIXTURE.write_text(text + "\n")  # number lists on one line
    print(f"{FIXTURE}: {FIXTURE.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
