"""The headless overlay's pods, run as processes on separate network hosts.

The closest this machine gets to pods on different nodes: the master, two workers and the
server each live in their own network namespace (``tests/netns.py``), joined by a private
switch. Each process runs exactly what its pod would (``tests/k8sproc.py``): the command,
arguments and environment of the rendered manifests, the image's ``ENV``, as a non-root user
(``nobody``) that can write nothing but its results folder and its ``/tmp``, as with
``runAsNonRoot`` and a read-only root filesystem. That user reads the checkout through a bind
mount in a readable folder (``tests.k8sproc.Exposed``), so the tests run from any checkout, one
under a private 0700 folder too. The run is configured the way the README
tells a user to: a kustomization of its own on top of the headless overlay.

The master binds its namespace address and the workers reach it by that address (the test
plays the cluster DNS for the Service name). Its results must equal the pooled computation
over the raw records (numpy here, not the package's summary code) and the server's own
counters; its exit code is the verdict that becomes the Job's status (0, 3 SLO failed,
2 bad input), and the workers end with the run (exit 0, so their Job completes).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from tests.k8sproc import K8S, REPO, Doc, Exposed, PodCommand, by_key, pod_command, render
from tests.netns import Host, hosts, need_mount_namespaces, private_mounts
from tests.simproc import start_sim, stop_sim

MODEL = "meta-llama/Llama-3.1-8B-Instruct"  # the manifests' model; the simulator serves it
SIM_ARGS = ("--ttft-ms", "30", "--tpot-ms", "5", "--output-tokens", "16", "--model", MODEL)
NOBODY = 65534
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
LIGHT = {"LLM_LOCUST_PROMPT_TOKENS": "32", "LLM_LOCUST_MAX_TOKENS": "16"}


@pytest.fixture
def net() -> Iterator[dict[str, Host]]:
    with hosts("master", "worker-0", "worker-1", "server") as network:
        yield network


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A directory the pods' user can reach (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="llm-locust-pods-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _writable(path: Path) -> Path:
    path.mkdir(parents=True)
    shutil.chown(path, NOBODY, NOBODY)
    return path


def _users_overlay(directory: Path, settings: dict[str, str]) -> list[Doc]:
    """A user's kustomization on top of k8s/overlays/headless (as k8s/README.md shows), rendered."""
    directory.mkdir(parents=True)
    literals = [f"{k}={v}" for k, v in settings.items()]
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [os.path.relpath(K8S / "overlays" / "headless", directory)],
        "components": [os.path.relpath(K8S / "components" / "worker-count", directory)],
        "configMapGenerator": [{"name": "llm-locust-env", "behavior": "merge", "literals": literals}],
    }
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(kustomization), encoding="utf-8")
    return render(directory)


class Pod:
    """One pod's process inside a host's namespace, its output in files."""

    def __init__(self, host: Host, pod: PodCommand, logs: Path, name: str, exposed: Exposed) -> None:
        self.name = name
        self.stdout, self.stderr = logs / f"{name}.out", logs / f"{name}.err"
        pod = exposed.command(pod)
        env = {**pod.env, "HOME": "/nonexistent", "LANG": "C.UTF-8"}
        argv = exposed.wrap(host.run([*AS_NOBODY, *pod.argv]))
        with open(self.stdout, "w") as out, open(self.stderr, "w") as err:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd="/")

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout)

    def output(self) -> str:
        return self.stdout.read_text() + self.stderr.read_text()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class Cluster:
    """The master Job's pod and the worker Job's pods of a rendered overlay, on their hosts."""

    def __init__(self, net: dict[str, Host], docs: list[Doc], scratch: Path) -> None:
        self.net, self.docs, self.scratch = net, docs, scratch
        self.results = _writable(scratch / "results")  # the PVC (fsGroup makes it writable)
        self.logs = scratch / "logs"
        self.logs.mkdir()
        self.exposed = Exposed(scratch)  # the checkout, readable by the pods' user
        self.pods: list[Pod] = []

    def master(self) -> Pod:
        host = self.net["master"]
        mounts = {"/results": self.results, "/tmp": _writable(self.scratch / "tmp-master")}
        # the Job's pod name: the master's results folder is /results/$(POD_NAME)
        pod = pod_command(
            self.docs,
            "Job",
            "llm-locust-master",
            mounts,
            overrides={"LOCUST_MASTER_BIND_HOST": host.address},
            pod_name="llm-locust-master-x7k2p",
        )
        return self._start(host, pod, "master")

    def workers(self) -> list[Pod]:
        job = by_key(self.docs)[("Job", "llm-locust-worker")]
        started = []
        for index in range(job["spec"]["parallelism"]):
            host = self.net[f"worker-{index}"]
            mounts = {"/tmp": _writable(self.scratch / f"tmp-worker-{index}")}
            pod = pod_command(
                self.docs, "Job", "llm-locust-worker", mounts, pod_name=f"llm-locust-worker-{index}"
            )
            # the cluster's DNS: the Service name resolves to the master's address
            pod.argv = [self.net["master"].address if a == "llm-locust-master" else a for a in pod.argv]
            started.append(self._start(host, pod, f"worker-{index}"))
        return started

    def _start(self, host: Host, pod: PodCommand, name: str) -> Pod:
        started = Pod(host, pod, self.logs, name, self.exposed)
        self.pods.append(started)
        return started

    def run_dir(self) -> Path:
        runs = list(self.results.iterdir())
        log = [line for line in self.pods[0].output().splitlines() if "|" not in line]
        assert len(runs) == 1, (runs, "\n".join(log[-40:]))
        (run,) = runs
        assert run.name == "llm-locust-master-x7k2p" and run.stat().st_uid == NOBODY
        return run

    def stop(self) -> None:
        for pod in self.pods:
            pod.kill()


