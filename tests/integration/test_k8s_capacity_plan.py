"""A capacity comparison on Kubernetes: a Job per plan (``k8s/overlays/capacity-plan``).

Each plan of the example plan file is turned into the overlay's ``plan.env`` by
``llm-locust capacity --print-env PLAN`` (a real CLI process), rendered by a real
``kubectl kustomize`` and validated offline against the Kubernetes schemas of every version from
1.29 on (strict), as the other overlays are. Then what a schema cannot see: the master Job's
environment, read by llm-locust's own option parser, is the configuration a local comparison
runs the plan with (the same target, SLO, search, demand and workload), the headless overlay's
fixed users and run time are gone (the search decides them), and the worker count is stated once.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from llm_locust.config.build import build_config
from llm_locust.config.plans import load_plan_file
from llm_locust.config.register import register
from tests.integration.test_k8s_manifests import validate_objects
from tests.k8sproc import K8S, Doc, by_key, containers, render
from tests.locustproc import llm_locust_cli

OVERLAY = K8S / "overlays" / "capacity-plan"
PLANS = K8S.parent / "docs" / "examples" / "plans-k8s.yaml"
NAMES = [plan.name for plan in load_plan_file(PLANS).plans]


def _print_env(name: str) -> str:
    res = llm_locust_cli("capacity", str(PLANS), "--results-dir", "cap", "--print-env", name)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    return res.stdout


def _rendered(tmp: Path, name: str) -> list[Doc]:
    shutil.copytree(K8S, tmp / "k8s")
    (tmp / "k8s" / "overlays" / "capacity-plan" / "plan.env").write_text(_print_env(name))
    return render(tmp / "k8s" / "overlays" / "capacity-plan")


def _env(docs: list[Doc]) -> dict[str, str]:
    (cm,) = [
        d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("llm-locust-env")
    ]
    return cm["data"]


def _config(args: list[str], environ: dict[str, str]) -> dict[str, Any]:
    """llm-locust's configuration from ``args`` and ``environ`` (Locust's own flags aside)."""
    parser = argparse.ArgumentParser()
    register(parser, environ=environ)
    values, _ = parser.parse_known_args(args)
    host = args[args.index("--host") + 1] if "--host" in args else environ["LOCUST_HOST"]
    config = build_config({**vars(values), "host": host}, environ={}).model_dump(mode="json")
    config["results"].pop("results_dir")  # the Job's: /results/<pod>
    config["results"].pop("overwrite")
    config.pop("export")  # the cluster's exporter (the base's port and bind) for the ServiceMonitor
    return config


def test_the_shipped_plan_env_is_what_print_env_writes() -> None:
    assert (OVERLAY / "plan.env").read_text() == _print_env(NAMES[0])


@pytest.mark.parametrize("name", NAMES)
def test_each_plan_s_job_passes_the_kubernetes_schemas(tmp_path: Path, name: str) -> None:
    validate_objects(_rendered(tmp_path, name))


@pytest.mark.parametrize("name", NAMES)
def test_the_job_runs_the_search_a_local_comparison_runs(tmp_path: Path, name: str) -> None:
    from llm_locust.commands.capacity.plan_run import run_args

    docs = _rendered(tmp_path, name)
    env = _env(docs)
    file = load_plan_file(PLANS)
    (plan,) = [p for p in file.plans if p.name == name]
    local = run_args(file, plan, tmp_path / name, 1.0)
    assert _config([], env) == _config(local, {})  # the Job's settings are the local run's
    assert env["LOCUST_HOST"] == plan.endpoints[0] and env["LLM_LOCUST_SEARCH"] == file.search.kind
    assert not {"LOCUST_USERS", "LOCUST_SPAWN_RATE", "LOCUST_RUN_TIME"} & set(env)  # the search decides
    jobs = by_key(docs)
    master, workers = jobs[("Job", "llm-locust-master")], jobs[("Job", "llm-locust-worker")]
    (container,) = containers(master)
    assert "--headless" in container["args"]
    results = container["args"][container["args"].index("--results-dir") + 1]
    assert results == "/results/$(CAPACITY_PLAN)" and env["CAPACITY_PLAN"] == name  # /results/<plan>
    assert (
        workers["spec"]["parallelism"] == workers["spec"]["completions"] == int(env["LOCUST_EXPECT_WORKERS"])
    )


def test_print_env_of_an_unknown_plan_is_one_line_and_exit_2() -> None:
    res = llm_locust_cli("capacity", str(PLANS), "--results-dir", "cap", "--print-env", "nope")
    assert res.returncode == 2 and res.stdout == "" and res.stderr.count("\n") == 1
    assert res.stderr.startswith("llm-locust capacity: error: --print-env nope: no plan of that name")
    assert yaml.safe_load(PLANS.read_text())  # the example stays a valid plan file
