"""GPU memory and utilisation from an NVIDIA DCGM exporter's metrics.

DCGM's exporter (``dcgm-exporter``, usually ``:9400/metrics``) reports per GPU (one label set
each: ``gpu``, ``UUID``, ``modelName``, ``Hostname`` ...):

- ``DCGM_FI_DEV_FB_USED`` and ``DCGM_FI_DEV_FB_FREE``: frame-buffer memory used and free, MiB;
- ``DCGM_FI_DEV_GPU_UTIL``: utilisation, percent.

One scrape becomes four gauges, beside the engine's KV-cache usage:

- ``gpu_mem``: the fullest GPU's used / (used + free), a ratio 0..1 (an SLO bound such as
  ``gpu_mem_max<=95%`` is about the GPU that runs out first);
- ``gpu_mem_used`` and ``gpu_mem_total``: bytes, summed over the GPUs;
- ``gpu_util``: the busiest GPU's utilisation, a ratio 0..1.

A GPU whose used and free values do not both appear is left out of the memory gauges.

Pure module: no network.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["DCGM_FB_FREE", "DCGM_FB_USED", "DCGM_GPU_UTIL", "DCGM_NAMES", "GPU_GAUGES", "gpu_values"]

DCGM_FB_USED = "DCGM_FI_DEV_FB_USED"
DCGM_FB_FREE = "DCGM_FI_DEV_FB_FREE"
DCGM_GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
DCGM_NAMES = (DCGM_FB_USED, DCGM_FB_FREE, DCGM_GPU_UTIL)
#: Our gauge -> the DCGM samples it is computed from (for messages).
GPU_GAUGES = {
    "gpu_mem": (DCGM_FB_USED, DCGM_FB_FREE),
    "gpu_mem_used": (DCGM_FB_USED,),
    "gpu_mem_total": (DCGM_FB_USED, DCGM_FB_FREE),
    "gpu_util": (DCGM_GPU_UTIL,),
}
_MIB = 1024 * 1024


def gpu_values(samples: Iterable[tuple[str, Mapping[str, str], float]]) -> dict[str, float]:
    """The GPU gauges of one scrape's ``(name, labels, value)`` samples (``{}``: no DCGM data)."""
    used: dict[frozenset[tuple[str, str]], float] = {}
    free: dict[frozenset[tuple[str, str]], float] = {}
    util: list[float] = []
    for name, labels, value in samples:
        if name == DCGM_FB_USED:
            used[_gpu(labels)] = value
        elif name == DCGM_FB_FREE:
            free[_gpu(labels)] = value
        elif name == DCGM_GPU_UTIL:
            util.append(value / 100.0)
    out: dict[str, float] = {}
    both = [g for g in used if g in free and used[g] + free[g] > 0]
    if both:
        out["gpu_mem"] = max(used[g] / (used[g] + free[g]) for g in both)
        out["gpu_mem_used"] = sum(used[g] for g in both) * _MIB
        out["gpu_mem_total"] = sum(used[g] + free[g] for g in both) * _MIB
    if util:
        out["gpu_util"] = max(util)
    return out


def _gpu(labels: Mapping[str, str]) -> frozenset[tuple[str, str]]:
    """One GPU's identity: its label set (DCGM gives used and free the same labels)."""
    return frozenset(labels.items())
