"""The Kubernetes manifests as a platform team reviews them, rendered by a real kubectl.

Every overlay is rendered with ``kubectl kustomize`` (what ``kubectl apply -k`` sends) and
each object is validated offline against the Kubernetes OpenAPI schemas of every version from
``MIN_KUBERNETES`` on (``kubernetes-validate``, strict: an unknown field is an error). The
ServiceMonitor is a Prometheus Operator CRD, absent from those schemas: it is checked against
the fields of ``monitoring.coreos.com/v1`` it uses. Then what a schema cannot see: the
security settings of every pod and container, the API key only from a Secret, ports, labels
and selectors that agree, the worker count stated once, the Job semantics of a headless run,
and the image name the README documents.
"""

from __future__ import annotations

import functools
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import kubernetes_validate.utils
import pytest
import yaml
from kubernetes_validate.utils import all_versions
from packaging.version import Version

from tests.dockerfile import parse_dockerfile
from tests.k8sproc import K8S, Doc, by_key, containers, pod_spec, render

ROOT = K8S.parent
OVERLAYS = ["interactive", "headless"]
KUSTOMIZATIONS = {  # every directory a user applies
    "interactive": K8S / "overlays" / "interactive",
    "headless": K8S / "overlays" / "headless",
    "capacity-plan": K8S / "overlays" / "capacity-plan",  # a plan of a comparison (plan.env: plan A)
    "results-reader": K8S / "results-reader",
}
MIN_KUBERNETES = "1.29"  # Indexed Job backoffLimitPerIndex (beta, on by default) and podFailurePolicy
VERSION = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
IMAGE = f"llm-locust:{VERSION.group(1) if VERSION else ''}"
WORKLOADS = ("Deployment", "Job", "Pod")


@pytest.fixture(scope="module", autouse=True)
def _schemas_parsed_once() -> Iterator[None]:
    """``kubernetes_validate.validate`` reads and parses its schema files on every call (the
    1.2 MB ``_definitions.json`` of a version for each object): here each file once, the same
    contents to the same validator."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            kubernetes_validate.utils,
            "schema_contents",
            functools.cache(kubernetes_validate.utils.schema_contents),
        )
        yield


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[Doc]]:
    return {name: render(directory) for name, directory in KUSTOMIZATIONS.items()}


def _pods(docs: list[Doc]) -> list[Doc]:
    return [d for d in docs if d["kind"] in WORKLOADS]


_pod_spec = pod_spec


def _pod_labels(doc: Doc) -> dict[str, str]:
    return doc["spec"]["template"]["metadata"]["labels"]


def _matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def _flag(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def _args(doc: Doc) -> list[str]:
    return [str(a) for c in containers(doc) for a in c.get("args", [])]


def _component(docs: list[Doc], component: str) -> Doc:
    (doc,) = [d for d in _pods(docs) if d["metadata"]["labels"]["app.kubernetes.io/component"] == component]
    return doc


def _env(docs: list[Doc]) -> dict[str, str]:
    (cm,) = [d for d in docs if d["metadata"]["name"].startswith("llm-locust-env")]
    return cm["data"]


# --- every file ---------------------------------------------------------------------------


def test_every_yaml_parses_and_names_its_kind() -> None:
    files = sorted(K8S.rglob("*.yaml"))
    assert len(files) >= 10
    for path in files:
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            assert isinstance(doc, dict) and doc.get("apiVersion") and doc.get("kind"), path
            if doc["kind"] not in ("Kustomization", "Component"):
                assert doc["metadata"]["name"], path


def test_dashboard_copy_is_identical_and_labelled(rendered: dict[str, list[Doc]]) -> None:
    original = ROOT / "llm_locust" / "dashboards" / "llm-locust.json"
    copy = K8S / "base" / "dashboards" / "llm-locust.json"
    assert copy.read_bytes() == original.read_bytes(), (
        "run: cp llm_locust/dashboards/llm-locust.json k8s/base/dashboards/"
    )
    for overlay in OVERLAYS:
        dashboard = by_key(rendered[overlay])[("ConfigMap", "llm-locust-dashboard")]  # no hash suffix
        assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert dashboard["data"]["llm-locust.json"] == original.read_text(encoding="utf-8")


# --- schemas ------------------------------------------------------------------------------

_DURATION = r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"
SERVICE_MONITOR_FIELDS = {  # the part of monitoring.coreos.com/v1 ServiceMonitor these manifests use
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["selector", "endpoints"],
            "properties": {
                "selector": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}
                    },
                },
                "endpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["port"],
                        "properties": {
                            "port": {"type": "string"},
                            "path": {"type": "string", "pattern": "^/"},
                            "interval": {"type": "string", "pattern": _DURATION},
                        },
                    },
                },
            },
        },
    },
}


def _versions() -> list[str]:
    return [v for v in all_versions() if Version(v) >= Version(MIN_KUBERNETES)]


@pytest.mark.parametrize("overlay", KUSTOMIZATIONS)
def test_every_object_passes_the_kubernetes_schemas(rendered: dict[str, list[Doc]], overlay: str) -> None:
    validate_objects(rendered[overlay])


def validate_objects(docs: list[Doc]) -> None:
    """Every object against the schemas of every version from ``MIN_KUBERNETES`` (strict), the
    ServiceMonitor against the fields it uses; a failure names the object and the version."""
    versions = _versions()
    assert len(versions) >= 3, versions
    for doc in docs:
        if doc["kind"] == "ServiceMonitor":
            jsonschema.validate(doc, SERVICE_MONITOR_FIELDS)
            continue
        for version in versions:
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as exc:
                pytest.fail(f"{doc['kind']}/{doc['metadata']['name']} on {version}: {exc.message}")


def test_the_validator_rejects_what_the_cluster_would() -> None:
    """The schema check can fail: a typo'd field and a string for an integer are errors."""
    job = by_key(render(K8S / "overlays" / "headless"))[("Job", "llm-locust-worker")]
    job["spec"]["paralelism"] = 4
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, _versions()[-1], strict=True)
    del job["spec"]["paralelism"]
    job["spec"]["parallelism"] = "4"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, _versions()[-1], strict=True)