@pytest.fixture
def cluster(net: dict[str, Host], scratch: Path) -> Iterator[Any]:
    made: list[Cluster] = []

    def make(docs: list[Doc]) -> Cluster:
        made.append(Cluster(net, docs, scratch))
        return made[-1]

    try:
        yield make
    finally:
        for c in made:
            c.stop()


@pytest.fixture
def server(net: dict[str, Host]) -> Iterator[str]:
    """The simulator on the server host; its URL is reachable from the other hosts only."""
    host = net["server"]
    proc, url = start_sim(
        *SIM_ARGS, "--host", host.address, command=host.run([sys.executable, "-m", "llm_locust.sim"])
    )
    try:
        yield url
    finally:
        stop_sim(proc)


def _server_counters(net: dict[str, Host], url: str) -> dict[str, float]:
    """The simulator's vLLM counters, scraped from the master's host over the switch."""
    code = f"import urllib.request as u; print(u.urlopen({url + '/metrics'!r}, timeout=10).read().decode())"
    proc = subprocess.run(
        net["master"].run([sys.executable, "-c", code]), capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stderr
    names = ("vllm:generation_tokens_total", "vllm:prompt_tokens_total", "vllm:request_success_total")
    return {
        name: sum(
            float(line.rsplit(" ", 1)[1]) for line in proc.stdout.splitlines() if line.startswith(name + "{")
        )
        for name in names
    }


def _clean(pod: Pod) -> str:
    out = pod.output()
    assert "Traceback" not in out, f"{pod.name}: {out[-3000:]}"
    return out


def _rows(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "requests.jsonl").read_text().splitlines()]


def _pooled(rows: list[dict[str, Any]]) -> dict[str, float]:
    """What one process would report over every record, straight from numpy (the latencies of a
    request the client itself stalled inside are left out, as the summary documents)."""
    ok = [r for r in rows if r["outcome"] == "ok" and not r["client_stall_s"]]
    raw = {
        "ttft": [r["ttft"] for r in ok],
        "tpot": [r["tpot"] for r in ok if r["tpot"] is not None],
        "itl": [gap for r in ok for gap in r["itl"]],
        "e2el": [r["e2e"] for r in ok],
    }
    out: dict[str, float] = {}
    for name, values in raw.items():
        ms = np.asarray(values) * 1000.0
        out[f"mean_{name}_ms"], out[f"median_{name}_ms"] = float(np.mean(ms)), float(np.median(ms))
        for p in (50, 90, 95, 99):
            out[f"p{p}_{name}_ms"] = float(np.percentile(ms, p))
    return out


