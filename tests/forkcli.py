"""Refused command lines, each in a fresh process forked from one that imported the package once.

A refused option (``llm-locust run ... -u 0``) costs 1.1-1.8 s of CPU, nearly all of it
importing Locust and gevent before the option is checked (``import locust.main`` alone: 0.9 s);
on a shared host that is 6-22 s of wall time a command line (the other subcommands' imports,
numpy and the package, 6-13 s at load 15). Here one server process imports them once (for
``run`` and ``locust``, in the order they do: Locust first, its gevent monkey-patching; for the
other subcommands, neither Locust nor gevent, as they do) and forks a child per command line.
The child runs the command's own entry point (``llm_locust.cli:main``, or ``locust.main:main``
for plain ``locust -f``) with its own ``sys.argv``, stdin from ``/dev/null``, stdout and
stderr on files, and exits as the interpreter would (``SystemExit``'s
code; a string code printed and exit 1; an uncaught exception's traceback and exit 1; the
``atexit`` handlers run): the same code, the same state at the start (nothing configured
logging, parsed options or loaded a locustfile before the fork), without the imports' cost.

Only for command lines that stop at the option check: a run that sends load needs a process
of its own (its hub, its sockets).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.locustproc import REPO, env

#: What the Locust server imports before it forks: Locust first, as ``llm-locust run`` and
#: ``locust`` do (gevent monkey-patches there), then what the packaged locustfile imports (read
#: from its source; the file itself is loaded by each child, as Locust loads it).
LOCUST_PRELOAD = """
import locust.main

import importlib, re

import llm_locust.cli

locustfile = llm_locust.cli.default_locustfile().read_text()
for name in re.findall(r"from (llm_locust[.][\\w.]+) import", locustfile):
    importlib.import_module(name)
"""
#: The other subcommands import neither Locust nor gevent (``sim`` must not): their server
#: neither. It imports every subcommand's module that ``llm_locust/cli.py`` names (read from its
#: source, so a module that moves is still found; ``run``'s Locust is not among them).
PLAIN_PRELOAD = """
import importlib, re, sys

import llm_locust.cli

for name in re.findall(r"from (llm_locust[.][\\w.]+) import main", open(llm_locust.cli.__file__).read()):
    importlib.import_module(name)
assert "locust" not in sys.modules and "gevent" not in sys.modules, "the plain preload imported Locust"
"""
SERVER = r"""
import atexit, json, os, sys, tempfile, traceback

import llm_locust.cli

reply = os.fdopen(os.dup(1), "w")
folder = tempfile.mkdtemp(prefix="forkcli-")


def child(request):
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(os.open(os.path.join(folder, "out"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
    os.dup2(os.open(os.path.join(folder, "err"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
    argv = request["argv"]
    code = 0
    try:
        if request["locust_main"]:
            import locust.main

            sys.argv = ["locust", *argv]
            code = locust.main.main()
        else:
            sys.argv = ["llm-locust", *argv]
            code = llm_locust.cli.main(argv)
    except SystemExit as exc:
        code = exc.code
    except BaseException:
        traceback.print_exc()
        code = 1
    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(0 if code is None else int(code))


for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        child(request)
    _, status = os.waitpid(pid, 0)
    outputs = {}
    for name in ("out", "err"):
        with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
            outputs[name] = f.read()
    code = os.waitstatus_to_exitcode(status)
    reply.write(json.dumps({"code": code, "stdout": outputs["out"], "stderr": outputs["err"]}) + "\n")
    reply.flush()
"""


@dataclass
class Ran:
    """What :func:`subprocess.run` would have captured."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str


class ForkCli:
    """One preloaded server (start it with ``with``); :meth:`run` one command line in a child.

    ``locust``: the server imported Locust (for ``llm-locust run`` and plain ``locust``); else
    it imported neither Locust nor gevent (every other subcommand)."""

    def __init__(self, locust: bool, cwd: Path = REPO) -> None:
        self.preload = LOCUST_PRELOAD if locust else PLAIN_PRELOAD
        self.cwd = cwd
        self.proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> ForkCli:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", self.preload + SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env(),
            cwd=str(self.cwd),
        )
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()

    def run(self, *args: str, locust: bool = False) -> Ran:
        """``llm-locust ARGS`` (``locust ARGS`` when ``locust``), as a forked child."""
        proc = self.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({"argv": list(args), "locust_main": locust}) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        assert line, f"the fork server ended (exit code {proc.poll()})"
        got = json.loads(line)
        return Ran(list(args), got["code"], got["stdout"], got["stderr"])
