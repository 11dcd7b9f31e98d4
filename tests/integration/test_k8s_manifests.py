"""Static checks of the Kubernetes manifests (no cluster, no kustomize binary needed).

A small stand-in for ``kustomize build`` collects each overlay's resources, applies
``$patch: delete`` patches and ``replicas`` overrides, and the tests check what
kustomize would not: that selectors, ports, names and run settings agree.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "k8s"
OVERLAYS = ["interactive", "headless"]
IMAGE = "ghcr.io/example/llm-locust:latest"
Doc = dict[str, Any]


def _load_yaml(path: Path) -> list[Doc]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]


def _kustomization(directory: Path) -> Doc:
    return _load_yaml(directory / "kustomization.yaml")[0]


def _key(doc: Doc) -> tuple[str, str]:
    return doc["kind"], doc["metadata"]["name"]


def _build(directory: Path) -> dict[tuple[str, str], Doc]:
    """Resources of a kustomization after deletes and replica overrides."""
    kust = _kustomization(directory)
    out: dict[tuple[str, str], Doc] = {}
    for entry in kust.get("resources", []):
        path = directory / entry
        docs = list(_build(path).values()) if path.is_dir() else _load_yaml(path)
        out.update({_key(d): d for d in docs})
    for patch in kust.get("patches", []):
        doc = _load_yaml(directory / patch["path"])[0] if "path" in patch else yaml.safe_load(patch["patch"])
        if isinstance(doc, dict) and doc.get("$patch") == "delete":
            del out[_key(doc)]
    for override in kust.get("replicas", []):
        out[("Deployment", override["name"])]["spec"]["replicas"] = override["count"]
    return out


def _generator(directory: Path, name: str) -> Doc:
    """A configMapGenerator entry, merged down from the base like kustomize does."""
    merged: Doc = {"literals": [], "files": []}
    kust = _kustomization(directory)
    for entry in kust.get("resources", []):
        if (directory / entry).is_dir():
            base = _generator(directory / entry, name)
            merged = {k: list(v) if isinstance(v, list) else v for k, v in base.items()}
    for gen in kust.get("configMapGenerator", []):
        if gen["name"] == name:
            for key in ("literals", "files"):
                merged[key] = merged.get(key, []) + gen.get(key, [])
            merged.update({k: v for k, v in gen.items() if k not in ("literals", "files")})
    return merged


def _env(directory: Path) -> dict[str, str]:
    return dict(lit.split("=", 1) for lit in _generator(directory, "llm-locust-env")["literals"])


def _pod_spec(doc: Doc) -> Doc:
    return doc["spec"]["template"]["spec"]


def _pod_labels(doc: Doc) -> dict[str, str]:
    return doc["spec"]["template"]["metadata"]["labels"]


def _matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def _flag(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def _masters(res: dict[tuple[str, str], Doc]) -> list[Doc]:
    return [d for d in res.values() if d["kind"] in ("Deployment", "Job") and "--master" in _args(d)]


def _args(doc: Doc) -> list[str]:
    return [str(a) for c in _pod_spec(doc)["containers"] for a in c.get("args", [])]


# --- every file ---------------------------------------------------------------------


def test_every_yaml_parses_and_names_its_kind() -> None:
    files = sorted(K8S.rglob("*.yaml"))
    assert len(files) >= 10
    for path in files:
        for doc in _load_yaml(path):
            assert isinstance(doc, dict) and doc.get("apiVersion") and doc.get("kind"), path
            if doc["kind"] != "Kustomization":
                assert doc["metadata"]["name"], path


@pytest.mark.parametrize("directory", ["base", "overlays/interactive", "overlays/headless"])
def test_kustomization_references_exist(directory: str) -> None:
    root = K8S / directory
    kust = _kustomization(root)
    assert kust["kind"] == "Kustomization"
    for entry in kust.get("resources", []):
        path = root / entry
        assert path.is_file() or (path / "kustomization.yaml").is_file(), entry
    for patch in kust.get("patches", []):
        assert "path" not in patch or (root / patch["path"]).is_file()
    for gen in kust.get("configMapGenerator", []):
        for entry in gen.get("files", []):
            assert (root / entry.split("=", 1)[-1]).resolve().is_relative_to(root.resolve())
            assert (root / entry.split("=", 1)[-1]).is_file(), entry


def test_dashboard_copy_is_identical_and_labelled() -> None:
    original = ROOT / "llm_locust" / "dashboards" / "llm-locust.json"
    copy = K8S / "base" / "dashboards" / "llm-locust.json"
    assert copy.read_bytes() == original.read_bytes(), (
        "run: cp llm_locust/dashboards/llm-locust.json k8s/base/dashboards/"
    )
    gen = _generator(K8S / "base", "llm-locust-dashboard")
    assert gen["files"] == ["dashboards/llm-locust.json"]
    assert gen["options"]["labels"] == {"grafana_dashboard": "1"}
    assert gen["options"]["disableNameSuffixHash"] is True


def test_readme_documents_image_and_apply() -> None:
    readme = (K8S / "README.md").read_text(encoding="utf-8")
    assert IMAGE in readme and "kubectl apply -k k8s/overlays/headless" in readme
    assert "kubectl apply -k k8s/overlays/interactive" in readme


# --- per overlay ----------------------------------------------------------------------


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_selectors_match_their_pods(overlay: str) -> None:
    res = _build(K8S / "overlays" / overlay)
    for doc in res.values():
        if doc["kind"] == "Deployment":
            assert _matches(doc["spec"]["selector"]["matchLabels"], _pod_labels(doc)), doc["metadata"]["name"]
    (master,) = _masters(res)
    worker = res[("Deployment", "llm-locust-worker")]
    service = res[("Service", "llm-locust-master")]
    assert _matches(service["spec"]["selector"], _pod_labels(master))
    assert not _matches(service["spec"]["selector"], _pod_labels(worker))
    monitor = res[("ServiceMonitor", "llm-locust")]
    assert _matches(monitor["spec"]["selector"]["matchLabels"], service["metadata"]["labels"])
    assert "release" in monitor["metadata"]["labels"]
    service_ports = {p["name"]: p for p in service["spec"]["ports"]}
    assert {n: p["port"] for n, p in service_ports.items()} == {"web": 8089, "master": 5557, "metrics": 9646}
    assert {e["port"] for e in monitor["spec"]["endpoints"]} <= set(service_ports)
    container_ports = {p["name"]: p["containerPort"] for p in _pod_spec(master)["containers"][0]["ports"]}
    for name in ("master", "metrics"):  # the headless master serves no web UI
        assert container_ports[name] == service_ports[name]["port"]
    env = _env(K8S / "overlays" / overlay)
    assert str(env["LLM_LOCUST_PROMETHEUS_PORT"]) == str(container_ports["metrics"])
    assert env["LLM_LOCUST_PROMETHEUS_HOST"] == "0.0.0.0"  # a pod must listen beyond loopback


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_workers_find_the_master_and_get_one_cpu(overlay: str) -> None:
    res = _build(K8S / "overlays" / overlay)
    worker = res[("Deployment", "llm-locust-worker")]
    args = _args(worker)
    assert "--worker" in args and _flag(args, "--master-host") == "llm-locust-master"
    (master,) = _masters(res)
    assert _flag(args, "--master-port") == _flag(_args(master), "--master-bind-port")
    (container,) = _pod_spec(worker)["containers"]
    resources = container["resources"]
    assert str(resources["requests"]["cpu"]) == str(resources["limits"]["cpu"]) == "1"
    assert worker["spec"]["replicas"] >= 1


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_containers_use_image_and_env_conventions(overlay: str) -> None:
    directory = K8S / "overlays" / overlay
    res = _build(directory)
    generated = {"llm-locust-env"}
    for doc in res.values():
        if doc["kind"] not in ("Deployment", "Job"):
            continue
        for container in _pod_spec(doc)["containers"]:
            assert container["image"] == IMAGE
            assert {ref["configMapRef"]["name"] for ref in container["envFrom"]} <= generated
            env = {e["name"]: e for e in container.get("env", [])}
            secret = env["OPENAI_API_KEY"]["valueFrom"]["secretKeyRef"]
            assert secret["name"] == "llm-locust-api-key" and secret["key"] == "OPENAI_API_KEY"
            assert all(n.startswith(("LLM_LOCUST_", "LOCUST_")) or n == "OPENAI_API_KEY" for n in env)
    env = _env(directory)
    assert all(k.startswith(("LLM_LOCUST_", "LOCUST_")) for k in env)
    assert {"LLM_LOCUST_MODEL", "LOCUST_HOST", "LOCUST_LOCUSTFILE"} <= set(env)


def test_interactive_master_is_a_single_deployment() -> None:
    res = _build(K8S / "overlays" / "interactive")
    (master,) = _masters(res)
    assert master["kind"] == "Deployment" and master["spec"]["replicas"] == 1
    assert "--headless" not in _args(master)
    assert ("Job", "llm-locust-master") not in res


def test_headless_master_is_a_one_shot_job() -> None:
    directory = K8S / "overlays" / "headless"
    res = _build(directory)
    (master,) = _masters(res)
    assert master["kind"] == "Job" and ("Deployment", "llm-locust-master") not in res
    assert master["spec"]["backoffLimit"] == 0
    pod = _pod_spec(master)
    assert pod["restartPolicy"] == "Never"
    args = _args(master)
    assert "--headless" in args and _flag(args, "--run-time")
    assert (
        int(_flag(args, "--expect-workers")) == res[("Deployment", "llm-locust-worker")]["spec"]["replicas"]
    )
    results = _flag(args, "--results-dir")
    (container,) = pod["containers"]
    mount = next(m for m in container["volumeMounts"] if m["mountPath"] == results)
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    assert ("PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"]) in res
    env = _env(directory)
    assert int(env["LOCUST_USERS"]) > 0 and int(env["LOCUST_SPAWN_RATE"]) > 0


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_kustomize_build_when_available(overlay: str) -> None:
    if shutil.which("kustomize"):
        cmd = ["kustomize", "build"]
    elif shutil.which("kubectl"):
        cmd = ["kubectl", "kustomize"]
    else:
        pytest.skip("neither kustomize nor kubectl installed")
    proc = subprocess.run([*cmd, str(K8S / "overlays" / overlay)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    docs = [d for d in yaml.safe_load_all(proc.stdout) if d]
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert ("ConfigMap", "llm-locust-dashboard") in kinds
    assert {k for k in kinds if k[0] != "ConfigMap"} == set(_build(K8S / "overlays" / overlay))
    assert all(d["metadata"]["labels"]["app.kubernetes.io/part-of"] == "llm-locust" for d in docs)
