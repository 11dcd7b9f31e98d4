"""How many streaming tokens/s can ``llm-locust sim`` deliver, and how precisely timed?

Starts the simulator as a subprocess (fixed mode), then drives N concurrent closed-loop
streaming chat clients from ``--client-procs`` other processes (raw asyncio sockets,
minimal parsing) for a fixed time. One Python client process cannot read 50k chunks/s
(each loopback ``recv`` costs ~9 us of kernel time), hence several. Reports tokens/s
delivered, the simulator's CPU use (psutil), the clients' CPU use, and the timing error
seen by the clients: TTFT minus ``--ttft-ms`` and every inter-token gap minus ``--tpot-ms``
(median, p1 and p99, milliseconds). A read holding k tokens counts as one gap plus k-1
zero gaps, so client lateness shows up too.

Streams start spread over ``--ramp`` seconds so their token deadlines are not all aligned
(as with real users); only tokens after ramp + warm-up count.

    .venv/bin/python benchmarks/sim_throughput.py --streams 1000 --duration 20
    .venv/bin/python benchmarks/sim_throughput.py --streams 1000 --duration 10 --profile /tmp/sim.prof
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil

__all__ = ["main"]

REPO = Path(__file__).resolve().parent.parent
TOKEN_MARK = b'"delta":{"content":"'
END_MARK = b"0\r\n\r\n"


class Stats:
    def __init__(self) -> None:
        self.measuring = False
        self.tokens = 0
        self.ttft: list[float] = []
        self.gaps: list[float] = []
        self.requests = 0
        self.errors = 0


class StreamClient(asyncio.Protocol):
    """One keep-alive connection sending the same streaming request back to back."""

    def __init__(self, request: bytes, stats: Stats, stop_at: float, done: asyncio.Future) -> None:
        self.request = request
        self.stats = stats
        self.stop_at = stop_at
        self.done = done
        self.transport: asyncio.Transport | None = None
        self.t_sent = 0.0
        self.t_last = 0.0
        self.tail = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self._send()

    def _send(self) -> None:
        assert self.transport is not None
        self.t_sent = self.t_last = 0.0
        self.tail = b""
        self.t_sent = time.perf_counter()
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        n = data.count(TOKEN_MARK)
        st = self.stats
        if n:
            if st.measuring:
                st.tokens += n
                if self.t_last == 0.0:
                    st.ttft.append(now - self.t_sent)
                else:
                    st.gaps.append(now - self.t_last)
                st.gaps.extend([0.0] * (n - 1))
            self.t_last = now
        tail = (self.tail + data)[-5:]
        self.tail = tail
        if tail == END_MARK:
            st.requests += 1
            if now < self.stop_at:
                self._send()
            else:
                self.transport.close()  # type: ignore[union-attr]

    def connection_lost(self, exc: Exception | None) -> None:
        if self.tail != END_MARK:
            self.stats.errors += 1
        if not self.done.done():
            self.done.set_result(None)


def _request(max_tokens: int) -> bytes:
    body = json.dumps(
        {
            "model": "llm-locust/sim-8b",
            "messages": [{"role": "user", "content": "Say something long about load testing."}],
            "max_tokens": max_tokens,
            "stream": True,
        }
    ).encode()
    head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: sim\r\nContent-Length: {len(body)}\r\n"
    return (head + "Content-Type: application/json\r\n\r\n").encode() + body


async def drive(host: str, port: int, args: argparse.Namespace, part: int, t_start: float) -> dict:
    """One client process's share of the streams; returns raw samples and its CPU time."""
    loop = asyncio.get_running_loop()
    stats = Stats()
    streams = range(part, args.streams, args.client_procs)
    measure_at = t_start + args.ramp + args.warmup
    stop_at = measure_at + args.duration
    request = _request(args.max_tokens)
    waits = []
    for i in streams:
        await asyncio.sleep(max(0.0, t_start + args.ramp * i / args.streams - time.perf_counter()))
        done = loop.create_future()
        await loop.create_connection(lambda d=done: StreamClient(request, stats, stop_at, d), host, port)
        waits.append(done)
    await asyncio.sleep(max(0.0, measure_at - time.perf_counter()))
    me0 = psutil.Process().cpu_times()
    stats.measuring = True
    await asyncio.sleep(max(0.0, stop_at - time.perf_counter()))
    stats.measuring = False
    me1 = psutil.Process().cpu_times()
    await asyncio.wait(waits, timeout=args.max_tokens * args.tpot_ms / 1000 + 10)
    return {
        "tokens": stats.tokens,
        "ttft": stats.ttft,
        "gaps": stats.gaps,
        "requests": stats.requests,
        "errors": stats.errors,
        "cpu": me1.user + me1.system - me0.user - me0.system,
    }


def _client_proc(port: int, args: argparse.Namespace, part: int, t_start: float, out: mp.Queue) -> None:
    out.put(asyncio.run(drive("127.0.0.1", port, args, part, t_start)))