@pytest.mark.slow
def test_distributed_run_on_separate_hosts_equals_the_pooled_computation(
    net: dict[str, Host], server: str, cluster: Any, scratch: Path
) -> None:
    settings = {
        "LOCUST_HOST": server,
        "LOCUST_EXPECT_WORKERS": "2",
        "LOCUST_USERS": "6",
        "LOCUST_SPAWN_RATE": "6",
        "LOCUST_RUN_TIME": "8s",
        "LOCUST_STOP_TIMEOUT": "10",  # requests in flight finish: the server's counts are comparable
        **LIGHT,
    }
    docs = _users_overlay(scratch / "mine", settings)
    run = cluster(docs)
    master = run.master()
    workers = run.workers()
    assert len(workers) == 2  # the worker Job's parallelism followed LOCUST_EXPECT_WORKERS
    assert master.wait(150) == 0, _clean(master)[-3000:]
    for worker in workers:  # told to quit by the master: their Job completes
        assert worker.wait(30) == 0, worker.output()[-3000:]
        _clean(worker)
    _clean(master)
    directory = run.run_dir()
    rows, summary = _rows(directory), json.loads((directory / "summary.json").read_text())
    ok = [r for r in rows if r["outcome"] == "ok"]
    assert len({r["worker"] for r in rows}) == 2  # both hosts' records reached the master
    assert len({r["request_id"] for r in rows}) == len(rows) == summary["completed"] + summary["failed"]
    assert summary["failed"] == 0 and len(ok) >= 20
    assert summary["client_stalled"] == sum(1 for r in ok if r["client_stall_s"])  # (0 on an idle machine)
    for key, value in _pooled(rows).items():
        assert summary[key] == pytest.approx(value, rel=1e-9, abs=1e-9), key
    counters = _server_counters(net, server)
    assert summary["total_output_tokens"] == sum(r["completion_tokens"] for r in ok)
    sent = summary["config"]["preflight_sent"]  # the master's preflight: one request the records omit
    assert sent["requests"] == 1
    generated = summary["total_output_tokens"] + sent["completion_tokens"]
    assert counters["vllm:generation_tokens_total"] == generated
    assert counters["vllm:prompt_tokens_total"] == sum(r["prompt_tokens"] for r in ok) + sent["prompt_tokens"]
    assert counters["vllm:request_success_total"] == len(ok) + sent["requests"]


@pytest.mark.slow
def test_slo_failure_is_exit_3_and_the_workers_still_finish(server: str, cluster: Any, scratch: Path) -> None:
    settings = {
        "LOCUST_HOST": server,
        "LOCUST_EXPECT_WORKERS": "1",
        "LOCUST_USERS": "2",
        "LOCUST_SPAWN_RATE": "2",
        "LOCUST_RUN_TIME": "3s",
        "LLM_LOCUST_SLO": "ttft_p95<=1ms",  # the simulator's TTFT is 30 ms
        **LIGHT,
    }
    run = cluster(_users_overlay(scratch / "mine", settings))
    master = run.master()
    (worker,) = run.workers()
    assert master.wait(120) == 3, _clean(master)[-3000:]
    assert worker.wait(30) == 0, worker.output()[-3000:]
    _clean(master)
    summary = json.loads((run.run_dir() / "summary.json").read_text())
    assert summary["completed"] > 0


def test_bad_input_is_exit_2_before_any_load(
    net: dict[str, Host], server: str, cluster: Any, scratch: Path
) -> None:
    settings = {"LOCUST_HOST": server, "LOCUST_EXPECT_WORKERS": "1", "LLM_LOCUST_MAX_TOKENS": "lots"}
    run = cluster(_users_overlay(scratch / "mine", settings))
    master = run.master()
    assert master.wait(60) == 2, master.output()[-3000:]
    err = master.stderr.read_text().strip().splitlines()
    assert len(err) == 1 and "--max-tokens" in err[0] and "lots" in err[0], err
    _clean(master)
    assert _server_counters(net, server)["vllm:request_success_total"] == 0


def test_the_pods_user_runs_a_checkout_under_a_private_folder(scratch: Path) -> None:
    """A clone under a 0700 folder (here: this checkout bind-mounted there, in a mount namespace of
    its own): the pods' user cannot reach it directly, and does through :class:`Exposed`."""
    need_mount_namespaces("bind mounts for the pods' user")
    private = Path(tempfile.mkdtemp(prefix="llm-locust-private-"))  # 0700, as a private home
    try:
        checkout = private / "checkout"
        checkout.mkdir()
        venv = Path(sys.prefix)
        venv = checkout / venv.relative_to(REPO) if venv.is_relative_to(REPO) else venv
        exposed = Exposed(scratch, repo=checkout, venv=venv)
        code = "import locust, llm_locust; print(llm_locust.__file__)"  # the venv's packages and ours
        pod = PodCommand(["-c", code], {"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        inside = private_mounts('mount --bind "$1" "$2" && shift 2 && exec "$@"', str(REPO), str(checkout))

        def run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [*inside, *argv], capture_output=True, text=True, timeout=60, env=env, cwd="/"
            )

        direct = run([*AS_NOBODY, str(exposed.python), "-c", code], dict(pod.env))
        assert "No module named 'locust'" in direct.stderr, direct  # the private folder is real
        through = exposed.command(pod)
        via = run(exposed.wrap([*AS_NOBODY, *through.argv]), through.env)
        assert via.returncode == 0, via.stderr[-2000:]
        assert via.stdout.strip() == str(scratch / "checkout" / "llm_locust" / "__init__.py")
    finally:
        shutil.rmtree(private, ignore_errors=True)


def test_without_root_it_is_skipped_with_the_reason_and_under_ci_it_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="cannot create network namespaces: not root"), hosts("a"):
        pass
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="required under CI: not root"), hosts("a"):
        pass