# --- security -----------------------------------------------------------------------------


@pytest.mark.parametrize("overlay", KUSTOMIZATIONS)
def test_every_pod_and_container_is_locked_down(rendered: dict[str, list[Doc]], overlay: str) -> None:
    uid = int(parse_dockerfile().stages[-1].args()["UID"])
    pods = _pods(rendered[overlay])
    assert len(pods) == (1 if overlay == "results-reader" else 2)
    for doc in pods:
        name, spec = doc["metadata"]["name"], _pod_spec(doc)
        pod = spec["securityContext"]
        assert pod["runAsNonRoot"] is True and pod["runAsUser"] == uid, name
        assert pod["seccompProfile"] == {"type": "RuntimeDefault"}, name
        assert spec["automountServiceAccountToken"] is False and spec["enableServiceLinks"] is False, name
        assert not spec.get("hostNetwork") and not spec.get("hostPID") and not spec.get("hostIPC"), name
        assert all("hostPath" not in v for v in spec.get("volumes", [])), name
        volumes = {v["name"]: v for v in spec["volumes"]}
        for container in containers(doc):
            sc = container["securityContext"]
            assert sc["runAsNonRoot"] is True and sc["allowPrivilegeEscalation"] is False, name
            assert sc["readOnlyRootFilesystem"] is True and sc["capabilities"] == {"drop": ["ALL"]}, name
            assert sc["seccompProfile"] == {"type": "RuntimeDefault"} and not sc.get("privileged"), name
            mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
            assert "emptyDir" in volumes[mounts["/tmp"]["name"]] and not mounts["/tmp"].get("readOnly"), name
    if overlay in OVERLAYS:  # the master writes its results, as the image's user
        master = _pod_spec(_component(rendered[overlay], "master"))
        assert master["securityContext"]["fsGroup"] == uid
        (container,) = master["containers"]
        results = next(m for m in container["volumeMounts"] if m["mountPath"] == "/results")
        assert not results.get("readOnly")


@pytest.mark.parametrize("overlay", KUSTOMIZATIONS)
def test_api_key_only_from_a_secret(rendered: dict[str, list[Doc]], overlay: str) -> None:
    docs = rendered[overlay]
    text = yaml.safe_dump_all(docs)
    assert not re.search(r"\bsk-[A-Za-z0-9]", text)
    secret_words = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|BEARER", re.I)
    for doc in docs:
        if doc["kind"] == "ConfigMap" and doc["metadata"]["name"] != "llm-locust-dashboard":
            assert not [k for k in doc["data"] if secret_words.search(k)], doc["data"]
        assert doc["kind"] != "Secret"  # the user creates it; never shipped with a value
    for doc in _pods(docs):
        for container in containers(doc):
            args = [str(a) for a in [*container.get("command", []), *container.get("args", [])]]
            assert not [a for a in args if re.search(r"api[-_]?key|authorization|bearer", a, re.I)], args
            for entry in container.get("env", []):
                if secret_words.search(entry["name"]):
                    assert "value" not in entry, entry
                    ref = entry["valueFrom"]["secretKeyRef"]
                    assert (ref["name"], ref["key"]) == ("llm-locust-api-key", "OPENAI_API_KEY")
            refs = [e["name"] for e in container.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})]
            assert refs == ([] if doc["kind"] == "Pod" else ["OPENAI_API_KEY"])


