"""Every command and YAML block in ``k8s/README.md`` is exercised here, or checked by the render.

Each shell command of the README is one test case, dispatched by its shape to a check: the
commands that can run without a cluster run (``kubectl create secret --dry-run=client``,
``kubectl kustomize`` for ``apply -k``/``delete -k``, what ``kustomize edit set image`` writes,
rendered); the commands that need a cluster (``logs``, ``get``, ``wait``, ``cp``,
``port-forward``, ``scale``) are checked against the rendered objects they name: the object
exists, with the container, port, volume or label the command relies on. A command of a shape
no check knows fails the test, so the README cannot grow an unchecked command. The ``docker``
commands name the image the manifests use; ``tests/integration/test_package.py`` runs the
``Dockerfile``'s install steps.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from llm_locust.config.plans import load_plan_file
from tests.k8sproc import K8S, Doc, by_key, containers, kubectl, pod_spec, render
from tests.locustproc import llm_locust_cli

ROOT = K8S.parent
README = (K8S / "README.md").read_text(encoding="utf-8")
VERSION = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
IMAGE = f"llm-locust:{VERSION.group(1) if VERSION else ''}"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def _blocks(language: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(README) if lang == language]


def _commands() -> list[str]:
    out = []
    for body in _blocks("sh"):
        for line in body.replace("\\\n", " ").splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                out.append(" ".join(line.split()))
    return out


def _registry_image() -> str:
    (target,) = set(re.findall(r"kustomize edit set image llm-locust=(\S+)\)", README))
    return target


_RENDERED: dict[Path, list[Doc]] = {}


def _render(directory: Path) -> list[Doc]:
    if directory not in _RENDERED:
        _RENDERED[directory] = render(directory)
    return _RENDERED[directory]


def _headless() -> dict[tuple[str, str], Doc]:
    return by_key(_render(K8S / "overlays" / "headless"))


def _images(docs: list[Doc]) -> set[str]:
    return {c["image"] for d in docs if d["kind"] in ("Deployment", "Job", "Pod") for c in containers(d)}


# --- the checks, one per command shape ----------------------------------------------------


def _docker_build(m: re.Match[str], tmp: Path) -> None:
    assert m[1] == IMAGE and (ROOT / "Dockerfile").is_file()


def _docker_tag(m: re.Match[str], tmp: Path) -> None:
    assert m[1] == IMAGE and m[2] == _registry_image()


def _docker_push(m: re.Match[str], tmp: Path) -> None:
    assert m[1] == _registry_image() and m[1].endswith(IMAGE.split(":", 1)[1])


def _set_image(m: re.Match[str], tmp: Path) -> None:
    """Write what ``kustomize edit set image NAME=NEWNAME:NEWTAG`` writes, and render."""
    shutil.copytree(K8S, tmp / "k8s")
    path = tmp / m[1] / "kustomization.yaml"
    kust: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    new_name, new_tag = m[2].rsplit(":", 1)
    (entry,) = [e for e in kust["images"] if e["name"] == "llm-locust"]
    entry.update(newName=new_name, newTag=new_tag)
    path.write_text(yaml.safe_dump(kust), encoding="utf-8")
    assert _images(render(path.parent)) == {m[2]}


def _create_secret(m: re.Match[str], tmp: Path) -> None:
    proc = subprocess.run(
        [
            kubectl(),
            *m[0].split()[1:-1],
            f"--from-literal={m[2]}=placeholder",
            "--dry-run=client",
            "-o",
            "yaml",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={"KUBECONFIG": "/dev/null", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    secret = yaml.safe_load(proc.stdout)
    assert secret["kind"] == "Secret" and secret["metadata"]["name"] == m[1] and m[2] in secret["data"]
    for overlay in ("headless", "interactive"):
        for doc in _render(K8S / "overlays" / overlay):
            for container in containers(doc) if doc["kind"] in ("Deployment", "Job") else []:
                refs = [e["valueFrom"].get("secretKeyRef") for e in container["env"] if "valueFrom" in e]
                refs = [r for r in refs if r is not None]
                assert {(r["name"], r["key"]) for r in refs} == {(m[1], m[2])}


def _apply_k(m: re.Match[str], tmp: Path) -> None:
    directory = ROOT / m[2]
    assert directory.resolve().is_relative_to(K8S) and _render(directory)


def _job_logs(m: re.Match[str], tmp: Path) -> None:
    job = _headless()[("Job", m[1])]
    assert len(containers(job)) == 1  # `logs job/X` shows the one container's log


def _exit_code(m: re.Match[str], tmp: Path) -> None:
    job = _headless()[("Job", m[1])]  # Jobs label their pods job-name=<name>
    assert (
        len(containers(job)) == 1
        and m[2] == "{.items[0].status.containerStatuses[0].state.terminated.exitCode}"
    )
    codes = {r["onExitCodes"]["values"][0] for r in job["spec"]["podFailurePolicy"]["rules"]}
    table = {int(c) for c in re.findall(r"^\| (\d) \|", README, re.M)}
    assert codes == {2, 3} and table == {0, 1, 2, 3}


def _wait_pod(m: re.Match[str], tmp: Path) -> None:
    assert ("Pod", m[1]) in by_key(_render(K8S / "results-reader"))


def _copy_results(m: re.Match[str], tmp: Path) -> None:
    pod = by_key(_render(K8S / "results-reader"))[("Pod", m[1])]
    (container,) = containers(pod)
    mount = next(v for v in container["volumeMounts"] if v["mountPath"] == m[2])
    (volume,) = [v for v in pod_spec(pod)["volumes"] if v["name"] == mount["name"]]
    assert ("PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"]) in _headless()


def _delete_jobs(m: re.Match[str], tmp: Path) -> None:
    names = m[1].split()
    assert names and all(("Job", n) in _headless() for n in names)
    assert {n for kind, n in _headless() if kind == "Job"} == set(names)


def _port_forward(m: re.Match[str], tmp: Path) -> None:
    res = by_key(_render(K8S / "overlays" / "interactive"))
    service = res[("Service", m[1])]
    (port,) = [p for p in service["spec"]["ports"] if p["port"] == int(m[3])]
    (container,) = containers(res[("Deployment", "llm-locust-master")])
    assert {p["name"]: p["containerPort"] for p in container["ports"]}[port["targetPort"]] == int(m[3])
    assert m[2] == m[3] and port["name"] == "web"


def _scale(m: re.Match[str], tmp: Path) -> None:
    assert ("Deployment", m[1]) in by_key(_render(K8S / "overlays" / "interactive"))


def _copy_dashboard(m: re.Match[str], tmp: Path) -> None:
    source, target = ROOT / m[1], ROOT / m[2] / Path(m[1]).name
    assert source.is_file() and target.read_bytes() == source.read_bytes()


def _print_env(m: re.Match[str], tmp: Path) -> None:
    """Run it into a copy of ``k8s/`` and render the overlay it writes to: the plan's Job."""
    shutil.copytree(K8S, tmp / "k8s")
    res = llm_locust_cli("capacity", str(ROOT / m[1]), "--results-dir", str(tmp / m[2]), "--print-env", m[3])
    assert res.returncode == 0, res.stderr
    (tmp / m[4]).write_text(res.stdout)
    docs = render((tmp / m[4]).parent)
    (env,) = [d["data"] for d in docs if d["metadata"]["name"].startswith("llm-locust-env")]
    assert env["CAPACITY_PLAN"] == m[3] and ("Job", "llm-locust-master") in by_key(docs)


