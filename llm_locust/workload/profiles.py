"""Built-in length profiles derived from public production traces.

Each profile file in ``profiles/`` is a joint quantile table made by
:mod:`profile_builder` (``llm-locust workload build-profiles TRACES_DIR``): the trace's
requests sorted by input length and cut into equal-count bins, with per-bin quantiles of
input, output (and, for Mooncake, the reused prefix in 512-token blocks). Drawing a bin
uniformly and then each column by inverse-CDF interpolation inside it reproduces both
marginals and the input/output relation at the resolution of a bin; within one bin input
and output are independent. :meth:`ProfileLengths.quantiles` gives the table's own
quantiles without sampling noise. Sources, licences and citations: ``profiles/NOTICE.md``.

- ``chat`` (default): Azure LLM inference 2023, conversation trace (CC-BY-4.0, Splitwise).
- ``code``: Azure LLM inference 2023, code trace (CC-BY-4.0, Splitwise).
- ``long-context``: Mooncake FAST'25 conversation trace (Apache-2.0), long inputs with
  prefix-block reuse: ``reused_blocks`` leading 512-token blocks are shared.
- ``sharegpt``: ShareGPT-8K turn statistics from etalon (Apache-2.0; ShareGPT caveat).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from llm_locust.workload.distributions import LengthSample

__all__ = ["PROFILES", "PROFILE_DIR", "ProfileLengths", "load_profile"]

PROFILE_DIR = Path(__file__).resolve().parent / "profiles"
PROFILES = ("chat", "code", "long-context", "sharegpt")


class UnknownProfile(KeyError):
    """Raised for a profile name that is not built in."""


@dataclass(frozen=True)
class ProfileLengths:
    """A joint quantile table; :meth:`draw` is the per-request sampler."""

    name: str
    levels: np.ndarray
    input_q: np.ndarray  # (bins, levels)
    output_q: np.ndarray
    reused_q: np.ndarray | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def draw(self, rng: np.random.Generator) -> LengthSample:
        b = int(rng.integers(len(self.input_q)))
        u = rng.random(3) * 100.0
        inp = max(1, round(np.interp(u[0], self.levels, self.input_q[b])))
        out = max(1, round(np.interp(u[1], self.levels, self.output_q[b])))
        reused = 0
        if self.reused_q is not None:
            reused = round(np.interp(u[2], self.levels, self.reused_q[b]))
        return LengthSample(inp, out, reused)

    def quantiles(self, column: str, levels: Sequence[float], points: int = 20_001) -> np.ndarray:
        """The table's quantiles of ``column`` (``input``/``output``/``reused``) at ``levels`` (%).

        Exact up to the grid: every bin's inverse CDF at ``points`` evenly spaced
        probabilities, rounded as :meth:`draw` rounds, pooled; no sampling noise.
        """
        table = {"input": self.input_q, "output": self.output_q, "reused": self.reused_q}[column]
        if table is None:
            raise ValueError(f"profile {self.name} has no {column} column")
        u = (np.arange(points) + 0.5) / points * 100.0
        values = np.round(np.concatenate([np.interp(u, self.levels, row) for row in table]))
        return np.percentile(values if column == "reused" else np.maximum(values, 1), list(levels))

    @property
    def prefix(self) -> dict[str, Any] | None:
        return self.meta.get("prefix")

    def describe(self) -> dict[str, Any]:
        keys = ("description", "license", "citation", "rows")
        return {"name": self.name, **{k: self.meta[k] for k in keys if k in self.meta}}


@cache
def load_profile(name: str) -> ProfileLengths:
    """Load a built-in profile by name; raise :class:`UnknownProfile` if there is none."""
    if name not in PROFILES:
        raise UnknownProfile(f"unknown profile {name!r} (built in: {', '.join(PROFILES)})")
    data = json.loads((PROFILE_DIR / f"{name}.json").read_text())
    bins = data["bins"]
    reused = np.array([b["reused_blocks"] for b in bins]) if "reused_blocks" in bins[0] else None
    meta = {k: v for k, v in data.items() if k not in ("bins", "levels")}
    return ProfileLengths(
        name=name,
        levels=np.array(data["levels"], dtype=float),
        input_q=np.array([b["input"] for b in bins], dtype=float),
        output_q=np.array([b["output"] for b in bins], dtype=float),
        reused_q=reused,
        meta=meta,
    )
