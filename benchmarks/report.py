"""Benchmark: the end-of-run analysis and ``report.html`` for a run of 100k requests.

    .venv/bin/python benchmarks/report.py [--requests 100000] [--out benchmarks/results/report.json]

Writes a synthetic results folder (a 5-stage ramp, output lengths lognormal around 128
tokens with one ITL gap per token, 1 % failures, server metrics every 5 s), then times:
reading ``requests.jsonl``, :func:`llm_locust.results.analysis.analyse` (windows, drift,
vLLM keys: the cost added where the summary is written), and ``llm-locust report``'s
:func:`~llm_locust.report.build.write_report` (load + charts + page), and reports the file
sizes and the peak memory (ru_maxrss) of the process.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from llm_locust.record import RequestRecord  # noqa: E402
from llm_locust.report.build import write_report  # noqa: E402
from llm_locust.results.analysis import analyse  # noqa: E402
from llm_locust.results.columns import read_rows  # noqa: E402
from llm_locust.results.slo import evaluate, parse_slo  # noqa: E402
from llm_locust.results.summary import summarize  # noqa: E402

T0 = 1_800_000_000.0
USERS = (8, 16, 32, 64, 128)
SLO = "success>=99%,ttft_p95<=2s,e2e_p99<=30s"


def synthetic_rows(n: int, seed: int = 1) -> list[dict]:
    rng = np.random.default_rng(seed)
    per_stage = n // len(USERS)
    stage_s = 600.0
    rows = []
    for stage, users in enumerate(USERS):
        starts = T0 + stage * stage_s + np.sort(rng.uniform(0, stage_s, per_stage))
        tokens = np.clip(rng.lognormal(np.log(128), 0.6, per_stage), 2, 2000).astype(int)
        ttft = rng.lognormal(np.log(0.05 * users**0.5), 0.4, per_stage)
        tpot = 0.01 + 0.0003 * users + rng.exponential(0.002, per_stage)
        for i in range(per_stage):
            ok = rng.random() > 0.01
            gaps = np.round(rng.exponential(tpot[i], tokens[i] - 1), 6).tolist() if ok else []
            e2e = float(ttft[i] + sum(gaps)) if ok else 0.02
            rows.append(
                {
                    "request_id": f"{stage}-{i}",
                    "start_time": float(starts[i]),
                    "outcome": "ok" if ok else "http_5xx",
                    "message": "" if ok else "HTTP 503: overloaded",
                    "ttft": float(ttft[i]) if ok else None,
                    "tpot": (e2e - float(ttft[i])) / (tokens[i] - 1) if ok else None,
                    "e2e": e2e,
                    "itl": gaps,
                    "prompt_tokens": 1024 if ok else None,
                    "completion_tokens": int(tokens[i]) if ok else None,
                    "token_source": "usage" if ok else None,
                    "target_input_tokens": 1024,
                    "target_output_tokens": int(tokens[i]),
                    "stage": stage,
                    "warmup": False,
                }
            )
    return rows


def write_folder(folder: Path, rows: list[dict]) -> None:
    with open(folder / "requests.jsonl", "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
    with open(folder / "server_metrics.jsonl", "w", encoding="utf-8") as f:
        for k in range(int(len(USERS) * 600 / 5)):
            t = T0 + 5 * k
            for name, value in (("vllm:num_requests_waiting", k % 7), ("vllm:kv_cache_usage_perc", 0.5)):
                f.write(json.dumps({"t": t, "name": name, "labels": {}, "value": value}) + "\n")


def base_summary(rows: list[dict]) -> dict:
    spec = parse_slo(SLO)
    summary = summarize(rows, len(USERS) * 600.0)
    stages = []
    for index, users in enumerate(USERS):
        own = [r for r in rows if r["stage"] == index]
        entry = {"index": index, "kind": "users", "target": users, "label": f"users={users}"}
        entry.update(summarize(own, 600.0))
        entry["window"] = {"start": T0 + index * 600, "end": T0 + (index + 1) * 600}
        entry["slo"] = evaluate(spec, [RequestRecord.from_json(r) for r in own], 600.0).to_json()
        stages.append(entry)
    summary["stages"] = stages
    end = T0 + len(USERS) * 600
    summary["config"] = {"model": "bench", "start_time": T0, "stop_time": end, "options": {}}
    return summary


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "report.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="llm-locust-report-bench-") as tmp:
        folder = Path(tmp)
        write_folder(folder, synthetic_rows(args.requests))
        started = time.perf_counter()
        rows = list(read_rows(folder / "requests.jsonl"))
        read_s = time.perf_counter() - started
        summary = base_summary(rows)
        started = time.perf_counter()
        analyse(summary, rows, rows, folder, parse_slo(SLO), window_s=30.0)
        analyse_s = time.perf_counter() - started
        (folder / "summary.json").write_text(json.dumps(summary))
        del rows
        started = time.perf_counter()
        path = write_report([folder], folder / "report.html")
        report_s = time.perf_counter() - started
        result = {
            "requests": args.requests,
            "requests_jsonl_mb": round((folder / "requests.jsonl").stat().st_size / 1e6, 1),
            "read_requests_jsonl_s": round(read_s, 2),
            "analyse_s": round(analyse_s, 2),
            "report_s": round(report_s, 2),
            "report_html_mb": round(path.stat().st_size / 1e6, 2),
            "summary_json_mb": round((folder / "summary.json").stat().st_size / 1e6, 2),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 0),
        }
    print(json.dumps(result, indent=2))
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
