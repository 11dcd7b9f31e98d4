"""Derive the built-in length profiles (``profiles/*.json``) from the public traces.

Each profile is a *joint quantile table*: the trace's requests are sorted by input length
and cut into ``BINS`` equal-count bins; each bin stores quantiles of its input lengths and
of its output lengths at ``LEVELS``. Sampling (``profiles.ProfileLengths.draw``) picks a bin
uniformly, then an input and an output by inverse-CDF interpolation inside that bin, so the
marginals are reproduced and so is the input/output relation (at the resolution of one
bin). For the Mooncake trace a third column, the reused-prefix length in 512-token blocks
(the count of leading ``hash_ids`` already seen earlier in the trace), is stored the same way.

Why two kinds of levels. A bin holds 275 to 960 requests, so its top 1 % is two to ten of
them, and the trace's p99.5 falls in the gaps between a bin's largest few values. Linear
interpolation between order statistics (numpy's default) spreads each of those values'
probability down over the gap below it, which moved mass out of the tail: ``code`` output
p99.5 came out 8 % low (population quantile of the table; 9-10 % in 100k draws), and adding
more upper levels made it worse (-12 %). So the body (``BODY_LEVELS``, below the 98th
percentile of a bin, 1 % apart from the 75th up, where the longest inputs of a trace sit in
its top bin) keeps linear interpolation, while ``TAIL_LEVELS`` (98 to 100, every 0.1)
take the bin's own values (``inverted_cdf``, a step function): the tail is the trace's,
value for value. Table quantiles p99 and p99.5 are then within 1 % of the trace's for every
profile, input and output (``tests/unit/workload/test_profiles.py``).

Usage::

    llm-locust workload build-profiles TRACES_DIR [--out DIR]
    python -m llm_locust.workload.profile_builder TRACES_DIR

``TRACES_DIR`` holds the files named in ``SOURCES``; ``--out`` defaults to the package's
``profiles/`` folder. The output is deterministic: run it twice, get the same bytes.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from llm_locust.workload.profiles import PROFILE_DIR

__all__ = ["BINS", "BODY_LEVELS", "LEVELS", "SOURCES", "TAIL_LEVELS", "build", "load_columns", "main"]

BINS = 32
BODY_LEVELS: list[float] = [
    *(0.0, 0.5, 1.0, 2.5, 5.0, 7.5, 10.0, 15.0, 20.0, 25.0, 30.0, 35.0, 40.0, 45.0, 50.0),
    *(55.0, 60.0, 65.0, 70.0),
    *(float(x) for x in range(75, 98)),
]
TAIL_LEVELS: list[float] = [round(98 + i / 10, 1) for i in range(21)]
LEVELS = BODY_LEVELS + TAIL_LEVELS
BLOCK_TOKENS = 512

_AZURE = 'Patel et al., "Splitwise: Efficient Generative LLM Inference Using Phase Splitting", ISCA 2024.'
SOURCES: dict[str, dict[str, str]] = {
    "chat": {
        "file": "AzureLLMInferenceTrace_conv.csv",
        "description": "Azure LLM inference trace 2023, conversation service (Splitwise)",
        "license": "CC-BY-4.0",
        "citation": f"{_AZURE} Data: github.com/Azure/AzurePublicDataset",
    },
    "code": {
        "file": "AzureLLMInferenceTrace_code.csv",
        "description": "Azure LLM inference trace 2023, code service (Splitwise)",
        "license": "CC-BY-4.0",
        "citation": f"{_AZURE} Data: github.com/Azure/AzurePublicDataset",
    },
    "long-context": {
        "file": "conversation_trace.jsonl",
        "description": "Mooncake FAST'25 conversation trace (Kimi), long inputs with prefix-block reuse",
        "license": "Apache-2.0",
        "citation": 'Qin et al., "Mooncake: Trading More Storage for Less Computation - A '
        'KVCache-centric Architecture for Serving LLM Chatbot", FAST 2025. '
        "Data: github.com/kvcache-ai/Mooncake",
    },
    "sharegpt": {
        "file": "sharegpt_8k_filtered_stats_llama2_tokenizer.csv",
        "description": "ShareGPT-8K turn length statistics (Llama-2 tokenizer), "
        "from etalon/Vidur/Sarathi-Serve",
        "license": "Apache-2.0 (etalon); ShareGPT conversations themselves have an unclear licence",
        "citation": "project-etalon/etalon "
        "data/processed_traces/sharegpt_8k_filtered_stats_llama2_tokenizer.csv",
    },
}


def load_columns(path: Path) -> dict[str, np.ndarray]:
    """The trace as columns: ``input``, ``output`` and for Mooncake ``reused_blocks``."""
    if path.suffix == ".jsonl":
        return _load_mooncake(path)
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    if "ContextTokens" in rows[0]:
        keys = ("ContextTokens", "GeneratedTokens")
    else:
        keys = ("num_prefill_tokens", "num_decode_tokens")
    return {
        "input": np.array([int(r[keys[0]]) for r in rows]),
        "output": np.array([int(r[keys[1]]) for r in rows]),
    }


def _load_mooncake(path: Path) -> dict[str, np.ndarray]:
    seen: set[int] = set()
    inp, out, reused = [], [], []
    for line in path.read_text().splitlines():
        row = json.loads(line)
        hashes = row["hash_ids"]
        k = 0
        while k < len(hashes) and hashes[k] in seen:
            k += 1
        seen.update(hashes)
        inp.append(row["input_length"])
        out.append(row["output_length"])
        reused.append(k)
    return {"input": np.array(inp), "output": np.array(out), "reused_blocks": np.array(reused)}


def bin_quantiles(values: np.ndarray) -> list[float]:
    """One bin's column at ``LEVELS``: interpolated in the body, the bin's own values in the tail."""
    body = np.percentile(values, BODY_LEVELS, method="linear")
    tail = np.percentile(values, TAIL_LEVELS, method="inverted_cdf")
    return [round(float(v), 1) for v in np.maximum.accumulate(np.concatenate([body, tail]))]


def joint_table(cols: dict[str, np.ndarray]) -> list[dict[str, list[float]]]:
    """Sort by input (ties broken by output), cut into equal-count bins, quantiles per column."""
    order = np.lexsort((cols["output"], cols["input"]))
    return [
        {name: bin_quantiles(col[idx]) for name, col in cols.items()} for idx in np.array_split(order, BINS)
    ]


def build(name: str, traces: Path) -> dict[str, Any]:
    meta = SOURCES[name]
    cols = load_columns(traces / meta["file"])
    prof: dict[str, Any] = {
        "name": name,
        **meta,
        "format": "joint-quantile-table/1",
        "rows": len(cols["input"]),
        "levels": LEVELS,
        "bins": joint_table(cols),
        "stats": {
            c: {"mean": round(float(v.mean()), 2), "min": int(v.min()), "max": int(v.max())}
            for c, v in cols.items()
        },
    }
    if "reused_blocks" in cols:
        prof["prefix"] = {
            "block_tokens": BLOCK_TOKENS,
            "global_blocks": 1,  # every request starts with hash block 0: one shared system prompt
            "reused_token_fraction": round(
                float((cols["reused_blocks"] * BLOCK_TOKENS).sum() / cols["input"].sum()), 4
            ),
            "groups": 256,
        }
    return prof


class _Parser(argparse.ArgumentParser):
    """Bad arguments: one line on stderr, exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def main(argv: Sequence[str] | None = None) -> int:
    p = _Parser(prog="llm-locust workload build-profiles", description=__doc__.splitlines()[0])
    p.add_argument("traces", type=Path, help="folder with the trace files (see SOURCES)")
    p.add_argument("--out", type=Path, default=PROFILE_DIR, help="output folder (default: the package's)")
    try:
        args = p.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    missing = [m["file"] for m in SOURCES.values() if not (args.traces / m["file"]).is_file()]
    if missing:
        print(f"{p.prog}: error: not in {args.traces}: {', '.join(missing)}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    for name in SOURCES:
        prof = build(name, args.traces)
        path = args.out / f"{name}.json"
        path.write_text(json.dumps(prof, separators=(",", ":")) + "\n")
        print(f"{path}: {prof['rows']} rows, {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
