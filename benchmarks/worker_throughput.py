"""How much load can one llm-locust worker process generate, and how true do its timings stay?

For each user count: start ``llm-locust sim`` in fixed mode (pinned to CPU 1), run one
headless Locust process (the local runner: one process that generates the load, pinned
to CPU 0) with the default chat locustfile against it, sample that process's CPU with
psutil once a second, then compare what it measured with what the simulator was told to
do: TTFT error = measured - ``--ttft-ms``, ITL/TPOT error = measured - ``--tpot-ms``.

Steady window: users start over ``--ramp`` seconds; the window runs from ramp + warm-up
to the end of ``-t``. Locust is given ``--stop-timeout`` so the requests in flight at the
end finish and are recorded, which makes every token that arrived inside the window
visible in ``requests.jsonl`` (arrival = start_time + ttft + cumulative itl):

- sustained output tok/s = tokens that arrived in the window / window length;
- TTFT and TPOT stats: requests sent inside the window (steady-state, keep-alive
  connections, not the synchronized first wave of users);
- ITL stats: every inter-chunk gap that ended inside the window;
- CPU: psutil samples inside the window (mean) and over the whole run (max).

``summary.json``'s own numbers (all requests, incl. the ramp) are kept in the JSON too.
Offered load at TTFT t and TPOT p with N output tokens: users x N / (t + (N-1) p),
e.g. 1,000 users x 1024 / 20.56 s = 49,800 tok/s.

    .venv/bin/python benchmarks/worker_throughput.py --users 100,500,1000 --duration 30
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil

__all__ = ["main"]

REPO = Path(__file__).resolve().parent.parent
LISTEN = re.compile(r"listening on (http://\S+)")
SUMMARY_KEYS = (
    "completed", "failed", "duration", "output_throughput", "median_ttft_ms", "p99_ttft_ms",
    "median_tpot_ms", "p99_tpot_ms", "median_itl_ms", "p99_itl_ms",
)  # fmt: skip


def _pin(cpu: int | None) -> Any:
    if cpu is None or not hasattr(os, "sched_setaffinity"):
        return None
    if cpu not in os.sched_getaffinity(0):
        return None
    return lambda: os.sched_setaffinity(0, {cpu})


def start_sim(args: argparse.Namespace) -> tuple[subprocess.Popen[str], str]:
    cmd = [
        sys.executable, "-m", "llm_locust.sim", "--host", "127.0.0.1", "--port", "0",
        "--ttft-ms", str(args.ttft_ms), "--tpot-ms", str(args.tpot_ms),
        "--output-tokens", str(args.output_tokens),
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO,
        preexec_fn=_pin(args.sim_cpu),
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = LISTEN.search(line)
    if not match:
        proc.kill()
        raise RuntimeError(f"simulator did not start: {line!r}")
    return proc, match.group(1)


def stop(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class CpuSampler(threading.Thread):
    """psutil cpu_percent of one process, once a second: (time.time(), percent)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.proc = psutil.Process(pid)
        self.samples: list[tuple[float, float]] = []
        self.halt = threading.Event()

    def run(self) -> None:
        try:
            self.proc.cpu_percent(None)
            while not self.halt.wait(1.0):
                self.samples.append((time.time(), self.proc.cpu_percent(None)))
        except psutil.Error:
            pass


