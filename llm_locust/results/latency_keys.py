"""The flat latency keys of ``summary.json`` and the one :class:`Latency` each gathers into.

The latency keys stay ``vllm bench serve``'s flat ones (``mean_ttft_ms``, ``p95_ttft_ms``,
``p99.9_ttft_ms`` for ``--percentiles 99.9``): real users' scripts read them. A model holds each
latency as one :class:`Latency` (mean, median, std and a ``{q: ms}`` map of its percentiles);
this module is the codec between the two: :func:`gather_latencies` folds a file's flat keys
into one latency each, :meth:`Latency.flat` writes them back, :func:`file_key` names a model's
error location by the file's key. :mod:`llm_locust.results.summary_model` uses it.

Pure module: no Locust, no network.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["LATENCY_KEY", "LATENCY_NAMES", "Latency", "file_key", "gather_latencies", "latency_name"]

#: Every latency the summary states, by its name in the keys (``p95_<name>_ms``).
LATENCY_NAMES = (
    "ttft",
    "tpot",
    "itl",
    "e2el",
    "ttft_visible",
    "ttft_burst",
    "ttft_base",
    "ttft_cache_hit",
    "ttft_cache_miss",
    "time_to_first_tool_call",
    "time_to_tool_args_complete",
    "ttft_intended",
    "e2el_intended",
)
_NAMES = "|".join(sorted(LATENCY_NAMES, key=len, reverse=True))
#: A flat latency key: ``mean_ttft_ms``, ``median_ttft_ms``, ``std_ttft_ms``, ``p99.9_ttft_ms``.
LATENCY_KEY = re.compile(rf"^(?:(mean|median|std)|p(\d+(?:\.\d+)?))_({_NAMES})_ms$")


class Latency(BaseModel):
    """One latency's statistics in milliseconds; ``None``: no value to compute them from."""

    model_config = ConfigDict(extra="forbid")

    mean: float | None = None
    median: float | None = None
    std: float | None = None
    percentiles: dict[float, float | None] = Field(default_factory=dict)

    def p(self, q: float) -> float | None:
        """The ``q``-th percentile (ms); ``None`` when not computed or no data."""
        return self.percentiles.get(float(q))

    def flat(self, name: str) -> dict[str, float | None]:
        """The vLLM keys of this latency (``mean_<name>_ms``...), in the order they are written."""
        stated = self.model_fields_set  # a file read back has the keys it had, no more
        out = {
            f"{stat}_{name}_ms": getattr(self, stat) for stat in ("mean", "median", "std") if stat in stated
        }
        out.update({f"p{q:g}_{name}_ms": v for q, v in self.percentiles.items()})
        return out


def gather_latencies(data: Mapping[object, object]) -> dict[object, object]:
    """The flat latency keys of ``data`` folded into one ``{name: Latency fields}`` each (the
    model validates what they hold)."""
    out: dict[object, object] = {}
    found: dict[str, dict[str, object]] = {}
    percentiles: dict[str, dict[float, object]] = {}
    for key, value in data.items():
        match = LATENCY_KEY.match(key) if isinstance(key, str) else None
        if match is None:
            out[key] = value
            continue
        stat, q, name = match.groups()
        if name not in found:
            percentiles[name] = {}
            found[name] = {"percentiles": percentiles[name]}
            out[name] = found[name]  # where its first key was: the order is kept
        if stat is not None:
            found[name][stat] = value
        else:
            percentiles[name][float(q)] = value
    return out


def file_key(loc: Sequence[int | str | float]) -> str:
    """Where a validation error is, in the file's keys: ``stages.0.p95_ttft_ms``, not the model's
    ``stages.0.ttft.percentiles.95.0``."""
    out: list[str] = []
    parts = list(loc)
    while parts:
        part = parts.pop(0)
        if part in LATENCY_NAMES and parts and parts[0] in ("mean", "median", "std"):
            out.append(f"{parts.pop(0)}_{part}_ms")
        elif part in LATENCY_NAMES and len(parts) >= 2 and parts[0] == "percentiles":
            out.append(f"p{float(parts[1]):g}_{part}_ms")
            del parts[:2]
        else:
            out.append(str(part))
    return ".".join(out)


def latency_name(key: str) -> str | None:
    match = LATENCY_KEY.match(key)
    return None if match is None else match.group(3)