# --- ports, labels, selectors -------------------------------------------------------------


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_ports_labels_and_selectors_agree(rendered: dict[str, list[Doc]], overlay: str) -> None:
    docs = rendered[overlay]
    res = by_key(docs)
    master, worker = _component(docs, "master"), _component(docs, "worker")
    for doc in (master, worker):
        if doc["kind"] == "Deployment":
            assert _matches(doc["spec"]["selector"]["matchLabels"], _pod_labels(doc))
    service = res[("Service", "llm-locust-master")]
    assert _matches(service["spec"]["selector"], _pod_labels(master))
    assert not _matches(service["spec"]["selector"], _pod_labels(worker))
    (container,) = _pod_spec(master)["containers"]
    named = {p["name"]: p["containerPort"] for p in container["ports"]}
    for port in service["spec"]["ports"]:  # every Service port reaches a port the master opens
        assert port["targetPort"] in named, (overlay, port)
        assert named[port["targetPort"]] == port["port"], port
    monitor = res[("ServiceMonitor", "llm-locust")]
    assert _matches(monitor["spec"]["selector"]["matchLabels"], service["metadata"]["labels"])
    assert monitor["metadata"]["labels"]["release"]
    assert {e["port"] for e in monitor["spec"]["endpoints"]} == {"metrics"}
    env = _env(docs)
    assert int(env["LLM_LOCUST_PROMETHEUS_PORT"]) == named["metrics"]
    assert env["LLM_LOCUST_PROMETHEUS_HOST"] == "0.0.0.0"  # a pod must listen beyond loopback
    args, margs = _args(worker), _args(master)
    assert "--worker" in args and _flag(args, "--master-host") == service["metadata"]["name"]
    assert int(_flag(args, "--master-port")) == int(_flag(margs, "--master-bind-port")) == named["master"]
    assert ("web" in named) == (overlay == "interactive")  # the headless master serves no web UI
    # outside a pod llm-locust binds the master (and, with a key, the web UI) to 127.0.0.1: in a pod
    # workers and the Service connect from elsewhere, so the manifests say where to listen
    assert _flag(margs, "--master-bind-host") == "*"
    if overlay == "interactive":
        assert _flag(margs, "--web-host") == "0.0.0.0"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_workers_get_one_cpu_and_share_the_settings(rendered: dict[str, list[Doc]], overlay: str) -> None:
    docs = rendered[overlay]
    (wc,) = containers(_component(docs, "worker"))
    (mc,) = containers(_component(docs, "master"))
    resources = wc["resources"]
    assert str(resources["requests"]["cpu"]) == str(resources["limits"]["cpu"]) == "1"
    assert wc["envFrom"] == mc["envFrom"]  # one ConfigMap (with its hash) for both
    assert all(k.startswith(("LLM_LOCUST_", "LOCUST_")) for k in _env(docs))
    assert {"LLM_LOCUST_MODEL", "LOCUST_HOST"} <= set(_env(docs))


@pytest.mark.parametrize("overlay", KUSTOMIZATIONS)
def test_images_are_the_documented_name_and_version(rendered: dict[str, list[Doc]], overlay: str) -> None:
    for doc in _pods(rendered[overlay]):
        for container in containers(doc):
            assert container["image"] == IMAGE and container["imagePullPolicy"] == "IfNotPresent"
    readme = (K8S / "README.md").read_text(encoding="utf-8")
    assert f"docker build -t {IMAGE} ." in readme


# --- the headless run ---------------------------------------------------------------------


