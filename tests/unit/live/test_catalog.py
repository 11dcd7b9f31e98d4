"""The metric catalog and the Grafana dashboard that reads it."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from llm_locust.live import catalog as metrics
from llm_locust.live.catalog import CATALOG, CATALOG_BY_NAME, buckets_with_thresholds
from tests.dashboard import DASHBOARD_PATH, dashboard_expressions, expression_metric_names, spec_for_series

#: Our metric -> the vLLM metric(s) of the same meaning, current name first, then
#: older names. For Grafana overlays of client-side vs server-side views (the
#: histograms share bucket edges). Caveats: server TTFT excludes network and
#: HTTP/SSE overhead; vLLM's TPOT histogram is per request (like ours), its ITL per
#: token; before 0.11, vllm:time_per_output_token_seconds was per token (ITL-like);
#: vllm:kv_cache_usage_perc is already a 0..1 ratio despite its name.
VLLM_EQUIVALENTS: dict[str, tuple[str, ...]] = {
    metrics.TIME_TO_FIRST_TOKEN.name: ("vllm:time_to_first_token_seconds",),
    metrics.TIME_PER_OUTPUT_TOKEN.name: ("vllm:request_time_per_output_token_seconds",),
    metrics.INTER_TOKEN_LATENCY.name: (
        "vllm:inter_token_latency_seconds",
        "vllm:time_per_output_token_seconds",
    ),
    metrics.E2E_LATENCY.name: ("vllm:e2e_request_latency_seconds",),
    metrics.PROMPT_TOKENS.name: ("vllm:prompt_tokens_total",),
    metrics.GENERATION_TOKENS.name: ("vllm:generation_tokens_total",),
    metrics.CACHED_PROMPT_TOKENS.name: ("vllm:prefix_cache_hits_total",),
    metrics.SERVER_NUM_REQUESTS_RUNNING.name: ("vllm:num_requests_running",),
    metrics.SERVER_NUM_REQUESTS_WAITING.name: ("vllm:num_requests_waiting",),
    metrics.SERVER_KV_CACHE_USAGE.name: ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
}
#: Histograms with no vLLM equivalent: vLLM's TTFT is the first token of any kind.
CLIENT_ONLY = (
    metrics.TIME_TO_FIRST_VISIBLE_TOKEN.name,
    metrics.TIME_TO_FIRST_TOOL_CALL.name,  # vLLM has no tool-call timing
    metrics.TIME_TO_TOOL_ARGS_COMPLETE.name,
)

_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")

# vLLM's server-side edges (vllm/v1/metrics/loggers.py, 0.11/0.12), restated here
# independently of the module so a typo in either shows up.
VLLM_TTFT = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0]
VLLM_TTFT += [20.0, 40.0, 80.0, 160.0, 640.0, 2560.0]
VLLM_ITL = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0]
VLLM_ITL += [20.0, 40.0, 80.0]
VLLM_E2E = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0]
VLLM_E2E += [240.0, 480.0, 960.0, 1920.0, 7680.0]


def test_catalog_has_every_required_metric() -> None:
    required = {
        "counter": {"requests_total", "prompt_tokens_total", "generation_tokens_total"}
        | {"slo_good_requests_total", "slo_good_generation_tokens_total"}
        | {"reasoning_tokens_total", "prompt_cached_tokens_total"},
        "histogram": {"time_to_first_token_seconds", "time_per_output_token_seconds"}
        | {"time_to_first_visible_token_seconds"}
        | {"time_to_first_tool_call_seconds", "time_to_tool_args_complete_seconds"}
        | {"inter_token_latency_seconds", "e2e_request_latency_seconds"},
        "gauge": {"users", "requests_in_flight", "workers", "stage", "target_request_rate", "run_info"}
        | {"client_saturated", "master_backlog_rows", "master_ingest_lag_seconds"}
        | {"server_num_requests_running", "server_num_requests_waiting", "server_kv_cache_usage"}
        | {"server_gpu_memory_usage", "server_gpu_memory_used_bytes", "server_gpu_utilization"},
    }
    for kind, names in required.items():
        assert {s.name for s in CATALOG if s.kind == kind} == {"llm_locust_" + n for n in names}
    assert len(CATALOG_BY_NAME) == len(CATALOG)
    assert CATALOG_BY_NAME["llm_locust_requests_total"].labels == ("outcome",)
    assert CATALOG_BY_NAME["llm_locust_run_info"].labels == ("run_id", "model", "target")
    assert set(metrics.__all__) <= set(dir(metrics))


@pytest.mark.parametrize("spec", CATALOG, ids=lambda s: s.name)
def test_names_follow_prometheus_conventions(spec: metrics.MetricSpec) -> None:
    assert _NAME.match(spec.name) and spec.name.startswith("llm_locust_")
    assert spec.help.strip()
    assert all(_LABEL.match(label) and not label.startswith("__") for label in spec.labels)
    assert spec.name.endswith("_total") == (spec.kind == "counter")
    for banned in ("_ms", "milli", "percent", "perc"):
        assert banned not in spec.name
    if spec.kind == "histogram":
        assert spec.name.endswith("_seconds") and spec.unit == "seconds"
        assert "le" not in spec.labels
        assert spec.buckets and list(spec.buckets) == sorted(set(spec.buckets))
        assert all(math.isfinite(b) and b > 0 for b in spec.buckets)
    else:
        assert spec.buckets is None
    if spec.unit == "ratio":
        assert not spec.name.endswith("_seconds")


def test_family_and_series_names() -> None:
    assert metrics.REQUESTS.family == "llm_locust_requests"
    assert metrics.USERS.family == "llm_locust_users"
    assert metrics.E2E_LATENCY.series_names == tuple(
        "llm_locust_e2e_request_latency_seconds" + s for s in ("_bucket", "_sum", "_count")
    )
    assert spec_for_series("llm_locust_e2e_request_latency_seconds_bucket") is metrics.E2E_LATENCY
    assert spec_for_series("llm_locust_requests_total") is metrics.REQUESTS
    assert spec_for_series("llm_locust_users_count") is None
    assert spec_for_series("vllm:e2e_request_latency_seconds") is None


def test_histogram_edges_match_vllm() -> None:
    assert list(metrics.TIME_TO_FIRST_TOKEN.buckets or ()) == VLLM_TTFT
    assert list(metrics.INTER_TOKEN_LATENCY.buckets or ()) == VLLM_ITL
    assert list(metrics.TIME_PER_OUTPUT_TOKEN.buckets or ()) == VLLM_ITL
    assert list(metrics.E2E_LATENCY.buckets or ()) == VLLM_E2E


def test_vllm_equivalents_point_at_catalog_and_vllm_names() -> None:
    assert set(VLLM_EQUIVALENTS) <= set(CATALOG_BY_NAME)
    assert all(n.startswith("vllm:") for names in VLLM_EQUIVALENTS.values() for n in names)
    histograms = {s.name for s in CATALOG if s.kind == "histogram"}
    assert histograms - set(CLIENT_ONLY) <= set(VLLM_EQUIVALENTS)
    assert not set(CLIENT_ONLY) & set(VLLM_EQUIVALENTS)
    assert VLLM_EQUIVALENTS[metrics.INTER_TOKEN_LATENCY.name][0] == "vllm:inter_token_latency_seconds"


def test_buckets_with_thresholds() -> None:
    base = metrics.TIME_TO_FIRST_TOKEN_BUCKETS
    assert buckets_with_thresholds(base, [5.0]) == base  # already an edge: no duplicate
    edges = buckets_with_thresholds(base, [3, 0.2, 3.0, 10_000])
    assert len(edges) == len(base) + 3
    assert {3.0, 0.2, 10_000.0} <= set(edges) and list(edges) == sorted(edges)
    assert all(type(e) is float for e in edges)
    assert buckets_with_thresholds([], []) == ()
    for bad in (math.inf, math.nan):
        with pytest.raises(ValueError):
            buckets_with_thresholds(base, [bad])


# --- dashboard ----------------------------------------------------------------------


def _dashboard() -> dict:
    return json.loads(DASHBOARD_PATH.read_text(encoding="utf-8"))


def _all_panels(node: dict) -> list[dict]:
    out = []
    for panel in node.get("panels", []):
        out.append(panel)
        out.extend(_all_panels(panel))
    return out


def test_dashboard_metadata_and_variables() -> None:
    dash = _dashboard()
    assert dash["uid"] == "llm-locust" and dash["title"] == "llm-locust"
    assert 36 <= dash["schemaVersion"] <= 41
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    run = variables["run_id"]
    assert run["type"] == "query" and run["allValue"] == ".*"
    assert "label_values(llm_locust_run_info, run_id)" in json.dumps(run["query"])
    panels = _all_panels(dash)
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    for panel in panels:
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}"
            assert panel["targets"] and all(t["expr"] for t in panel["targets"])


def test_every_dashboard_expression_uses_catalog_names_and_is_run_filtered() -> None:
    raw = [t["expr"] for p in _all_panels(_dashboard()) for t in p.get("targets", [])]
    assert raw and all("$run_id" in e for e in raw)
    exprs = dashboard_expressions(rate_interval="1m", run_id="abc")
    assert len(exprs) == len(raw)
    used: set[str] = set()
    for expr in exprs:
        assert "$" not in expr and "vllm:" not in expr
        names = expression_metric_names(expr)
        assert names, expr
        unknown = {n for n in names if spec_for_series(n) is None}
        assert not unknown, f"{unknown} not in the catalog: {expr}"
        used |= {spec_for_series(n).name for n in names}  # type: ignore[union-attr]
        assert 'run_id=~"abc"' in expr
    assert used == set(CATALOG_BY_NAME)  # every exported metric appears somewhere


def test_dashboard_expressions_substitution(tmp_path: Path) -> None:
    dash = {
        "panels": [
            {
                "type": "row",
                "panels": [{"targets": [{"expr": "rate(x[$__rate_interval]) $run_id ${run_id}"}]}],
            },
            {"targets": [{"expr": "y[$__interval]"}, {"expr": ""}]},
        ]
    }
    path = tmp_path / "d.json"
    path.write_text(json.dumps(dash))
    assert dashboard_expressions(path, rate_interval="15s", run_id="r1") == ["rate(x[15s]) r1 r1", "y[15s]"]


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_dashboard_expressions_parse_as_promql(tmp_path: Path) -> None:
    rules = {
        "groups": [
            {
                "name": "dash",
                "rules": [
                    {"record": f"dash:expr{i}", "expr": e} for i, e in enumerate(dashboard_expressions())
                ],
            }
        ]
    }
    path = tmp_path / "rules.json"  # YAML is a superset of JSON
    path.write_text(json.dumps(rules))
    proc = subprocess.run(
        ["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
