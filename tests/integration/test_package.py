"""The package as users get it: the Dockerfile's rules, and the image's install steps run for real.

``docker build`` cannot run on this machine, so the slow test does what the Dockerfile does,
with the same script in the same order: copy the files its build stage copies, run
``.ci/image-install wheels`` (llm-locust's wheel and its dependencies' wheels), then
``.ci/image-install install`` into a fresh venv from those wheels alone. Then, from a
directory that knows nothing of the repository and with the image's environment, it starts
``llm-locust sim`` and runs ``llm-locust run`` and plain ``locust`` (the packaged locustfile
as the default ``-f``) against it.

Dependency wheels are kept in ``test-artifacts/wheels`` between runs (llm-locust's own wheel
is rebuilt every time), so only the first run downloads them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.dockerfile import INSTALL_SCRIPT, parse_dockerfile
from tests.locustproc import REPO, expect_exit
from tests.simproc import start_sim, stop_sim

WHEEL_CACHE = REPO / "test-artifacts" / "wheels"
VERSION = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)
VERSION_TAG = VERSION.group(1) if VERSION else ""


def _no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]


# --- the Dockerfile's rules (fast: read, not built) ---------------------------------------


def test_two_stages_on_one_pinned_slim_python() -> None:
    df = parse_dockerfile()
    assert len(df.stages) == 2
    bases = {df.base_image(s) for s in df.stages}
    (base,) = bases  # both stages on the same base, so the venv's python is the build's
    assert re.fullmatch(r"python:3\.\d+\.\d+-slim-\w+", base), base
    assert df.stages[0].base.endswith(" AS build")


def test_final_stage_has_no_source_and_no_build_tools() -> None:
    final = parse_dockerfile().stages[-1]
    assert final.all("COPY") == [] and final.all("ADD") == []  # wheels arrive by a bind mount
    runs = " ".join(final.all("RUN"))
    for tool in ("apt-get", "gcc", "build-essential", "pip wheel", "setup.py"):
        assert tool not in runs, tool
    assert "from=build,source=/wheels" in runs


def test_runs_as_a_numeric_non_root_user_with_the_packaged_locustfile() -> None:
    final = parse_dockerfile().stages[-1]
    (user,) = final.all("USER")
    uid = final.args()["UID"]
    assert user == "${UID}:${UID}" and int(uid) >= 1000  # numeric: Kubernetes can check runAsNonRoot
    ((step, _wheels, prefix),) = final.install_steps()
    assert step == "install"
    env = final.env()
    assert env["LOCUST_LOCUSTFILE"] == f"{prefix}/locustfile.py"
    assert env["PATH"].startswith(f"{prefix}/bin:")
    assert final.all("CMD") and "llm-locust" in final.all("CMD")[0]


def test_build_stage_copies_the_package_and_the_install_script() -> None:
    build = parse_dockerfile().stages[0]
    sources = [part for line in build.all("COPY") for part in line.split()[:-1]]
    assert {"pyproject.toml", "llm_locust", f".ci/{INSTALL_SCRIPT}"} <= set(sources)
    assert all((REPO / s).exists() for s in sources), sources
    assert [s[0] for s in build.install_steps()] == ["wheels"]


# --- the packaged locustfile and the example ---------------------------------------------

_DESCRIBE = """
import json, sys
import locust
from locust.util.load_locustfile import load_locustfile
out = {}
for path in sys.argv[1:]:
    users, shapes = load_locustfile(path)
    out[path] = {
        "users": {n: [b.__qualname__ for b in c.__mro__[1:3]] + sorted(vars(c)) for n, c in users.items()},
        "shapes": [[type(s).__name__, type(s).__mro__[1].__qualname__] for s in shapes],
    }
