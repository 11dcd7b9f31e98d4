"""Read the repository's ``Dockerfile`` the way ``docker build`` does, for tests that cannot run it.

``docker build`` needs a daemon this machine does not have. The tests read the Dockerfile
instead: its stages, their instructions (continuation lines joined), the global ``ARG``
defaults that ``FROM`` lines use, and the ``.ci/image-install`` steps its ``RUN`` lines call,
so a test can run those steps in the same order on this machine.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["DOCKERFILE", "INSTALL_SCRIPT", "Dockerfile", "Stage", "parse_dockerfile"]

REPO = Path(__file__).resolve().parent.parent
DOCKERFILE = REPO / "Dockerfile"
INSTALL_SCRIPT = "image-install"


@dataclass
class Stage:
    """One ``FROM`` and the instructions after it, as (KEYWORD, rest of the line)."""

    base: str
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [rest for kw, rest in self.instructions if kw == keyword]

    def args(self) -> dict[str, str]:
        """``ARG NAME=default`` of this stage."""
        return dict(a.split("=", 1) for a in self.all("ARG") if "=" in a)

    def env(self) -> dict[str, str]:
        """``ENV K=V K2=V2`` of this stage (the ``K=V`` form only)."""
        out: dict[str, str] = {}
        for line in self.all("ENV"):
            out.update(dict(token.split("=", 1) for token in shlex.split(line)))
        return out

    def install_steps(self) -> list[list[str]]:
        """The ``image-install STEP ARGS`` commands its ``RUN`` lines call, in order."""
        steps = []
        for run in self.all("RUN"):
            tokens = shlex.split(run)
            if INSTALL_SCRIPT in tokens:
                i = tokens.index(INSTALL_SCRIPT)
                steps.append(tokens[i + 1 : i + 4])
        return steps


@dataclass
class Dockerfile:
    global_args: dict[str, str]
    stages: list[Stage]

    def base_image(self, stage: Stage) -> str:
        """The stage's ``FROM`` image with global ``ARG`` defaults substituted."""
        image = stage.base.split()[0]
        return re.sub(r"\$\{(\w+)\}", lambda m: self.global_args[m.group(1)], image)


def parse_dockerfile(path: Path = DOCKERFILE) -> Dockerfile:
    text = re.sub(r"\\\n", " ", path.read_text(encoding="utf-8"))
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        keyword, _, rest = line.partition(" ")
        keyword, rest = keyword.upper(), " ".join(rest.split())
        if keyword == "FROM":
            stages.append(Stage(rest))
        elif stages:
            stages[-1].instructions.append((keyword, rest))
        elif keyword == "ARG" and "=" in rest:
            name, value = rest.split("=", 1)
            global_args[name] = value
    return Dockerfile(global_args, stages)