def run_locust(args: argparse.Namespace, users: int, base_url: str, results: Path) -> dict[str, Any]:
    spawn_rate = max(users / args.ramp, 1.0) if args.ramp > 0 else users
    cmd = [
        str(REPO / ".venv/bin/locust"), "-f", args.locustfile, "--host", base_url,
        "--headless", "-u", str(users), "-r", f"{spawn_rate:g}", "-t", f"{args.duration}s",
        "--stop-timeout", str(args.stop_timeout), "--results-dir", str(results), "--overwrite",
        "--prompt-tokens", str(args.prompt_tokens), "--max-tokens", str(args.output_tokens),
        "--only-summary", "--loglevel", "WARNING",
    ]  # fmt: skip
    if not Path(cmd[0]).exists():
        cmd[0:1] = [sys.executable, "-m", "locust"]
    t_launch = time.time()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=REPO,
        preexec_fn=_pin(args.locust_cpu),
    )  # fmt: skip
    sampler = CpuSampler(proc.pid)
    sampler.start()
    hard_limit = args.duration + args.stop_timeout + 60
    try:
        _, err = proc.communicate(timeout=hard_limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise RuntimeError(f"locust did not finish within {hard_limit} s") from None
    finally:
        sampler.halt.set()
        sampler.join(2)
    if proc.returncode != 0:
        raise RuntimeError(f"locust exited {proc.returncode}: {err[-2000:]}")
    return {"launch": t_launch, "cpu": sampler.samples, "cmd": cmd}


def pct(values: Any, q: float) -> float | None:
    arr = np.asarray(values, dtype=float)
    return float(np.percentile(arr, q)) if arr.size else None


def analyse(args: argparse.Namespace, users: int, results: Path, run: dict[str, Any]) -> dict[str, Any]:
    summary = json.loads((results / "summary.json").read_text())
    rows = [json.loads(line) for line in (results / "requests.jsonl").open()]
    t0 = summary["config"]["start_time"]
    w0, w1 = t0 + args.ramp + args.warmup, t0 + args.duration
    tokens_in_window = 0
    steady_ttft, steady_tpot, itl = [], [], []
    ok = [r for r in rows if r["outcome"] == "ok"]
    for r in ok:
        gaps = np.asarray(r.get("itl") or [], dtype=float)
        first = r["start_time"] + r["ttft"]
        arrivals = first + np.concatenate(([0.0], np.cumsum(gaps)))
        inside = (arrivals >= w0) & (arrivals < w1)
        tokens_in_window += int(inside.sum())
        itl.extend(gaps[inside[1:]].tolist())
        if w0 <= r["start_time"] < w1:
            steady_ttft.append(r["ttft"])
            if r.get("tpot") is not None:
                steady_tpot.append(r["tpot"])
    window = w1 - w0
    cpu_in = [c for t, c in run["cpu"] if w0 <= t < w1]
    cpu_all = [c for _, c in run["cpu"]]
    ttft_ms = np.asarray(steady_ttft) * 1000.0
    tpot_ms = np.asarray(steady_tpot) * 1000.0
    itl_ms = np.asarray(itl) * 1000.0
    n_out = args.output_tokens
    offered = users * n_out / ((args.ttft_ms + (n_out - 1) * args.tpot_ms) / 1000.0)

    def err(values: np.ndarray, q: float, target: float) -> float | None:
        v = pct(values, q)
        return None if v is None else v - target

    def rel(e: float | None) -> float | None:
        return None if e is None else 100.0 * e / args.tpot_ms

    out: dict[str, Any] = {
        "users": users,
        "offered_tok_s": offered,
        "sustained_tok_s": tokens_in_window / window,
        "window_s": window,
        "cpu_mean_pct": float(np.mean(cpu_in)) if cpu_in else None,
        "cpu_max_pct": max(cpu_all) if cpu_all else None,
        "requests_ok": len(ok),
        "requests_failed": len(rows) - len(ok),
        "steady_requests": len(steady_ttft),
        "steady_itl_gaps": int(itl_ms.size),
        "ttft_err_median_ms": err(ttft_ms, 50, args.ttft_ms),
        "ttft_err_p99_ms": err(ttft_ms, 99, args.ttft_ms),
        "tpot_err_median_ms": err(tpot_ms, 50, args.tpot_ms),
        "tpot_err_p99_ms": err(tpot_ms, 99, args.tpot_ms),
        "itl_err_median_ms": err(itl_ms, 50, args.tpot_ms),
        "itl_err_p99_ms": err(itl_ms, 99, args.tpot_ms),
        "itl_err_p1_ms": err(itl_ms, 1, args.tpot_ms),
        "summary_json": {k: summary.get(k) for k in SUMMARY_KEYS},
        "client_cpu_peak_percent_locust": summary["config"].get("client_cpu_peak_percent"),
    }
    out["tpot_err_median_pct"] = rel(out["tpot_err_median_ms"])
    out["tpot_err_p99_pct"] = rel(out["tpot_err_p99_ms"])
    out["itl_err_median_pct"] = rel(out["itl_err_median_ms"])
    out["itl_err_p99_pct"] = rel(out["itl_err_p99_ms"])
    out["meets_target"] = bool(
        out["sustained_tok_s"] >= 30_000
        and out["ttft_err_median_ms"] is not None
        and abs(out["ttft_err_median_ms"]) <= 2.0
        and out["tpot_err_median_pct"] is not None
        and abs(out["tpot_err_median_pct"]) <= 1.0
    )
    return out


def _f(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        f"{'users':>6} {'offered':>8} {'tok/s':>8} {'CPU%':>11} {'load':>5} "
        f"{'TTFT err ms':>13} {'TPOT err ms (%)':>22} {'ITL err ms':>13} {'reqs':>5}"
    )
    lines = [head, f"{'':>6} {'':>8} {'':>8} {'mean/max':>11} {'':>5} {'med / p99':>13} "
             f"{'med / p99':>22} {'med / p99':>13}"]  # fmt: skip
    for r in rows:
        cpu = f"{_f(r['cpu_mean_pct'], '.0f'):>5}/{_f(r['cpu_max_pct'], '.0f'):<5}"
        lines.append(
            f"{r['users']:>6} {r['offered_tok_s']:>8.0f} {r['sustained_tok_s']:>8.0f} "
            f"{cpu} {r['loadavg_before'][0]:>5.2f} "
            f"{_f(r['ttft_err_median_ms'], '+.2f'):>6}/{_f(r['ttft_err_p99_ms'], '+.1f'):<6} "
            f"{_f(r['tpot_err_median_ms'], '+.3f')} ({_f(r['tpot_err_median_pct'], '+.2f')}%)/"
            f"{_f(r['tpot_err_p99_ms'], '+.2f'):<6} "
            f"{_f(r['itl_err_median_ms'], '+.2f'):>6}/{_f(r['itl_err_p99_ms'], '+.1f'):<6} "
            f"{r['steady_requests']:>5}"
        )
    return "\n".join(lines)


def loadavg() -> list[float]:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return [float("nan")] * 3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", default="100,500,1000", help="comma-separated user counts")
    parser.add_argument("--duration", type=int, default=30, help="-t of each run, seconds")
    parser.add_argument("--ramp", type=float, default=5.0, help="users start over this many seconds")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds after the ramp not measured")
    parser.add_argument("--stop-timeout", type=int, default=90, help="let in-flight requests finish")
    parser.add_argument("--tpot-ms", type=float, default=20.0)
    parser.add_argument("--ttft-ms", type=float, default=100.0)
    parser.add_argument("--output-tokens", type=int, default=1024)
    parser.add_argument("--prompt-tokens", type=int, default=32)
    parser.add_argument("--locust-cpu", type=int, default=0, help="pin locust here (-1: no pinning)")
    parser.add_argument("--sim-cpu", type=int, default=1, help="pin the simulator here (-1: no pinning)")
    parser.add_argument("--locustfile", default=str(REPO / "locustfiles/chat.py"))
    parser.add_argument("--label", default="", help="a name for this configuration, kept in the JSON")
    parser.add_argument("--keep", help="keep each run's results folder under this directory")
    parser.add_argument("--out", default=str(REPO / "benchmarks/results/worker_throughput.json"))
    args = parser.parse_args(argv)
    args.locust_cpu = None if args.locust_cpu < 0 else args.locust_cpu
    args.sim_cpu = None if args.sim_cpu < 0 else args.sim_cpu
    user_counts = [int(u) for u in args.users.split(",") if u.strip()]
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="llm-locust-wt-"))
    base.mkdir(parents=True, exist_ok=True)
    rows = []
    for users in user_counts:
        before = loadavg()
        sim, base_url = start_sim(args)
        try:
            results = base / f"u{users}"
            t = time.time()
            run = run_locust(args, users, base_url, results)
            sim_cpu = psutil.Process(sim.pid).cpu_times()
        finally:
            stop(sim)
        row = analyse(args, users, results, run)
        row["loadavg_before"], row["loadavg_after"] = before, loadavg()
        row["wall_s"] = time.time() - t
        row["sim_cpu_s"] = sim_cpu.user + sim_cpu.system
        row["command"] = " ".join(run["cmd"])
        rows.append(row)
        print(f"users={users}: {row['sustained_tok_s']:.0f} tok/s, CPU {_f(row['cpu_mean_pct'], '.0f')} %, "
              f"load {before[0]:.2f}, wall {row['wall_s']:.0f} s", flush=True)  # fmt: skip
    print(table(rows))
    out = {
        "benchmark": "worker_throughput",
        "args": {k: v for k, v in vars(args).items()},
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "pinned": {"locust": args.locust_cpu, "sim": args.sim_cpu},
        "runs": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
