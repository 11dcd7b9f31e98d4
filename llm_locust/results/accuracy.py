"""How close the run came to the lengths it asked for.

Input: the relative error ``|actual - target| / target`` of ``prompt_tokens`` (the
server's ``usage``) against ``target_input_tokens``. Note that a chat template adds
tokens the workload does not write, so against a real chat endpoint part of the error is
the template's. Output: requested ``target_output_tokens`` against ``completion_tokens``.
Pure function over :class:`~llm_locust.record.RequestRecord` (or anything with those
attributes), for the run summary.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from llm_locust.record import RequestRecord

__all__ = ["input_length_error", "relative_errors"]


def relative_errors(pairs: Iterable[tuple[int, int]]) -> np.ndarray:
    """``|actual - target| / target`` for ``(actual, target)`` pairs with ``target > 0``."""
    arr = np.array([(a, t) for a, t in pairs if t], dtype=float).reshape(-1, 2)
    return np.abs(arr[:, 0] - arr[:, 1]) / arr[:, 1]


def _summary(err: np.ndarray) -> dict[str, Any]:
    if not len(err):
        return {"count": 0, "mean": None, "p99": None, "max": None, "exact_fraction": None}
    return {
        "count": len(err),
        "mean": float(err.mean()),
        "p99": float(np.percentile(err, 99)),
        "max": float(err.max()),
        "exact_fraction": float((err == 0).mean()),
    }


def input_length_error(records: Iterable[RequestRecord]) -> dict[str, Any]:
    """Input-length error and requested-vs-actual output tokens over ``records``."""
    recs = list(records)
    inp = [
        (r.prompt_tokens, r.target_input_tokens)
        for r in recs
        if r.prompt_tokens is not None and r.target_input_tokens
    ]
    out = [
        (r.completion_tokens, r.target_output_tokens)
        for r in recs
        if r.completion_tokens is not None and r.target_output_tokens
    ]
    out_err = relative_errors(out)
    result: dict[str, Any] = {"input": _summary(relative_errors(inp))}
    result["output"] = {
        **_summary(out_err),
        "requested_mean": float(np.mean([t for _, t in out])) if out else None,
        "actual_mean": float(np.mean([a for a, _ in out])) if out else None,
        "short_fraction": float(np.mean([a < t for a, t in out])) if out else None,
    }
    return result
