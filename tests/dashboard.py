"""Test helpers over the metric catalog: which catalog entry a sample name belongs to, and the
PromQL the packaged Grafana dashboard reads (the tests check both against the catalog).

Only tests use these; the product needs the catalog itself (:mod:`llm_locust.live.catalog`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from llm_locust.live.catalog import CATALOG_BY_NAME, MetricSpec

__all__ = ["DASHBOARD_PATH", "dashboard_expressions", "expression_metric_names", "spec_for_series"]

_HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def spec_for_series(series: str) -> MetricSpec | None:
    """The catalog entry a sample name belongs to (``X_bucket`` -> ``X``), if any."""
    spec = CATALOG_BY_NAME.get(series)
    if spec is not None:
        return spec
    for suffix in _HISTOGRAM_SUFFIXES:
        if series.endswith(suffix):
            spec = CATALOG_BY_NAME.get(series[: -len(suffix)])
            if spec is not None and spec.kind == "histogram":
                return spec
    return None


# --- Dashboard ------------------------------------------------------------------

DASHBOARD_PATH = Path(__file__).resolve().parent.parent / "llm_locust" / "dashboards" / "llm-locust.json"
_METRIC_NAME = re.compile(r"(?<![A-Za-z0-9_:])llm_locust_[A-Za-z0-9_:]*")


def expression_metric_names(expr: str) -> set[str]:
    """Sample names starting with ``llm_locust_`` that a PromQL expression reads."""
    return set(_METRIC_NAME.findall(expr))


def dashboard_expressions(
    path: str | Path | None = None, *, rate_interval: str = "30s", run_id: str = ".*"
) -> list[str]:
    """Every panel target's PromQL in the dashboard, with Grafana variables filled in.

    ``$__rate_interval`` (and ``$__interval``) become ``rate_interval``; ``$run_id``
    becomes ``run_id`` (a regex: the dashboard matches it with ``=~``).
    """
    dashboard = json.loads(Path(path or DASHBOARD_PATH).read_text(encoding="utf-8"))
    return [_substitute(expr, rate_interval, run_id) for expr in _panel_exprs(dashboard)]


def _panel_exprs(node: dict[str, Any]) -> list[str]:
    exprs: list[str] = []
    for panel in node.get("panels", []):
        exprs.extend(t["expr"] for t in panel.get("targets", []) if t.get("expr"))
        exprs.extend(_panel_exprs(panel))  # rows nest their panels
    return exprs


def _substitute(expr: str, rate_interval: str, run_id: str) -> str:
    for var, value in (("__rate_interval", rate_interval), ("__interval", rate_interval), ("run_id", run_id)):
        expr = expr.replace("${" + var + "}", value)
        expr = re.sub(r"\$" + var + r"(?![A-Za-z0-9_])", lambda _m, v=value: v, expr)
    return expr
