"""How many records per second can the master take in, and how large a fleet does that carry?

A real headless llm-locust master (``locust --master``, pinned to ``--master-cpu``)
and W simulated workers that speak Locust's own worker protocol over ZeroMQ
(``client_ready``, ``heartbeat``, ``spawning``/``spawning_complete``, ``stop`` ->
the final batch and ``client_stopped``) and ship llm-locust record batches made by the
``--code`` under test's own :class:`llm_locust.runtime.distributed.Outbox` (so each version
speaks its own wire: since issue 29 §3 each row's gaps as JSON text and the batch's gaps
counted): every second, ``R`` records per worker, each a 1,024-token record's JSONL form
(1,023 ITL gaps). A batch of the same template rows is made once and sent again with new
request ids, sequence numbers and send times, so the senders keep up at 100 workers. The
senders run in ``--sender-procs`` processes on the other CPU, one greenlet and one DEALER
socket per simulated worker.

Measured: the master's CPU over the steady window (psutil), the rows it wrote per
second (``requests.jsonl`` line count sampled each second) against the rows sent, the
backlog (sent - written) at the end of the window, and exactness: every row sent is in
``requests.jsonl`` once, and ``summary.json``'s percentiles equal ``summarize`` over
the rows as sent.

    .venv/bin/python benchmarks/master_ingest.py --workers 1,4,16,32 --rate 50 --duration 30
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_common import REPO, ProcessSampler, export, free_port, pinned, write_result

__all__ = ["main"]

SUMMARY_KEYS = ("median_ttft_ms", "p99_ttft_ms", "median_itl_ms", "p99_itl_ms", "p99_e2el_ms", "mean_tpot_ms")


def template_rows(n: int, tokens: int, seed: int = 1) -> list[dict[str, Any]]:
    """``n`` distinct 1,024-token records in their JSONL form (sent over and over)."""
    sys.path.insert(0, str(REPO))
    from llm_locust.record import RequestRecord

    rng = random.Random(seed)
    rows = []
    for k in range(n):
        record = RequestRecord(request_id=f"t{k}", wall_start=time.time(), t_sent=100.0, status=200)
        t = 100.0 + rng.uniform(0.05, 0.4)
        for _ in range(tokens):
            record.chunk_times.append(t)
            t += rng.uniform(0.015, 0.03)
        record.t_end, record.completion_tokens, record.prompt_tokens = t, tokens, 512
        record.token_source = record.prompt_token_source = "usage"
        record.finish_reason, record.max_tokens, record.target_input_tokens = "length", tokens, 512
        settle = record.chunk_times[0]
        record.t_first_token = settle
        rows.append(record.to_json())
    return rows


# -- the simulated workers (run in a sender process) ------------------------------------
def sender_main(argv: list[str]) -> int:
    """``master_ingest.py --sender PORT FIRST COUNT RATE TOKENS OUT LIMIT_S [CODE]``: a worker stops
    sending on its own ``LIMIT_S`` after its spawn (a master too slow to stop the test in time
    is not fed for ever); ``CODE`` (default: this checkout): the llm-locust whose ``Outbox``
    makes the batches."""
    from gevent import monkey

    monkey.patch_all()
    sys.path.insert(0, argv[7] if len(argv) > 7 else str(REPO))  # the code under test, before REPO
    from locust import __version__
    from locust.rpc import Message, zmqrpc

    import gevent
    import gevent.event

    from llm_locust.runtime.distributed import Outbox

    port, first, count, rate, tokens = (int(x) for x in argv[:5])
    out, limit_s = Path(argv[5]), float(argv[6])
    rows = template_rows(50, tokens)
    made: dict[tuple[int, int], dict[str, Any]] = {}

    def outbox_batch(start: int, k: int) -> dict[str, Any]:
        """The Outbox's batch of template rows ``start .. start + k`` (made once, then reused)."""
        key = (start % len(rows), k)
        if key not in made:
            captured: list[dict[str, Any]] = []
            box = Outbox(lambda kind, data: captured.append(data), intervals=lambda: [])
            for i in range(k):
                box.add(dict(rows[(start + i) % len(rows)]))
            box.flush()
            made[key] = captured[0]
        return made[key]

    sent: list[tuple[float, int]] = []  # (time, rows sent so far by this process)
    total = [0]
    done = gevent.event.Event()

    def worker(index: int) -> None:
        node = f"sim-{socket.gethostname()}-{index}"
        client = zmqrpc.Client("127.0.0.1", port, node)
        client.send(Message("client_ready", __version__, node))
        state: dict[str, Any] = {
            "running": False,
            "seq": 0,
            "n": 0,
            "stop": False,
            "stopped": False,
            "since": 0.0,
        }

        def batch(final: bool) -> None:
            k = rate if state["running"] and not final else 0
            data: dict[str, Any] = dict(outbox_batch(state["n"], k)) if k else {"health": []}
            out_rows = []
            for row in data.get("rows", ()):
                out_rows.append({**row, "request_id": f"{node}-{state['n']}"})
                state["n"] += 1
            state["seq"] += 1
            data.update(
                seq=state["seq"],
                rows=out_rows,
                in_flight=0,
                final=final,
                sent_at=time.time(),  # as the Outbox stamps it: the master's ingest lag
            )
            client.send(Message("llm_locust_records", data, node))
            total[0] += len(out_rows)

        def ship() -> None:
            while not state["stop"]:
                gevent.sleep(1.0)
                hb = {
                    "state": "running" if state["running"] else "stopped" if state["stopped"] else "ready",
                    "current_cpu_usage": 1.0,
                    "current_memory_usage": 1e8,
                }
                client.send(Message("heartbeat", hb, node))
                if state["running"] and time.time() - state["since"] > limit_s:
                    state["running"], state["stopped"] = False, True  # the guard: see the docstring
                if state["running"]:
                    batch(False)

        gevent.spawn(ship)
        while True:
            msg = client.recv()
            if msg.type == "spawn":
                client.send(Message("spawning", None, node))
                users = msg.data["user_classes_count"]
                state["running"], state["since"] = True, time.time()
                client.send(
                    Message(
                        "spawning_complete",
                        {"user_classes_count": users, "user_count": sum(users.values())},
                        node,
                    )
                )
            elif msg.type in ("stop", "llm_locust_stop"):  # as a worker's runner.stop(): the final batch
                if state["running"]:
                    state["running"], state["stopped"] = False, True
                    batch(True)
                if msg.type == "stop":
                    client.send(Message("client_stopped", None, node))
            elif msg.type == "quit":
                state["stop"] = True
                return

    def account() -> None:
        while not done.is_set():
            sent.append((time.time(), total[0]))
            gevent.sleep(0.5)

    gevent.spawn(account)
    gevent.joinall([gevent.spawn(worker, first + i) for i in range(count)])
    done.set()
    sent.append((time.time(), total[0]))
    out.write_text(json.dumps({"sent": sent, "total": total[0]}))
    return 0


