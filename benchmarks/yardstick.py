"""llm-locust's own overhead against a reference client, in one sitting, as ratios.

The yardstick (``/work/shared/yardstick``, or ``$YARDSTICK_DIR``): ``sse_server.js``, a
fast OpenAI-compatible SSE server that keeps its timing to about a millisecond, and
``ref_client.js``, a minimal closed-loop Node client (what one core can do when the
client costs almost nothing). For each stream count the server runs pinned to
``--server-cpu`` and each client in turn pinned to ``--client-cpu``; the same sampler
reads both clients' CPU and the server's open streams (``/stats``) twice a second.

Truth: TTFT ``--ttft-ms``, ITL ``--itl-ms``, ``--tokens`` per stream. The targets of
issue 15 §1, checked per stream count against the reference *of the same sitting*:

- TTFT p50 within the reference's + 1 ms; chunk ITL p99 within the reference's + 5 ms;
- TPOT (median over requests) within 1 % of the truth;
- every stream open (the server's mean in-flight count >= 99 % of the streams);
- no second of the client's flagged saturated (issue 29 §1): none of its health intervals
  in the steady window saturated by llm-locust's own rule
  (:func:`llm_locust.results.saturation.interval_saturated`: >= 90 % of a core, or the loop's
  p90 lateness >= 10 ms), the rule that would mark a stage invalid in a real run.

The table's ``sat`` is those seconds out of the window's (the reference has no health file:
``-``); ``CPU x`` the client's CPU over the reference's, the host-independent figure (a slow
sitting moves both).

The table's ``CPU%`` is each client's process CPU over the steady window and ``sys%`` the
kernel's part of it (system time: the socket reads, epoll), the part a faster user-space
client cannot take off.

llm-locust's numbers come from its ``requests.jsonl`` over the whole run, as the
reference's do (both start every stream at once); tok/s counts the tokens that arrived
in the run (``--stop-timeout`` lets the last streams finish so every one is on disk).

    .venv/bin/python benchmarks/yardstick.py --streams 200,400,500 --duration 30
    .venv/bin/python benchmarks/yardstick.py --streams 500 --profile /tmp/prof   # py-spy, raw
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
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from bench_common import REPO, ProcessSampler, export, free_port, pinned, write_result

from llm_locust.results.saturation import interval_saturated

__all__ = ["main"]


def yardstick_dir(given: str | None) -> Path:
    for candidate in (
        given,
        os.environ.get("YARDSTICK_DIR"),
        REPO.parent / "shared/yardstick",
        REPO.parent.parent / "shared/yardstick",
    ):
        if candidate and (Path(candidate) / "sse_server.js").exists():
            return Path(candidate)
    raise SystemExit("yardstick: sse_server.js not found (give --yardstick DIR or set YARDSTICK_DIR)")


def loadavg() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


class Sampler(ProcessSampler):
    """(time, client CPU seconds, server streams in flight) twice a second (the CPU of the
    client's child processes too: ``--processes N``)."""

    def __init__(self, pid: int, stats_url: str) -> None:
        super().__init__(pid, lambda: _active(stats_url), period=0.5, tree=True)

    def window(self, t0: float, t1: float) -> dict[str, float | None]:
        """CPU share and mean open streams between the first and last samples in ``[t0, t1]``;
        the CPU seconds and the samples' own times (``cpu_t0``, ``cpu_t1``) for per-unit costs."""
        index = [i for i, s in enumerate(self.samples) if t0 <= s[0] <= t1]
        if len(index) < 2:
            return dict.fromkeys(("cpu_pct", "sys_pct", "open_streams", "cpu_s", "cpu_t0", "cpu_t1"))
        inside = [self.samples[i] for i in index]
        (ta, ca, _), (tb, cb, _) = inside[0], inside[-1]
        return {
            "cpu_pct": 100.0 * (cb - ca) / (tb - ta),
            "sys_pct": 100.0 * (self.system[index[-1]] - self.system[index[0]]) / (tb - ta),
            "open_streams": float(np.mean([s[2] for s in inside])),
            "cpu_s": cb - ca,
            "cpu_t0": ta,
            "cpu_t1": tb,
        }


def _active(stats_url: str) -> float:
    with urllib.request.urlopen(stats_url, timeout=2) as reply:
        return float(json.load(reply)["active"])


def start_server(args: argparse.Namespace, yard: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [
        *pinned(args.server_cpu),
        "node",
        str(yard / "sse_server.js"),
        "--port",
        str(port),
        "--ttft-ms",
        str(args.ttft_ms),
        "--itl-ms",
        str(args.itl_ms),
        "--tokens",
        str(args.tokens),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(url + "/health", timeout=1).close()
            return proc, url
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("sse_server.js did not start")


def stop(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_reference(args: argparse.Namespace, yard: Path, url: str, streams: int) -> dict[str, Any]:
    cmd = [
        *pinned(args.client_cpu),
        "node",
        str(yard / "ref_client.js"),
        "--url",
        url,
        "-c",
        str(streams),
        "-t",
        str(args.duration),
        "--tokens",
        str(args.tokens),
    ]
    launch = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    sampler = Sampler(proc.pid, url + "/stats")
    sampler.start()
    try:
        out, _ = proc.communicate(timeout=args.duration + 60)
    finally:
        sampler.halt.set()
        stop(proc)
    ref = json.loads(out.strip().splitlines()[-1])
    window = sampler.window(launch + args.warmup, launch + args.duration - 0.5)
    return {
        "tok_s": ref["out_tok_s"],
        "cpu_pct": window["cpu_pct"],
        "sys_pct": window["sys_pct"],
        "open_streams": window["open_streams"],
        "ttft_p50_ms": ref["ttft_p50"],
        "ttft_p99_ms": ref["ttft_p99"],
        "itl_p50_ms": ref["itl_p50"],
        "itl_p99_ms": ref["itl_p99"],
        "tpot_ms": ref["itl_mean"],
        "requests": ref["requests"],
        "errors": ref["errors"],
        "cmd": " ".join(cmd),
    }


@dataclass(frozen=True)
class Variant:
    """One llm-locust to run: its code, its process count and the CPUs it is pinned to."""

    code: Path
    processes: int = 1
    cpu: str = "0"


def parse_variant(spec: str, args: argparse.Namespace, code: Path) -> tuple[str, Variant]:
    """``NAME=GITREF[,processes=N][,cpu=LIST]`` (GITREF ``.``: the working tree)."""
    name, _, rest = spec.partition("=")
    ref, *options = (rest or name).split(",")
    values = dict(option.split("=", 1) for option in options)
    processes = int(values.get("processes", args.processes))
    return name, Variant(export(ref, code / name), processes, values.get("cpu", args.client_cpu))


def locust_command(
    args: argparse.Namespace, url: str, streams: int, results: Path, variant: Variant
) -> list[str]:
    locust = REPO / ".venv/bin/locust"
    base = [str(locust)] if locust.exists() else [sys.executable, "-m", "locust"]
    code = variant.code
    return [
        *pinned(variant.cpu),
        *base,
        "-f",
        str(code / "locustfiles/chat.py"),
        "--headless",
        "-u",
        str(streams),
        "-r",
        str(streams),
        "-t",
        f"{args.duration}s",
        "--stop-timeout",
        "10",
        "-H",
        url,
        "--model",
        "mock-llm",
        "--prompt-tokens",
        "128",
        "--output-tokens",
        str(args.tokens),
        "--tokenizer",
        "none",
        "--results-dir",
        str(results),
        "--overwrite",
        "--only-summary",
        "--loglevel",
        "WARNING",
        *processes(variant.processes),
        *args.locust_arg,
    ]


def processes(n: int) -> list[str]:
    """``--processes n`` on a free master port (nothing for one process)."""
    if n <= 1:
        return []
    port = str(free_port())
    return ["--processes", str(n), "--master-bind-port", port, "--master-port", port]


def run_locust(
    args: argparse.Namespace,
    url: str,
    streams: int,
    results: Path,
    variant: Variant,
    name: str = "llm_locust",
) -> dict[str, Any]:
    cmd = locust_command(args, url, streams, results, variant)
    code = variant.code
    health = results.parent / f"{results.name}-health.jsonl"
    health.unlink(missing_ok=True)
    # an exported variant before the editable install; the client's health intervals to a file
    env = {**os.environ, "PYTHONPATH": str(code), "LLMLOCUST_HEALTH_LOG": str(health)}
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=code, env=env
    )
    sampler = Sampler(proc.pid, url + "/stats")
    sampler.start()
    try:
        err = _wait_locust(args, proc, f"{name}-{streams}")
    finally:
        sampler.halt.set()
        stop(proc)
    if proc.returncode != 0 or "Traceback" in err:
        raise RuntimeError(f"locust exited {proc.returncode}: {err[-3000:]}")
    summary = json.loads((results / "summary.json").read_text())
    t0 = summary["config"]["start_time"]
    out = analyse(results, t0, t0 + args.duration)
    window = sampler.window(t0 + args.warmup, t0 + args.duration - 0.5)
    out.update(window)
    out.update(cpu_per_unit(results, window))
    out.update(health_window(health, t0 + args.warmup, t0 + args.duration))
    out["cmd"] = " ".join(cmd)
    return out


def _wait_locust(args: argparse.Namespace, proc: subprocess.Popen[str], label: str) -> str:
    """Locust's stderr once it exits; py-spy samples it meanwhile if ``--profile``."""
    profiler = None
    if args.profile:
        time.sleep(args.warmup + 3)  # imports, preflight, warm-up
        out = _free_name(Path(args.profile) / f"locust-{label}.txt")
        py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        profiler = subprocess.Popen(
            [
                py_spy,
                "record",
                "--pid",
                str(proc.pid),
                "-d",
                str(args.duration // 2),
                "-r",
                "100",
                "--nonblocking",
                "--format",
                "raw",
                "-o",
                str(out),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    try:
        _, err = proc.communicate(timeout=args.duration + 90)
    finally:
        if profiler is not None:
            profiler.wait(30)
    return err


def _free_name(path: Path) -> Path:
    """``path``, or ``path`` with ``-2``, ``-3``... before its suffix if taken (``--repeat``)."""
    n = 1
    candidate = path
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
    return candidate


def health_window(path: Path, t0: float, t1: float) -> dict[str, float | None]:
    """The client's own loop lag in the window (llm_locust.client.health intervals, if it wrote
    them), and how many of its seconds there llm-locust's own rule flags saturated."""
    empty: dict[str, float | None] = dict.fromkeys(
        ("lag_mean_ms", "lag_p90_ms", "lag_max_ms", "health_cpu", "saturated_s", "health_s")
    )
    try:
        rows = [json.loads(line) for line in path.open()]
    except OSError:
        return empty
    inside = [r for r in rows if r["start"] >= t0 and r["end"] <= t1]
    if not inside or inside[0]["lag_mean_s"] is None:
        return empty
    return {
        "lag_mean_ms": 1e3 * float(np.mean([r["lag_mean_s"] for r in inside])),
        "lag_p90_ms": 1e3 * float(np.median([r["lag_p90_s"] for r in inside])),
        "lag_max_ms": 1e3 * max(r["lag_max_s"] for r in inside),
        "health_cpu": float(np.mean([r["cpu"] for r in inside])),
        "saturated_s": float(sum(map(interval_saturated, inside))),
        "health_s": float(len(inside)),
    }


def cpu_per_unit(results: Path, window: dict[str, float | None]) -> dict[str, float | None]:
    """The client's process CPU in the sampler's window per request that ended in it (ms) and per
    content chunk that arrived in it (µs): both divide the same CPU seconds, they are not a
    split. Process CPU time, so a busy host moves it far less than the latencies."""
    cpu_s, ta, tb = window["cpu_s"], window["cpu_t0"], window["cpu_t1"]
    if cpu_s is None or ta is None or tb is None:
        return {"cpu_ms_per_request": None, "cpu_us_per_chunk": None, "window_requests": None}
    ended = chunks = 0
    for line in (results / "requests.jsonl").open():
        r = json.loads(line)
        if r["e2e"] is not None and ta <= r["start_time"] + r["e2e"] < tb:
            ended += 1
        if r["ttft"] is not None:
            itl = np.asarray(r["itl"] or [], dtype=float)
            arrivals = r["start_time"] + r["ttft"] + np.concatenate(([0.0], np.cumsum(itl)))
            chunks += int(((arrivals >= ta) & (arrivals < tb)).sum())
    return {
        "cpu_ms_per_request": 1e3 * cpu_s / ended if ended else None,
        "cpu_us_per_chunk": 1e6 * cpu_s / chunks if chunks else None,
        "window_requests": ended,
        "window_chunks": chunks,
    }


def analyse(results: Path, t0: float, t1: float) -> dict[str, Any]:
    """TTFT, ITL, TPOT and tok/s from the records, as the reference computes them."""
    rows = [json.loads(line) for line in (results / "requests.jsonl").open()]
    ok = [r for r in rows if r["outcome"] == "ok"]
    ttft = np.array([r["ttft"] for r in ok]) * 1e3
    tpot = np.array([r["tpot"] for r in ok if r["tpot"] is not None]) * 1e3
    gaps, tokens = [], 0
    busy = sum(
        max(0.0, min(r["start_time"] + r["e2e"], t1) - max(r["start_time"], t0 + 5.0))
        for r in rows
        if r["e2e"] is not None
    )
    for r in ok:
        itl = np.asarray(r["itl"] or [], dtype=float)
        arrivals = r["start_time"] + r["ttft"] + np.concatenate(([0.0], np.cumsum(itl)))
        inside = (arrivals >= t0) & (arrivals < t1)
        tokens += int(inside.sum())
        gaps.append(itl[inside[1:]])
    itl_ms = np.concatenate(gaps) * 1e3 if gaps else np.array([])
    stalls = [r.get("client_stall_s") or 0.0 for r in ok]

    def q(values: np.ndarray, p: float) -> float | None:
        return float(np.percentile(values, p)) if values.size else None

    return {
        "tok_s": tokens / (t1 - t0),
        "ttft_p50_ms": q(ttft, 50),
        "ttft_p99_ms": q(ttft, 99),
        "itl_p50_ms": q(itl_ms, 50),
        "itl_p99_ms": q(itl_ms, 99),
        "tpot_ms": q(tpot, 50),
        "requests": len(ok),
        "errors": len(rows) - len(ok),
        "client_open": busy / (t1 - t0 - 5.0),
        "stalled_requests": sum(1 for s in stalls if s > 0),
    }


def verdict(
    args: argparse.Namespace, streams: int, ref: dict[str, Any], ours: dict[str, Any]
) -> dict[str, Any]:
    def delta(key: str) -> float | None:
        return None if ours[key] is None or ref[key] is None else ours[key] - ref[key]

    tpot_err = None if ours["tpot_ms"] is None else 100.0 * (ours["tpot_ms"] - args.itl_ms) / args.itl_ms
    checks = {
        "ttft_p50": (delta("ttft_p50_ms"), 1.0),
        "itl_p99": (delta("itl_p99_ms"), 5.0),
        "tpot_pct": (None if tpot_err is None else abs(tpot_err), 1.0),
        "open": (None if ours["open_streams"] is None else streams * 0.99 - ours["open_streams"], 0.0),
        "saturated": (ours.get("saturated_s"), 0.0),
    }
    passed = {k: v is not None and v <= limit for k, (v, limit) in checks.items()}
    return {
        "ttft_p50_delta_ms": checks["ttft_p50"][0],
        "itl_p99_delta_ms": checks["itl_p99"][0],
        "tpot_err_pct": tpot_err,
        "cpu_ratio": _ratio(ours["cpu_pct"], ref["cpu_pct"]),
        "tok_s_ratio": _ratio(ours["tok_s"], ref["tok_s"]),
        "passed": passed,
        "meets_target": all(passed.values()),
    }


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def _sat(r: dict[str, Any]) -> str:
    """Saturated seconds out of the window's (``-``: no health file, the reference)."""
    if r.get("saturated_s") is None:
        return "-"
    return f"{r['saturated_s']:.0f}/{r['health_s']:.0f}"


def _f(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def table(runs: list[dict[str, Any]]) -> str:
    lines = [
        f"{'streams':>7} {'client':>12} {'tok/s':>7} {'CPU%':>5} {'sys%':>4} {'open':>6} {'TTFT p50':>9} "
        f"{'ITL p99':>8} {'TPOT':>7} {'sat':>5} {'load':>5} {'lag mean/p90/max ms':>20} "
        f"{'ms/req':>7} {'us/chunk':>8}"
    ]
    for run in runs:
        for name, r in run["clients"].items():
            lines.append(
                f"{run['streams']:>7} {name[:12]:>12} {_f(r['tok_s'], '.0f'):>7} "
                f"{_f(r['cpu_pct'], '.0f'):>5} {_f(r.get('sys_pct'), '.0f'):>4} "
                f"{_f(r['open_streams'], '.1f'):>6} {_f(r['ttft_p50_ms'], '.2f'):>9} "
                f"{_f(r['itl_p99_ms'], '.2f'):>8} {_f(r['tpot_ms'], '.3f'):>7} {_sat(r):>5} "
                f"{r['load_before']:>5.2f} "
                f"{_f(r.get('lag_mean_ms'), '.2f'):>6}/{_f(r.get('lag_p90_ms'), '.2f')}/"
                f"{_f(r.get('lag_max_ms'), '.1f')} {_f(r.get('cpu_ms_per_request'), '.3f'):>7} "
                f"{_f(r.get('cpu_us_per_chunk'), '.2f'):>8}"
            )
        for name, v in run["verdicts"].items():
            failed = [k for k, ok in v["passed"].items() if not ok]
            lines.append(
                f"{'':>7} {name[:12]:>12} tok/s x{_f(v['tok_s_ratio'], '.3f')}, "
                f"CPU x{_f(v['cpu_ratio'], '.2f')}, "
                f"TTFT p50 {_f(v['ttft_p50_delta_ms'], '+.2f')} ms, "
                f"ITL p99 {_f(v['itl_p99_delta_ms'], '+.2f')} ms, "
                f"TPOT {_f(v['tpot_err_pct'], '+.2f')} %: "
                + ("PASS" if not failed else "FAIL " + ",".join(failed))
            )
    return "\n".join(lines)


def sitting(
    args: argparse.Namespace, yard: Path, streams: int, variants: dict[str, Variant]
) -> dict[str, Any]:
    """The reference, then each variant of llm-locust, each against a fresh server."""
    run: dict[str, Any] = {"streams": streams, "clients": {}, "verdicts": {}}
    for name in [*([] if args.no_reference else ["reference"]), *variants]:
        load = loadavg()
        server, url = start_server(args, yard)
        try:
            with tempfile.TemporaryDirectory(prefix="yardstick-") as tmp:
                if name == "reference":
                    result = run_reference(args, yard, url, streams)
                else:
                    keep = Path(args.keep) / f"{name}-s{streams}" if args.keep else None
                    result = run_locust(
                        args, url, streams, keep or Path(tmp) / "results", variants[name], name
                    )
        finally:
            stop(server)
        result["load_before"] = load
        run["clients"][name] = result
        print(f"streams={streams} {name}: done (load {load:.2f})", flush=True)
    for name in variants if not args.no_reference else ():
        run["verdicts"][name] = verdict(args, streams, run["clients"]["reference"], run["clients"][name])
    return run


def _ordered(variants: dict[str, Variant], reverse: bool) -> dict[str, Variant]:
    """The variants in the order given, or reversed (``--alternate``'s every other sitting)."""
    return dict(reversed(variants.items())) if reverse else variants


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", default="200,500", help="comma-separated stream counts")
    parser.add_argument("--duration", type=int, default=30, help="seconds per client run")
    parser.add_argument(
        "--warmup", type=float, default=5.0, help="CPU and open streams: seconds not measured"
    )
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--ttft-ms", type=float, default=100.0)
    parser.add_argument("--itl-ms", type=float, default=10.0)
    parser.add_argument("--server-cpu", default="1", help="taskset CPU list, or none")
    parser.add_argument("--client-cpu", default="0", help="taskset CPU list (0,1), or none")
    parser.add_argument(
        "--processes", type=int, default=1, help="llm-locust with --processes N (the reference: one)"
    )
    parser.add_argument("--yardstick", help="directory of sse_server.js and ref_client.js")
    parser.add_argument(
        "--locust-arg", action="append", default=[], help="extra locust argument (repeatable)"
    )
    parser.add_argument("--profile", help="py-spy raw profiles of llm-locust into this directory")
    parser.add_argument("--keep", help="keep llm-locust's results folders under this directory")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        help="NAME=GITREF[,processes=N][,cpu=LIST]: also run llm-locust as of GITREF (. = the "
        "working tree), with N processes, pinned to LIST (repeatable; default: the working tree)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="sittings per stream count")
    parser.add_argument(
        "--alternate",
        action="store_true",
        help="every other sitting runs the variants in reverse order (none always runs last)",
    )
    parser.add_argument(
        "--no-reference",
        action="store_true",
        help="run only llm-locust's variants (CPU per request and per chunk; no accuracy verdict)",
    )
    parser.add_argument("--label", default="")
    parser.add_argument("--out", default=str(REPO / "benchmarks/results/yardstick.json"))
    args = parser.parse_args(argv)
    yard = yardstick_dir(args.yardstick)
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="yardstick-code-") as code:
        variants = {"llm_locust": Variant(REPO, args.processes, args.client_cpu)} if not args.variant else {}
        for spec in args.variant:
            name, variant = parse_variant(spec, args, Path(code))
            variants[name] = variant
        runs = [
            sitting(args, yard, streams, _ordered(variants, args.alternate and repeat % 2 == 1))
            for streams in [int(s) for s in args.streams.split(",") if s.strip()]
            for repeat in range(args.repeat)
        ]
    print(table(runs))
    write_result("yardstick", args, runs, label=args.label)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
