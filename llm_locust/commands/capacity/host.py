"""How ``llm-locust capacity`` shares this host: plans searched at once, load processes per plan,
and the processes it started (so a stopped comparison stops every one of them).

A plan's search runs in one load process, or with ``--workers N`` on a Locust master with N local
worker processes (``llm-locust run --processes N``: the master decides the search's steps, the
workers send the load and ship their records to it, :mod:`llm_locust.runtime.distributed`). Each
plan's master listens on its own free loopback port, so plans searched at once never take each
other's workers. The plan folder holds the same files either way (``requests.jsonl`` has a
``worker`` per row).

Each plan's run starts in a process group of its own: the processes it starts (a master's forked
workers) are stopped with it, and once the run has exited, whatever of its group is left
:data:`LEFTOVER_WAIT_S` seconds later is killed, so no grandchild holding the run's output pipe
keeps the comparison waiting (a forked worker exits by itself when its master is gone,
:mod:`llm_locust.runtime.master_watch`; this is the bound if one does not).

Cores: a plan takes :data:`CORES_PER_PLAN` cores per load process (the process keeps most of a core
busy at its highest steps; simulated targets on the same host and the master take the rest), so
``--parallel``'s default is ``cores // (CORES_PER_PLAN x workers)``, at least 1. More load processes
than the host has cores measure the host's overload, not the deployment: refused.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time

__all__ = [
    "CORES_PER_PLAN",
    "Progress",
    "cores",
    "exit_on_sigterm",
    "host_parallel",
    "master_port_args",
    "oversubscribed",
    "positive_int",
    "stop_run",
    "worker_args",
]

#: Cores of the host per load process of a plan searched at once (``--parallel``'s default).
CORES_PER_PLAN = 2
#: How long a run gets to finish its drain and write its summary when the comparison is stopped.
STOP_WAIT_S = 60.0
#: How long the processes a run started may outlive it before they are killed.
LEFTOVER_WAIT_S = 10.0


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def exit_on_sigterm() -> None:
    """SIGTERM raises ``SystemExit(143)`` so cleanup (``finally``) runs: no run or simulator is
    left behind by a terminated comparison."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))


def host_parallel(plans: int, host_cores: int | None = None, workers: int | None = None) -> int:
    """How many plans to search at once on this host: one per :data:`CORES_PER_PLAN` cores per
    load process (``workers`` of them, or one), at least 1, at most ``plans``. Plans searched at
    once on too few cores measure the host's overload, not the deployments: their steps come out
    invalid."""
    host_cores = cores() if host_cores is None else host_cores
    return max(1, min(plans, host_cores // (CORES_PER_PLAN * (workers or 1))))


def oversubscribed(parallel: int, workers: int | None, host_cores: int) -> str | None:
    """A warning when ``parallel`` plans of ``workers`` load processes each (one without
    ``--workers``) are more load processes than the host has cores; else ``None``."""
    processes = parallel * (workers or 1)
    if processes <= host_cores:
        return None
    return (
        f"{processes} load processes ({parallel} plans at once x {workers or 1}) on {host_cores} cores: "
        "steps will likely come out invalid (the host's overload); lower --parallel or --workers"
    )


def worker_args(workers: int | None) -> list[str]:
    """The ``llm-locust run`` arguments of a plan's load processes: none (one process) or a
    master with ``workers`` forked local workers."""
    return [] if workers is None else ["--processes", str(workers)]


def master_port_args() -> list[str]:
    """A free loopback port for a plan's master and its workers (Locust's default 5557 is shared by
    every run on the host: two plans at once would take each other's workers)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    return ["--master-bind-port", port, "--master-port", port]


def positive_int(text: str) -> int:
    """argparse type: a whole number >= 1 (an error names the value; the parser names the flag)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


class Progress:
    """The plans' runs, one after the other or at once: their progress lines, ``[m:ss] [plan]
    text`` (the time since the comparison started), one whole line at a time, and their
    processes, so a stopped comparison stops every one of them."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self._lock = threading.Lock()
        self.running: set[subprocess.Popen[str]] = set()
        self.stopped = False

    def start(self, cmd: list[str]) -> subprocess.Popen[str]:
        with self._lock:
            if self.stopped:
                raise SystemExit(128 + signal.SIGTERM)
            proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
            )
            self.running.add(proc)
        threading.Thread(target=_kill_leftovers, args=(proc,), daemon=True).start()
        return proc

    def stop_all(self) -> None:
        with self._lock:
            self.stopped = True
            procs = list(self.running)
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()  # the run stops its own workers (drain, final records)
        for proc in procs:
            stop_run(proc, terminate=False)

    def say(self, name: str, text: str) -> None:
        elapsed = int(time.monotonic() - self.t0)
        with self._lock:
            print(f"[{elapsed // 60}:{elapsed % 60:02d}] [{name}] {text}", flush=True)


def stop_run(proc: subprocess.Popen[str], terminate: bool = True) -> None:
    """Stop a plan's run (SIGTERM: it drains and writes its summary) and wait for it up to
    :data:`STOP_WAIT_S`; a run still there then is killed with its whole process group."""
    if terminate and proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(STOP_WAIT_S)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        proc.wait()


def _kill_leftovers(proc: subprocess.Popen[str]) -> None:
    """Once the run has exited, kill what is left of its process group :data:`LEFTOVER_WAIT_S`
    seconds later (a grandchild still holding the output pipe would block its reader)."""
    proc.wait()
    deadline = time.monotonic() + LEFTOVER_WAIT_S
    while _group_alive(proc.pid):
        if time.monotonic() > deadline:
            _kill_group(proc.pid)
            return
        time.sleep(0.2)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