# -- the benchmark ---------------------------------------------------------------------


def count_lines(path: Path) -> int:
    try:
        with open(path, "rb") as f:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    except OSError:
        return 0


def run_delay(pid: int) -> float:
    """Seconds the process's threads have waited, runnable, for a CPU (``/proc/PID/task/*/schedstat``):
    a master that waits while it is behind was starved by the host, not out of work it could do."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9


def run_one(args: argparse.Namespace, workers: int, tmp: Path) -> dict[str, Any]:
    port = free_port()
    results = tmp / f"w{workers}"
    code = export(args.code, tmp / "code")
    master_cmd = [
        *pinned(args.master_cpu),
        str(REPO / ".venv/bin/locust"),
        "-f",
        str(code / "locustfiles/chat.py"),
        "--master",
        "--master-bind-host",
        "127.0.0.1",
        "--master-bind-port",
        str(port),
        "--headless",
        "--expect-workers",
        str(workers),
        "-u",
        str(workers),
        "-r",
        str(workers),
        "-t",
        f"{args.duration}s",
        "--host",
        "http://127.0.0.1:9",
        "--model",
        "m",
        "--skip-preflight",
        "--results-dir",
        str(results),
        "--only-summary",
        "--loglevel",
        args.loglevel,
    ]
    env = {**os.environ, "PYTHONPATH": str(code)}
    master = subprocess.Popen(
        master_cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=code, env=env
    )
    watch = ProcessSampler(master.pid, lambda: count_lines(results / "requests.jsonl"))  # rows on disk
    watch.start()
    waits = ProcessSampler(master.pid, lambda: run_delay(master.pid))  # its wait for a CPU
    waits.start()
    profiler = None
    if args.profile:
        py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        profiler = subprocess.Popen(
            [
                "bash",
                "-c",
                f"sleep 10; exec {py_spy} record --pid {master.pid} -d {max(args.duration - 15, 5)} "
                f"-r 100 --nonblocking --format raw -o {args.profile}/master-{workers}.txt",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    per = -(-workers // args.sender_procs)
    senders = []
    for i, first in enumerate(range(0, workers, per)):
        count = min(per, workers - first)
        out = tmp / f"sent-{workers}-{i}.json"
        cmd = [
            *pinned(args.sender_cpu),
            sys.executable,
            __file__,
            "--sender",
            str(port),
            str(first),
            str(count),
            str(args.rate),
            str(args.tokens),
            str(out),
            str(args.duration + 15),
            str(code),
        ]
        senders.append(
            (subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True), out)
        )
    try:
        out, err = master.communicate(timeout=args.duration + 300)
    except subprocess.TimeoutExpired:
        master.kill()
        out, err = master.communicate()
        raise RuntimeError(
            f"master did not finish; rows on disk {watch.samples[-1:]}; stderr: {err[-3000:]}"
        ) from None
    finally:
        watch.halt.set()
        waits.halt.set()
        if profiler is not None:
            profiler.wait(60)
        if master.poll() is None:
            master.kill()
            master.wait()
        for proc, _ in senders:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
    if master.returncode != 0 or "Traceback" in err:
        raise RuntimeError(f"master exited {master.returncode}: {err[-3000:]}")
    for proc, path in senders:
        if proc.returncode != 0 or not path.exists():
            raise RuntimeError(f"a sender exited {proc.returncode}: {proc.stderr.read()[-3000:]}")  # type: ignore[union-attr]
    sent = [json.loads(path.read_text()) for _, path in senders]
    run = analyse(args, workers, results, watch.samples, sent)
    w0, w1 = run.pop("window")
    inside = [(t, d) for t, _, d in waits.samples if w0 <= t <= w1]
    if len(inside) >= 2:  # runnable but waiting for a CPU, as a share of the window
        (ta, da), (tb, db) = inside[0], inside[-1]
        run["master_cpu_wait_pct"] = 100.0 * (db - da) / (tb - ta)
    return run


def analyse(
    args: argparse.Namespace, workers: int, results: Path, samples: list, sent: list
) -> dict[str, Any]:
    sys.path.insert(0, str(REPO))
    from llm_locust.results.columns import read_rows
    from llm_locust.results.summary import summarize

    summary = json.loads((results / "summary.json").read_text())
    t0 = summary["config"]["start_time"]
    w0, w1 = t0 + 5.0, t0 + args.duration - 1.0
    inside = [s for s in samples if w0 <= s[0] <= w1]
    (ta, ca, na), (tb, cb, nb) = ((t, c, int(n)) for t, c, n in (inside[0], inside[-1]))
    sent_at = sorted((t, n) for part in sent for t, n in part["sent"])

    def sent_by(t: float) -> int:  # rows all senders had sent by t
        return sum(max((n for tt, n in part["sent"] if tt <= t), default=0) for part in sent)

    rows = list(read_rows(results / "requests.jsonl"))
    ids = [r["request_id"] for r in rows]
    templates = {r["request_id"]: r for r in template_rows(50, args.tokens)}
    intact = all(
        r["itl"] == templates[f"t{int(r['request_id'].rsplit('-', 1)[1]) % 50}"]["itl"] for r in rows
    )
    expected = summarize(rows, summary["duration"])
    total_sent = sum(part["total"] for part in sent)
    return {
        "workers": workers,
        "offered_rows_per_s": workers * args.rate,
        "ingested_rows_per_s": (nb - na) / (tb - ta),
        "master_cpu_pct": 100.0 * (cb - ca) / (tb - ta),
        "master_cpu_ms_per_row": 1000.0 * (cb - ca) / max(nb - na, 1),  # what a busy host keeps
        "backlog_at_window_end": sent_by(tb) - nb,
        "backlog_at_window_start": sent_by(ta) - na,
        "rows_sent": total_sent,
        "rows_written": len(rows),
        "duplicates": len(ids) - len(set(ids)),
        "rows_intact": intact,
        "summary_exact": all(summary.get(k) == expected.get(k) for k in SUMMARY_KEYS)
        and summary["completed"] == total_sent,
        "first_sent": sent_at[0][0] if sent_at else None,
        "master": summary.get("master"),  # the master's own view of its lag (runtime/ingest.py)
        "window": (w0, w1),
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--sender"]:
        return sender_main(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,4,16,32")
    parser.add_argument("--rate", type=int, default=50, help="records per second per worker")
    parser.add_argument("--tokens", type=int, default=1024)
    parser.add_argument("--duration", type=int, default=30)
    parser.add_argument("--master-cpu", type=int, default=0)
    parser.add_argument("--sender-cpu", type=int, default=1)
    parser.add_argument("--sender-procs", type=int, default=2)
    parser.add_argument("--profile", help="py-spy raw profile of the master into this directory")
    parser.add_argument("--loglevel", default="WARNING", help="the master's")
    parser.add_argument(
        "--code", default=".", help="git ref of the master's llm-locust (default: working tree)"
    )
    parser.add_argument("--out", default=str(REPO / "benchmarks/results/master_ingest.json"))
    args = parser.parse_args(argv)
    runs = []
    with tempfile.TemporaryDirectory(prefix="master-ingest-") as tmp:
        for workers in [int(w) for w in args.workers.split(",") if w.strip()]:
            load = os.getloadavg()[0]
            run = run_one(args, workers, Path(tmp))
            run["load_before"] = load
            run["load_after"] = os.getloadavg()[0]  # a busy host starves the master: say so
            runs.append(run)
            print(json.dumps(run), flush=True)
    print(
        f"{'workers':>7} {'offered':>8} {'ingested':>9} {'master CPU':>10} {'waited':>7} {'ms/row':>7} "
        f"{'backlog':>8} {'exact':>6} {'load':>11}"
    )
    for r in runs:
        exact = (
            r["summary_exact"]
            and r["rows_intact"]
            and not r["duplicates"]
            and r["rows_sent"] == r["rows_written"]
        )
        print(
            f"{r['workers']:>7} {r['offered_rows_per_s']:>8} {r['ingested_rows_per_s']:>9.0f} "
            f"{r['master_cpu_pct']:>9.0f}% {r.get('master_cpu_wait_pct', float('nan')):>6.0f}% "
            f"{r['master_cpu_ms_per_row']:>7.3f} "
            f"{r['backlog_at_window_end']:>8} {exact!s:>6} "
            f"{r['load_before']:>5.2f}-{r['load_after']:<5.2f}"
        )
    write_result("master_ingest", args, runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
