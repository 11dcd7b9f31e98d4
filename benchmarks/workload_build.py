"""How long building a workload takes, and what one request costs to draw.

    .venv/bin/python benchmarks/workload_build.py [--requests 1000] [--repeat 5]

A workload is built once per process before any load (a tokenizer costs every distinct
corpus piece and nonce word once), then each Locust user draws its requests from it on
the hot path. For each configuration this prints the build time (first build in the
process, then the median of ``--repeat`` more) and the median time per ``next_request()``
over ``--requests`` requests, and checks the targets that used to be wall-clock asserts in
``tests/unit/workload/test_prompts.py``: build + 1,000 requests under 3 s with the
approximate rule and under 5 s with a tokenizer.json. The tokenizer is a byte-level BPE
trained here on the corpus (nothing is downloaded); ``--tokenizer PATH`` uses a real one.
Results: ``benchmarks/results/workload_build.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from llm_locust.config.build import build_config  # noqa: E402
from llm_locust.config.register import register  # noqa: E402
from llm_locust.workload.build import build_workload  # noqa: E402
from llm_locust.workload.corpus import NONCE_SLOTS, PARAGRAPHS  # noqa: E402

TARGETS = {"none": 3.0, "tokenizer.json": 5.0}  # seconds: build + 1,000 requests


def _train_tokenizer(path: Path) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    rng = np.random.default_rng(
        0
    )  # the corpus, and sentences of the nonce's words (as a real vocabulary has them)
    words = [[str(rng.choice(s)) for s in NONCE_SLOTS] for _ in range(6000)]
    text = list(PARAGRAPHS) * 3 + [
        " ".join(" ".join(w) + "." for w in words[i : i + 3]) for i in range(0, 6000, 3)
    ]
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    tok.train_from_iterator(text, trainer=trainers.BpeTrainer(vocab_size=6000, initial_alphabet=alphabet))
    tok.save(str(path))
    return path


def _build(argv: list[str]) -> Any:
    p = argparse.ArgumentParser()
    register(p, ("workload",), environ={})
    return build_workload(build_config(vars(p.parse_args(argv)), environ={}).workload)


def _measure(argv: list[str], requests: int, repeat: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    w = _build(argv)
    first = time.perf_counter() - t0
    builds, per_request = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        w = _build(argv)
        builds.append(time.perf_counter() - t0)
        src = w.source(0)
        t0 = time.perf_counter()
        for _ in range(requests):
            spec = src.next_request()
            src.observe(spec, "A short reply.", True)
        per_request.append((time.perf_counter() - t0) / requests)
    return {
        "argv": argv,
        "first_build_s": round(first, 3),
        "build_s_median": round(statistics.median(builds), 3),
        "request_us_median": round(statistics.median(per_request) * 1e6, 1),
        "build_plus_requests_s": round(first + statistics.median(per_request) * requests, 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--tokenizer", default=None, help="a tokenizer.json (default: one trained here)")
    parser.add_argument("--out", default=str(REPO / "benchmarks/results/workload_build.json"))
    args = parser.parse_args()
    tok = args.tokenizer or str(_train_tokenizer(Path(tempfile.mkdtemp()) / "tokenizer.json"))
    configs = {
        "chat, approx": ["--workload", "chat"],
        "long-context, approx": ["--workload", "long-context"],
        "chat, multi-turn 4, approx": ["--workload", "chat", "--multi-turn", "4"],
        "synthetic + shared prefix, approx": [
            *("--input-tokens", "uniform:200,2000", "--shared-prefix-fraction", "0.5"),
            *("--shared-prefixes", "8", "--shared-prefix-tokens", "512"),
        ],
        "chat, tokenizer.json": ["--workload", "chat", "--tokenizer", tok],
        "long-context, tokenizer.json": ["--workload", "long-context", "--tokenizer", tok],
    }
    load = float(Path("/proc/loadavg").read_text().split()[0]) if Path("/proc/loadavg").exists() else None
    rows, ok = {}, True
    print(f"{'configuration':36s} {'first build':>11s} {'build':>8s} {'per request':>12s} {'build+1k':>9s}")
    for name, argv in configs.items():
        r = _measure(argv, args.requests, args.repeat)
        rows[name] = r
        target = TARGETS["tokenizer.json" if "--tokenizer" in argv else "none"]
        meets = r["build_plus_requests_s"] * 1000 / args.requests < target if "chat" in name else True
        ok &= meets
        print(
            f"{name:36s} {r['first_build_s']:10.2f}s {r['build_s_median']:7.2f}s "
            f"{r['request_us_median']:10.0f}µs {r['build_plus_requests_s']:8.2f}s",
            "" if meets else "  MISSED",
        )
    out = {
        "command": " ".join(["benchmarks/workload_build.py", *sys.argv[1:]]),
        "loadavg_1m_before": load,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "targets_s": TARGETS,
        "runs": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