def test_headless_master_job_carries_the_verdict(rendered: dict[str, list[Doc]]) -> None:
    docs = rendered["headless"]
    master = _component(docs, "master")
    assert master["kind"] == "Job" and master["spec"]["backoffLimit"] == 0
    pod = _pod_spec(master)
    assert pod["restartPolicy"] == "Never"
    (container,) = pod["containers"]
    # exec form, no shell in between to swallow the exit code
    assert container["command"] == ["llm-locust", "run"]
    rules = master["spec"]["podFailurePolicy"]["rules"]
    by_code = {code: r for r in rules for code in r["onExitCodes"]["values"]}
    assert set(by_code) == {2, 3}
    for rule in by_code.values():
        assert rule["action"] == "FailJob" and rule["onExitCodes"]["containerName"] == container["name"]
        assert rule["onExitCodes"]["operator"] == "In"
    args = _args(master)
    assert "--headless" in args and "--master" in args
    results = _flag(args, "--results-dir")
    mount = next(m for m in container["volumeMounts"] if results.startswith(m["mountPath"] + "/"))
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    assert ("PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"]) in by_key(docs)
    env = _env(docs)
    assert int(env["LOCUST_USERS"]) > 0 and int(env["LOCUST_SPAWN_RATE"]) > 0 and env["LOCUST_RUN_TIME"]


def test_headless_workers_end_with_the_run(rendered: dict[str, list[Doc]]) -> None:
    docs = rendered["headless"]
    assert not [d for d in docs if d["kind"] == "Deployment"]  # nothing restarts them forever
    worker = _component(docs, "worker")
    assert worker["kind"] == "Job" and worker["spec"]["completionMode"] == "Indexed"
    assert _pod_spec(worker)["restartPolicy"] == "Never"
    count = int(_env(docs)["LOCUST_EXPECT_WORKERS"])
    assert worker["spec"]["parallelism"] == worker["spec"]["completions"] == count
    assert "--expect-workers" not in _args(_component(docs, "master"))  # read from LOCUST_EXPECT_WORKERS


def test_results_reader_mounts_the_runs_volume_read_only(rendered: dict[str, list[Doc]]) -> None:
    (reader,) = _pods(rendered["results-reader"])
    spec = _pod_spec(reader)
    (volume,) = [v for v in spec["volumes"] if "persistentVolumeClaim" in v]
    claim = volume["persistentVolumeClaim"]
    assert ("PersistentVolumeClaim", claim["claimName"]) in by_key(rendered["headless"])
    assert claim["readOnly"] is True and spec["restartPolicy"] == "Never" and spec["activeDeadlineSeconds"]
    (container,) = spec["containers"]
    mount = next(m for m in container["volumeMounts"] if m["name"] == volume["name"])
    assert mount["mountPath"] == "/results" and mount["readOnly"] is True


