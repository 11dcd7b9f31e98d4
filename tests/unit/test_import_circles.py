"""No import circle, the type-only imports included (docs/architecture.md).

``lint-imports`` (make lint, make test) reads pyproject.toml, whose ``exclude_type_checking_imports``
leaves out the imports under ``if TYPE_CHECKING:`` for every contract (a pure module may name a
network module's type without importing it at run time). Its acyclic contract so sees only
the imports made at run time; this test runs the same contract with the type-only imports in,
so a circle such as extension -> stopping -> extension (type-only) fails here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

CONFIG = """\
[tool.importlinter]
root_package = "{package}"
exclude_type_checking_imports = false

[[tool.importlinter.contracts]]
name = "No import circle, type-only imports included"
type = "acyclic_siblings"
ancestors = ["{package}"]
"""


def _lint(package: str, where: Path, config_dir: Path) -> subprocess.CompletedProcess[str]:
    config = config_dir / "circles.toml"
    config.write_text(CONFIG.format(package=package), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(where)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(config), "--no-cache"],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_no_circle_with_type_only_imports(tmp_path: Path) -> None:
    done = _lint("llm_locust", ROOT, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 kept, 0 broken" in done.stdout, done.stdout


def test_a_type_only_circle_is_found(tmp_path: Path) -> None:
    # the check itself: a package whose only circle goes through an `if TYPE_CHECKING:` import
    package = tmp_path / "circled"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "hub.py").write_text("from circled import helper\n\nclass Hub:\n    pass\n")
    (package / "helper.py").write_text(
        "from __future__ import annotations\n\nfrom typing import TYPE_CHECKING\n\n"
        "if TYPE_CHECKING:\n    from circled.hub import Hub\n\n\ndef use(hub: Hub) -> None:\n    pass\n"
    )
    done = _lint("circled", tmp_path, tmp_path)
    assert done.returncode != 0, done.stdout
    assert ".helper -> .hub" in done.stdout or ".hub -> .helper" in done.stdout, done.stdout
