"""Forked workers (``--processes``) whose master is gone exit on their own, in bounded time, in
whatever state they are (issue 26 §11: a capacity comparison stopped by SIGTERM waited on them).

Real processes: a ``llm-locust`` master with ``--processes 2`` is started by a small wrapper that
makes itself the orphans' reaper (Linux ``PR_SET_CHILD_SUBREAPER``), so the workers left behind
by the master's SIGKILL become the wrapper's children and their exit codes can be read. Locust's
own timeout (60 s of silence after a heartbeat) is what ended them before; a worker whose master
died before its first heartbeat never ended.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.locustproc import BIN, LOCUSTFILE, REPO, env, free_port

# exit within 10 s (the workers look at their parent every 0.5 s): the parallel part keeps that (-n 3 at
# load 8.5-10: 11.5-12.2 s, passed twice); on a busier host a failure runs again (tests/busyhost.py)
pytestmark = [pytest.mark.slow, pytest.mark.host_timing]

EXITS = "the master process that forked this worker (pid {pid}) is gone; this worker stops its load and exits"

# the wrapper: start the master, wait for its two workers to connect (its log says so), SIGKILL
# it, then reap every orphan for up to 70 s; prints {"master": pid, "exits": [[code, seconds]]}
WRAPPER = r"""
import ctypes, json, os, signal, subprocess, sys, time
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
log_path, cmd = sys.argv[1], sys.argv[2:]
with open(log_path, "w") as log:
    master = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
deadline = time.monotonic() + 60
while time.monotonic() < deadline and open(log_path).read().count("reported as ready") < 2:
    time.sleep(0.2)
time.sleep(1.5)  # connected, heartbeats flowing: the workers wait between tests
master.send_signal(signal.SIGKILL)
master.wait()
killed, exits = time.monotonic(), []
while time.monotonic() - killed < 70:
    try:
        pid, status = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        break
    if pid:
        exits.append([os.waitstatus_to_exitcode(status), round(time.monotonic() - killed, 1)])
    else:
        time.sleep(0.1)
for pid in subprocess.run(["pgrep", "-P", str(os.getpid())], capture_output=True, text=True).stdout.split():
    os.kill(int(pid), signal.SIGKILL)  # still there after 70 s: never leave one behind
print(json.dumps({"master": master.pid, "exits": exits}))
"""


def test_forked_workers_idle_between_tests_exit_soon_after_their_master_is_killed(tmp_path) -> None:  # type: ignore[no-untyped-def]
    port, web = str(free_port()), str(free_port())
    log = tmp_path / "master.log"
    master = [str(BIN / "locust"), "-f", str(LOCUSTFILE), "--host", "http://127.0.0.1:9", "--skip-preflight"]
    master += ["--processes", "2", "--master-bind-port", port, "--master-port", port]
    master += ["--web-host", "127.0.0.1", "--web-port", web]  # the web UI mode: no test starts
    res = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(log), *master],
        capture_output=True,
        text=True,
        timeout=150,
        env=env(),
        cwd=str(REPO),
    )
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    text = log.read_text()
    assert text.count("reported as ready") == 2, text[-3000:]
    exits = out["exits"]
    assert len(exits) == 2, (exits, text[-3000:])  # both workers exited within 70 s
    assert [code for code, _ in exits] == [5, 5], (exits, text[-3000:])
    assert all(seconds < 10.0 for _, seconds in exits), exits  # Locust's own timeout: 60 s
    assert text.count(EXITS.format(pid=out["master"])) == 2, text[-3000:]
    assert "Traceback" not in text