def test_interactive_master_is_a_single_deployment(rendered: dict[str, list[Doc]]) -> None:
    master = _component(rendered["interactive"], "master")
    assert master["kind"] == "Deployment" and master["spec"]["replicas"] == 1
    assert "--headless" not in _args(master)
    assert not [d for d in rendered["interactive"] if d["kind"] == "Job"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_worker_pods_are_guaranteed(rendered: dict[str, list[Doc]], overlay: str) -> None:
    """Request = limit for CPU and memory in every container (the Guaranteed QoS class): a worker is
    not throttled below what it asked, so throttling never passes for a saturated client."""
    for container in containers(_component(rendered[overlay], "worker")):
        requests, limits = container["resources"]["requests"], container["resources"]["limits"]
        assert set(requests) == set(limits) == {"cpu", "memory"}, container["resources"]
        assert str(requests["cpu"]) == str(limits["cpu"]) and str(requests["memory"]) == str(limits["memory"])


def test_a_worker_whose_master_is_gone_is_not_retried(rendered: dict[str, list[Doc]]) -> None:
    worker = _component(rendered["headless"], "worker")
    (rule,) = worker["spec"]["podFailurePolicy"]["rules"]
    (container,) = containers(worker)
    assert rule["action"] == "FailIndex" and rule["onExitCodes"]["values"] == [5]  # docs/distributed.md
    assert rule["onExitCodes"]["containerName"] == container["name"]


def _gib(quantity: str) -> float:
    number, unit = re.fullmatch(r"(\d+)(Mi|Gi)", quantity).groups()  # type: ignore[union-attr]
    return int(number) / (1024 if unit == "Mi" else 1)


def test_the_results_volumes_hold_the_documented_requests(rendered: dict[str, list[Doc]]) -> None:
    """~2.5 KiB a request (docs/results.md, k8s/README.md; 2,445 MiB for 1,000,000 requests in
    benchmarks/README.md): the PVC holds 4,000,000 of them, the interactive emptyDir 800,000."""
    pvc = by_key(rendered["headless"])[("PersistentVolumeClaim", "llm-locust-results")]
    per_request = 2_445 * 2**20 / 1_000_000  # bytes
    assert _gib(pvc["spec"]["resources"]["requests"]["storage"]) * 2**30 >= 4_000_000 * per_request
    master = _component(rendered["interactive"], "master")
    (volume,) = [v for v in _pod_spec(master)["volumes"] if v["name"] == "results"]
    assert _gib(volume["emptyDir"]["sizeLimit"]) * 2**30 >= 800_000 * per_request
    readme = (K8S / "README.md").read_text(encoding="utf-8")
    assert "about **2.5 KiB per\nrequest**" in readme and "less than 100 MiB free" in readme


def test_the_interactive_master_saves_results_under_results(
    rendered: dict[str, list[Doc]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder typed into the web UI's form (``run1`` or ``/results/run1``) must lie under the
    results root, the master's working directory when it has no --results-dir: that directory is
    the writable /results volume (the root filesystem is read-only). The real guard decides, with
    the working directory at a local stand-in for the volume."""
    from types import SimpleNamespace

    from llm_locust.config.build import config_from_options
    from llm_locust.runtime.webui_guard import WebUiGuard

    master = _component(rendered["interactive"], "master")
    (container,) = containers(master)
    assert "--results-dir" not in _args(master)
    mount = next(m for m in container["volumeMounts"] if m["mountPath"] == container.get("workingDir"))
    assert not mount.get("readOnly") and container["securityContext"]["readOnlyRootFilesystem"] is True
    (volume,) = [v for v in _pod_spec(master)["volumes"] if v["name"] == mount["name"]]
    assert "emptyDir" in volume or "persistentVolumeClaim" in volume
    volume_here = tmp_path / "results"  # what the pod sees at the mount path
    volume_here.mkdir()
    monkeypatch.chdir(volume_here)
    run = SimpleNamespace(run_config=config_from_options(None), environment=SimpleNamespace(host=None))
    guard = WebUiGuard.of(run)
    assert guard.results_problem("run1") is None
    assert guard.results_problem(str(volume_here / "run1")) is None  # /results/run1 in the pod
    assert guard.results_problem(str(tmp_path / "elsewhere")) is not None


# --- what a user edits --------------------------------------------------------------------


def _copy_tree(tmp_path: Path) -> Path:
    shutil.copytree(K8S, tmp_path / "k8s")
    return tmp_path / "k8s"


def _set_literal(path: Path, key: str, value: str) -> None:
    text = path.read_text(encoding="utf-8")
    new, n = re.subn(rf"^(\s*- {key}=)\S+", rf"\g<1>{value}", text, flags=re.M)
    assert n == 1, f"{key} must be stated exactly once in {path}"
    path.write_text(new, encoding="utf-8")


def _worker_count(docs: list[Doc]) -> tuple[int, int, int]:
    spec = _component(docs, "worker")["spec"]
    return int(_env(docs)["LOCUST_EXPECT_WORKERS"]), spec["parallelism"], spec["completions"]


def test_worker_count_is_stated_once(tmp_path: Path) -> None:
    tree = _copy_tree(tmp_path)
    _set_literal(tree / "overlays" / "headless" / "kustomization.yaml", "LOCUST_EXPECT_WORKERS", "7")
    assert _worker_count(render(tree / "overlays" / "headless")) == (7, 7, 7)
    # a kustomization of the user's on top of the headless overlay, as k8s/README.md shows
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": ["../k8s/overlays/headless"],
                "configMapGenerator": [
                    {"name": "llm-locust-env", "behavior": "merge", "literals": ["LOCUST_EXPECT_WORKERS=3"]}
                ],
                "components": ["../k8s/components/worker-count"],
            }
        )
    )
    assert _worker_count(render(mine)) == (3, 3, 3)


@pytest.mark.parametrize("overlay", KUSTOMIZATIONS)
def test_image_for_a_users_registry(tmp_path: Path, overlay: str) -> None:
    """What ``kustomize edit set image llm-locust=REGISTRY/llm-locust:TAG`` writes, rendered.

    ``kustomize edit`` is not part of kubectl and no kustomize binary installs here: the test
    writes the ``images`` entry that command writes (the README shows both ways).
    """
    tree = _copy_tree(tmp_path)
    path = tree / KUSTOMIZATIONS[overlay].relative_to(K8S) / "kustomization.yaml"
    kust: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    (entry,) = [e for e in kust["images"] if e["name"] == "llm-locust"]
    entry.update(newName="registry.example.com/team/llm-locust", newTag="0.1.0-rc1")
    path.write_text(yaml.safe_dump(kust), encoding="utf-8")
    images = {c["image"] for d in _pods(render(path.parent)) for c in containers(d)}
    assert images == {"registry.example.com/team/llm-locust:0.1.0-rc1"}