def run_clients(port: int, args: argparse.Namespace, sim: psutil.Process) -> dict:
    """Start the client processes, measure the simulator's CPU over the same window, merge."""
    ctx = mp.get_context("fork")
    out: mp.Queue = ctx.Queue()
    t_start = time.perf_counter() + 0.5
    procs = [
        ctx.Process(target=_client_proc, args=(port, args, part, t_start, out))
        for part in range(args.client_procs)
    ]
    for proc in procs:
        proc.start()
    measure_at = t_start + args.ramp + args.warmup
    time.sleep(max(0.0, measure_at - time.perf_counter()))
    cpu0 = sim.cpu_times()
    time.sleep(max(0.0, measure_at + args.duration - time.perf_counter()))
    cpu1 = sim.cpu_times()
    parts = [out.get(timeout=args.max_tokens * args.tpot_ms / 1000 + 60) for _ in procs]
    for proc in procs:
        proc.join(10)
    merged = Stats()
    client_cpu = 0.0
    for r in parts:
        merged.tokens += r["tokens"]
        merged.ttft += r["ttft"]
        merged.gaps += r["gaps"]
        merged.requests += r["requests"]
        merged.errors += r["errors"]
        client_cpu += r["cpu"]
    sim_cpu = cpu1.user + cpu1.system - cpu0.user - cpu0.system
    return _report(merged, args.duration, sim_cpu, client_cpu, args)


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def _report(
    stats: Stats, elapsed: float, sim_cpu: float, client_cpu: float, args: argparse.Namespace
) -> dict:
    ttft_err = [(v - args.ttft_ms / 1000) * 1000 for v in stats.ttft]
    gap_err = [(v - args.tpot_ms / 1000) * 1000 for v in stats.gaps]
    return {
        "streams": args.streams,
        "client_procs": args.client_procs,
        "ttft_ms": args.ttft_ms,
        "tpot_ms": args.tpot_ms,
        "max_tokens": args.max_tokens,
        "measured_s": round(elapsed, 2),
        "tokens_per_s": round(stats.tokens / elapsed),
        "max_possible_tokens_per_s": round(
            args.streams * args.max_tokens / ((args.ttft_ms + (args.max_tokens - 1) * args.tpot_ms) / 1000)
        ),
        "requests_completed": stats.requests,
        "errors": stats.errors,
        "sim_cpu_percent": round(sim_cpu / elapsed * 100, 1),
        "client_cpu_percent": round(client_cpu / elapsed * 100, 1),
        "ttft_err_ms_median": round(_pct(ttft_err, 0.5), 2),
        "ttft_err_ms_p99": round(_pct(ttft_err, 0.99), 2),
        "gap_err_ms_median": round(_pct(gap_err, 0.5), 2),
        "gap_err_ms_p99": round(_pct(gap_err, 0.99), 2),
        "gap_err_ms_p1": round(_pct(gap_err, 0.01), 2),
        "ttft_samples": len(ttft_err),
        "gap_samples": len(gap_err),
    }


def start_sim(args: argparse.Namespace) -> tuple[subprocess.Popen[str], int]:
    cmd = [sys.executable]
    if args.profile:
        cmd += ["-m", "cProfile", "-o", args.profile]
    cmd += [
        "-m",
        "llm_locust.sim",
        "--port",
        "0",
        "--ttft-ms",
        str(args.ttft_ms),
        "--tpot-ms",
        str(args.tpot_ms),
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env, cwd=str(REPO))
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        raise SystemExit(f"simulator did not start: {line!r}")
    return proc, int(line.rsplit(":", 1)[1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--streams", type=int, default=1000)
    p.add_argument("--duration", type=float, default=20.0, help="measured seconds")
    p.add_argument("--ramp", type=float, default=2.0, help="seconds over which streams start")
    p.add_argument("--warmup", type=float, default=3.0, help="seconds after the ramp before measuring")
    p.add_argument("--ttft-ms", type=float, default=100.0)
    p.add_argument("--tpot-ms", type=float, default=20.0)
    p.add_argument("--max-tokens", type=int, default=100)
    p.add_argument("--client-procs", type=int, default=2, help="client processes sharing the streams")
    p.add_argument("--port", type=int, default=None, help="use an already running simulator on this port")
    p.add_argument("--sim-pid", type=int, default=None, help="with --port: its pid, for CPU accounting")
    p.add_argument("--profile", default=None, help="run the simulator under cProfile, write stats here")
    args = p.parse_args(argv)
    if args.port is not None:
        result = run_clients(args.port, args, psutil.Process(args.sim_pid or os.getpid()))
    else:
        proc, port = start_sim(args)
        try:
            result = run_clients(port, args, psutil.Process(proc.pid))
        finally:
            proc.terminate()
            proc.wait(30)
    print(json.dumps(result, indent=2))
    if args.profile:
        import pstats

        pstats.Stats(args.profile).sort_stats("tottime").print_stats(15)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
