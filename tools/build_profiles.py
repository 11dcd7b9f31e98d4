"""Derive the built-in length profiles from the public traces.

Each profile is a *joint quantile table*: the trace's requests are sorted by input length
and cut into ``BINS`` equal-count bins; each bin stores quantiles of its input lengths and
of its output lengths at ``LEVELS``. Sampling picks a bin uniformly, then an input and an
output by inverse-CDF interpolation inside that bin, so the marginals are reproduced and
so is the input/output relation (at the resolution of one bin). For the Mooncake trace a
third column, the reused-prefix length in 512-token blocks (the count of leading
``hash_ids`` already seen earlier in the trace), is stored the same way.

Usage (from the repo root; the traces sit next to the repo in ``../shared/data/traces``)::

    .venv/bin/python tools/build_profiles.py [TRACES_DIR]

The output is deterministic: run it twice, get the same bytes.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np

BINS = 32
LEVELS = [
    0.0,
    0.5,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    15.0,
    20.0,
    25.0,
    30.0,
    35.0,
    40.0,
    45.0,
    50.0,
    55.0,
    60.0,
    65.0,
    70.0,
    75.0,
    80.0,
    85.0,
    90.0,
    92.5,
    95.0,
    97.5,
    99.0,
    99.5,
    100.0,
]
BLOCK_TOKENS = 512

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "llm_locust" / "workload" / "profiles"
DEFAULT_TRACES = REPO.parent / "shared" / "data" / "traces"

SOURCES = {
    "chat": {
        "file": "AzureLLMInferenceTrace_conv.csv",
        "description": "Azure LLM inference trace 2023, conversation service (Splitwise)",
        "license": "CC-BY-4.0",
        "citation": 'Patel et al., "Splitwise: Efficient Generative LLM Inference Using Phase '
        'Splitting", ISCA 2024. Data: github.com/Azure/AzurePublicDataset',
    },
    "code": {
        "file": "AzureLLMInferenceTrace_code.csv",
        "description": "Azure LLM inference trace 2023, code service (Splitwise)",
        "license": "CC-BY-4.0",
        "citation": 'Patel et al., "Splitwise: Efficient Generative LLM Inference Using Phase '
        'Splitting", ISCA 2024. Data: github.com/Azure/AzurePublicDataset',
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


def joint_table(cols: dict[str, np.ndarray]) -> list[dict[str, list[float]]]:
    """Sort by input (ties broken by output), cut into equal-count bins, quantiles per column."""
    order = np.lexsort((cols["output"], cols["input"]))
    bins = []
    for idx in np.array_split(order, BINS):
        bins.append(
            {
                name: [round(float(v), 1) for v in np.percentile(col[idx], LEVELS)]
                for name, col in cols.items()
            }
        )
    return bins


def build(name: str, traces: Path) -> dict:
    meta = SOURCES[name]
    cols = load_columns(traces / meta["file"])
    prof = {
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


def main(argv: list[str]) -> int:
    traces = Path(argv[0]) if argv else DEFAULT_TRACES
    OUT.mkdir(parents=True, exist_ok=True)
    for name in SOURCES:
        prof = build(name, traces)
        path = OUT / f"{name}.json"
        path.write_text(json.dumps(prof, separators=(",", ":")) + "\n")
        print(f"{path.relative_to(REPO)}: {prof['rows']} rows, {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
