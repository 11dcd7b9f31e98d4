"""Every pure module imports in a fresh interpreter where Locust, gevent and the network are blocked.

The import-linter contracts in ``pyproject.toml`` check the import graph statically (``make test``
runs ``lint-imports``); this test checks it at run time, and covers ``urllib.request`` and
``http.client``, which the static graph sees only as ``urllib`` and ``http``. A blocked module
may still be imported by a third-party library (numpy, pydantic, yaml): only an import made by one
of ours counts.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import llm_locust

REPO = Path(__file__).resolve().parents[2]
BLOCKED = ("locust", "gevent", "geventhttpclient", "flask", "socket", "urllib.request", "http.client")
#: The pure packages and modules (docs/architecture.md), and the one allowed exception.
PURE = (
    "llm_locust.config",
    "llm_locust.record",
    "llm_locust.load",
    "llm_locust.workload",
    "llm_locust.protocol",
    "llm_locust.results",
    "llm_locust.report",
    "llm_locust.live.aggregate",
    "llm_locust.live.catalog",
    "llm_locust.live.gap_counts",
    "llm_locust.live.history",
    "llm_locust.live.result_view",
    "llm_locust.live.slots",
    "llm_locust.live.tab",
    "llm_locust.live.view",
    "llm_locust.runtime.bus",
    "llm_locust.runtime.context",
    "llm_locust.runtime.departures",
    "llm_locust.runtime.ingest",
    "llm_locust.runtime.requests",
    "llm_locust.runtime.sender",
    "llm_locust.runtime.session",
)
ALLOWED = {("llm_locust.workload.tokenizer", "http.client")}  # --tokenizer server's one connection

#: Runs in a fresh interpreter: every import statement of every module goes through the hook
#: (a cached module too), which records the ones of ours that name a blocked module, then
#: imports each pure module. Prints ``[[importer, module], ...]`` as JSON.
PROBE = r"""
import builtins, importlib, json, sys

blocked, allowed, modules = (json.loads(a) for a in sys.argv[1:4])
allowed = {tuple(p) for p in allowed}
found = []
real_import = builtins.__import__


def is_blocked(name):
    return any(name == b or name.startswith(b + ".") for b in blocked)


def hook(name, globals=None, locals=None, fromlist=(), level=0):
    who = (globals or {}).get("__name__", "")
    if level == 0 and who.startswith("llm_locust"):
        names = [name, *(f"{name}.{item}" for item in fromlist or ())]
        for target in names:
            if is_blocked(target) and (who, target) not in allowed and [who, target] not in found:
                found.append([who, target])
    return real_import(name, globals, locals, fromlist, level)


builtins.__import__ = hook
for module in modules:
    importlib.import_module(module)
print(json.dumps(found))
"""


def pure_modules() -> list[str]:
    names = []
    for top in PURE:
        module = __import__(top, fromlist=["_"])
        names.append(top)
        if hasattr(module, "__path__"):
            names += [m.name for m in pkgutil.walk_packages(module.__path__, top + ".")]
    return sorted(set(names))


def test_the_list_of_pure_modules_is_not_empty_and_real() -> None:
    names = pure_modules()
    assert len(names) > 50 and "llm_locust.results.columns" in names
    assert all(name.startswith("llm_locust.") for name in names) and llm_locust.__name__ == "llm_locust"


def probe(modules: list[str]) -> list[list[str]]:
    args = [json.dumps(BLOCKED), json.dumps(sorted(ALLOWED)), json.dumps(modules)]
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_every_pure_module_imports_no_locust_gevent_or_network_module() -> None:
    assert probe(pure_modules()) == []


def test_the_probe_catches_an_impure_module() -> None:
    """The same probe on modules that are not pure names their imports (the check can fail)."""
    found = probe(["llm_locust.runtime.openloop", "llm_locust.live.server_metrics"])
    assert ["llm_locust.runtime.openloop", "gevent"] in found
    assert ["llm_locust.live.server_metrics", "urllib.request"] in found