def _compare_measured(m: re.Match[str], tmp: Path) -> None:
    """``--no-run`` over the folder ``kubectl cp`` fills (``./cap``): run for real on an empty one
    it names each plan not measured and sends no request (the plans are cluster names); a
    measured folder is compared in ``tests/integration/test_capacity_workers.py``."""
    assert f"kubectl cp llm-locust-results-reader:/results ./{m[2]}" in README
    res = llm_locust_cli("capacity", str(ROOT / m[1]), "--results-dir", str(tmp / m[2]), "--no-run")
    assert res.returncode == 2
    for plan in load_plan_file(ROOT / m[1]).plans:
        assert f"{plan.name}: not measured: {tmp / m[2] / plan.name} holds no finished search" in res.stdout


CHECKS: list[tuple[str, Callable[[re.Match[str], Path], None]]] = [
    (r"docker build -t (\S+) \.", _docker_build),
    (r"docker tag (\S+) (\S+)", _docker_tag),
    (r"docker push (\S+)", _docker_push),
    (r"\(cd (\S+) && kustomize edit set image llm-locust=(\S+)\)", _set_image),
    (r"kubectl create secret generic (\S+) --from-literal=(\w+)=\S+", _create_secret),
    (r"kubectl (apply|delete) -k (\S+)", _apply_k),
    (r"kubectl logs -f job/(\S+) --pod-running-timeout=\d+m", _job_logs),
    (r"kubectl get pods -l job-name=(\S+) -o jsonpath='(\S+)'", _exit_code),
    (r"kubectl wait --for=condition=Ready pod/(\S+) --timeout=\d+m", _wait_pod),
    (r"kubectl cp (\S+):(/\S+) \./\S+", _copy_results),
    (r"kubectl delete job ([\w -]+)", _delete_jobs),
    (r"kubectl port-forward svc/(\S+) (\d+):(\d+)", _port_forward),
    (r"kubectl scale deploy/(\S+) --replicas=\d+", _scale),
    (r"cp (llm_locust/\S+) (k8s/\S+)", _copy_dashboard),
    (r"llm-locust capacity (\S+) --results-dir (\S+) --print-env (\S+) > (k8s/\S+/plan\.env)", _print_env),
    (r"llm-locust capacity (\S+) --results-dir (\S+) --no-run", _compare_measured),
]


