"""How close the run came to the lengths it asked for.

Input: the relative error ``|actual - target| / target`` of ``prompt_tokens`` (the
server's ``usage``) against ``target_input_tokens``. Note that a chat template adds
tokens the workload does not write, so against a real chat endpoint part of the error is
the template's. Output: requested ``target_output_tokens`` against ``completion_tokens``.
Pure function over the records' columns (:mod:`llm_locust.results.columns`), for the run
summary.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from llm_locust.results.columns import Columns, Part
from llm_locust.results.stats import percentile
from llm_locust.results.summary import part_of

__all__ = ["input_length_error", "relative_errors"]


def relative_errors(actual: np.ndarray, target: np.ndarray) -> np.ndarray:
    """``|actual - target| / target`` where both are known and ``target > 0``."""
    known = ~np.isnan(actual) & ~np.isnan(target) & (np.nan_to_num(target) != 0)
    errors: np.ndarray = np.abs(actual[known] - target[known]) / target[known]
    return errors


def _summary(err: np.ndarray) -> dict[str, Any]:
    if not len(err):
        return {"count": 0, "mean": None, "p99": None, "max": None, "exact_fraction": None}
    return {
        "count": len(err),
        "mean": float(err.mean()),
        "p99": percentile(err, 99),
        "max": float(err.max()),
        "exact_fraction": float((err == 0).mean()),
    }


def input_length_error(rows: Part | Columns | Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Input-length error and requested-vs-actual output tokens over ``rows``."""
    part = part_of(rows)
    cols, mask = part.cols, part.mask
    actual, target = cols.completion[mask], cols.target_out[mask]
    known = ~np.isnan(actual) & ~np.isnan(target) & (np.nan_to_num(target) != 0)
    out_a, out_t = actual[known], target[known]
    result: dict[str, Any] = {"input": _summary(relative_errors(cols.prompt[mask], cols.target_in[mask]))}
    result["output"] = {
        **_summary(relative_errors(actual, target)),
        "requested_mean": float(out_t.mean()) if out_t.size else None,
        "actual_mean": float(out_a.mean()) if out_a.size else None,
        "short_fraction": float((out_a < out_t).mean()) if out_t.size else None,
    }
    return result