print(json.dumps(list(out.values())))
"""


def test_example_locustfile_equals_the_packaged_one() -> None:
    """``locustfiles/chat.py`` (the example to copy) loads as the same classes as the packaged one."""
    from llm_locust.cli import default_locustfile

    proc = subprocess.run(
        [sys.executable, "-c", _DESCRIBE, str(default_locustfile()), str(REPO / "locustfiles" / "chat.py")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=str(REPO),
    )
    expect_exit(proc, 0)
    packaged, example = json.loads(proc.stdout)
    assert packaged == example
    assert set(packaged["users"]) == {"ChatUser"} and packaged["shapes"] == [["LoadModel", "LLMShape"]]
    assert packaged["users"]["ChatUser"][:2] == ["LLMUser", "FastHttpUser"]


# --- the image's steps, run here ----------------------------------------------------------


def _build_context(dest: Path) -> dict[str, str]:
    """Copy what the build stage COPYs; returns the image paths mapped to local ones."""
    build = parse_dockerfile().stages[0]
    (workdir,) = build.all("WORKDIR")
    for line in build.all("COPY"):
        *sources, target = line.split()
        if sources == [f".ci/{INSTALL_SCRIPT}"]:
            continue  # the script runs from the repository
        assert not target.startswith("/"), line
        for source in sources:
            src, out = REPO / source, dest / target
            if src.is_dir():
                shutil.copytree(src, out, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(src, out / src.name if target.endswith("/") else out)
    return {workdir: str(dest)}


def _run_install_steps(tmp: Path) -> Path:
    context = tmp / "context"
    context.mkdir()
    paths = _build_context(context)
    final_steps = parse_dockerfile().stages[-1].install_steps()
    prefix = final_steps[0][2]
    paths.update({"/wheels": str(WHEEL_CACHE), prefix: str(tmp / "opt")})
    script = REPO / ".ci" / INSTALL_SCRIPT
    env = {**os.environ, "PYTHON": sys.executable}
    env.pop("PYTHONPATH", None)
    for stage in parse_dockerfile().stages:
        for step, *args in stage.install_steps():
            local = [paths.get(a, a) for a in args]
            proc = subprocess.run(
                ["bash", str(script), step, *local],
                capture_output=True,
                text=True,
                timeout=900,
                env=env,
                cwd=str(tmp),
            )
            assert proc.returncode == 0, f"{step}: {proc.stderr[-3000:]}"
    return tmp / "opt"


@dataclass
class Image:
    prefix: Path  # the venv, where the image has /opt/llm-locust
    env: dict[str, str]  # the image's ENV, paths mapped
    cwd: Path  # a directory that knows nothing of the repository
    wheel: Path  # llm-locust's wheel, built from this source


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Image:
    tmp = tmp_path_factory.mktemp("image")
    prefix = _run_install_steps(tmp)
    final = parse_dockerfile().stages[-1]
    image_prefix = final.install_steps()[0][2]
    env = {
        k: v.replace(image_prefix, str(prefix)).replace("${PATH}", "/usr/bin:/bin")
        for k, v in final.env().items()
    }
    home = tmp / "home"
    home.mkdir()
    env.update(HOME=str(home), LANG="C.UTF-8")
    (wheel,) = WHEEL_CACHE.glob("llm_locust-*.whl")
    return Image(prefix, env, home, wheel)


def _cmd(
    env: dict[str, str], cwd: Path, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, env=env, cwd=str(cwd))


@pytest.mark.slow
def test_wheel_holds_the_packaged_locustfile_and_data(image: Image) -> None:
    assert image.wheel.name == f"llm_locust-{VERSION_TAG}-py3-none-any.whl"
    names = set(zipfile.ZipFile(image.wheel).namelist())
    assert "llm_locust/locustfile.py" in names
    assert any(n.startswith("llm_locust/workload/profiles/") for n in names)
    assert any(n.startswith("llm_locust/dashboards/") for n in names)
    assert not any(n.startswith(("tests/", "locustfiles/", "benchmarks/")) for n in names)


@pytest.mark.slow
def test_installed_package_is_self_contained(image: Image) -> None:
    prefix, env, cwd = image.prefix, image.env, image.cwd
    where = _cmd(
        env,
        cwd,
        "python",
        "-c",
        "import llm_locust, importlib.util as u; "
        "print(llm_locust.__file__); print(u.find_spec('setuptools'), u.find_spec('wheel'))",
    )
    assert where.returncode == 0, where.stderr
    path, build_tools = where.stdout.splitlines()
    assert Path(path).is_relative_to(prefix) and not Path(path).is_relative_to(REPO)
    assert build_tools == "None None"
    assert Path(env["LOCUST_LOCUSTFILE"]).resolve() == Path(path).parent / "locustfile.py"
    for args in (["llm-locust", "demo", "--help"], ["llm-locust", "run", "--help"], ["locust", "--version"]):
        proc = _cmd(env, cwd, *args)
        assert proc.returncode == 0, (args, proc.stderr[-2000:])
        _no_traceback(proc)


@pytest.mark.slow
def test_installed_run_against_installed_simulator(image: Image) -> None:
    env, cwd = image.env, image.cwd
    sim, url = start_sim("--ttft-ms", "20", "--tpot-ms", "2", command=["llm-locust", "sim"], env=env, cwd=cwd)
    light = ["--headless", "-u", "2", "-r", "2", "-t", "3s", "--prompt-tokens", "32", "--max-tokens", "8"]
    pip_user = {k: v for k, v in env.items() if k != "LOCUST_LOCUSTFILE"}  # pip install, no image env
    try:
        runs = {
            "llm-locust run": _cmd(
                pip_user, cwd, "llm-locust", "run", "--host", url, *light, "--results-dir", "r1"
            ),
            "locust (image env)": _cmd(env, cwd, "locust", "--host", url, *light, "--results-dir", "r2"),
        }
    finally:
        stop_sim(sim)
    for (name, proc), results in zip(runs.items(), ("r1", "r2"), strict=True):
        assert proc.returncode == 0, (name, proc.stderr[-3000:])
        _no_traceback(proc)
        summary = json.loads((cwd / results / "summary.json").read_text())
        rows = (cwd / results / "requests.jsonl").read_text().splitlines()
        assert summary["completed"] == len(rows) > 0 and summary["failed"] == 0, name


def test_the_license_is_an_spdx_expression() -> None:
    """Issue 27 §4: ``license = { text = ... }`` made setuptools print a deprecation warning on
    every install and build ("`project.license` as a TOML table is deprecated"); an SPDX string
    needs setuptools 77 or later to build."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert project["project"]["license"] == "Apache-2.0"
    (setuptools,) = [r for r in project["build-system"]["requires"] if r.startswith("setuptools")]
    assert setuptools == "setuptools>=77"