@pytest.mark.parametrize("command", _commands())
def test_readme_command(command: str, tmp_path: Path) -> None:
    for pattern, check in CHECKS:
        match = re.fullmatch(pattern, command)
        if match:
            check(match, tmp_path)
            return
    pytest.fail(f"k8s/README.md has a command no test checks: {command}")


def test_readme_has_the_whole_path() -> None:
    """From the image to the results, in that order."""
    commands = _commands()
    order = [
        "docker build",
        "kustomize edit",
        "kubectl create secret",
        "kubectl apply -k k8s/overlays/headless",
    ]
    order += ["kubectl logs", "kubectl cp"]
    positions = [next(i for i, c in enumerate(commands) if step in c) for step in order]
    assert positions == sorted(positions)


# --- the YAML blocks ----------------------------------------------------------------------


def test_readme_yaml_blocks_are_all_checked() -> None:
    blocks = _blocks("yaml")
    assert len(blocks) == 2
    assert blocks[0].startswith("images:") and blocks[1].startswith("# my-run/kustomization.yaml")


def test_readme_images_block_renders_the_registry_image(tmp_path: Path) -> None:
    block = yaml.safe_load(_blocks("yaml")[0])
    shutil.copytree(K8S, tmp_path / "k8s")
    for directory in re.findall(r"\(cd (\S+) && kustomize edit", README):
        path = tmp_path / directory / "kustomization.yaml"
        kust = yaml.safe_load(path.read_text(encoding="utf-8"))
        kust["images"] = block["images"]
        path.write_text(yaml.safe_dump(kust), encoding="utf-8")
        assert _images(render(path.parent)) == {_registry_image()}


def test_readme_own_kustomization_renders_its_settings(tmp_path: Path) -> None:
    block = _blocks("yaml")[1]
    shutil.copytree(K8S, tmp_path / "k8s")
    (tmp_path / "my-run").mkdir()
    (tmp_path / "my-run" / "kustomization.yaml").write_text(block, encoding="utf-8")
    docs = render(tmp_path / "my-run")
    res = by_key(docs)
    kust = yaml.safe_load(block)
    literals = dict(lit.split("=", 1) for lit in kust["configMapGenerator"][0]["literals"])
    (env,) = [d["data"] for d in docs if d["metadata"]["name"].startswith("llm-locust-env")]
    assert {k: env[k] for k in literals} == literals
    worker = res[("Job", "llm-locust-worker")]["spec"]
    assert worker["parallelism"] == worker["completions"] == int(literals["LOCUST_EXPECT_WORKERS"])
    release = kust["patches"][0]["patch"].rsplit("value:", 1)[1].strip()
    assert res[("ServiceMonitor", "llm-locust")]["metadata"]["labels"]["release"] == release
    assert _images(docs) == {_registry_image()}


def test_readme_names_only_files_that_exist() -> None:
    names = set(re.findall(r"`([\w./-]+\.(?:yaml|json|md))`", README))
    names = {n for n in names if n.endswith(".yaml") or "/" in n}  # not the results' file names
    assert len(names) >= 5
    for name in names:
        assert (ROOT / name).exists() or list(K8S.rglob(Path(name).name)), name
