"""SLO terms on server metrics and drift: grammar (config.slo_terms) and judging (results.slo_series)."""

from __future__ import annotations

import json

import pytest

from llm_locust.config.slo import SloKind
from llm_locust.results.series_model import WindowRow
from llm_locust.results.slo import evaluate, parse_slo
from llm_locust.results.slo_series import series_judge

T0 = 5000.0


def test_server_and_drift_terms_parse() -> None:
    spec = parse_slo("kv_cache_usage_max<=95%,waiting_p95<=10,preemptions==0,ttft_p95_drift<=50ms")
    kv, waiting, preempt, drift = spec.lines
    assert (kv.kind, kv.metric, kv.stat, kv.threshold, kv.name) == (
        "server",
        "kv_cache_usage",
        "max",
        0.95,
        "kv_cache_usage_max",
    )
    assert (waiting.metric, waiting.stat, waiting.threshold) == ("waiting", "p95", 10.0)
    assert (preempt.op, preempt.name, preempt.threshold) == ("==", "preemptions", 0.0)
    assert (drift.kind, drift.name, drift.threshold) == ("drift", "ttft_p95_drift", pytest.approx(0.05))
    assert parse_slo("e2e_p95_drift<=1s/h").lines[0].threshold == pytest.approx(1 / 6)
    assert parse_slo("error_rate_drift<=0.5%").lines[0].threshold == pytest.approx(0.005)
    assert parse_slo("kv_cache_usage_max<=0.9").lines[0].threshold == pytest.approx(0.9)
    assert parse_slo({"waiting_max": 4}).lines[0].op == "<="  # the YAML form


def test_a_line_kind_is_the_member_and_spells_as_before() -> None:
    spec = parse_slo("ttft_p95<=5s,preemptions==0,waiting_p95<=10,waiting_drift<=2,success>=99%")
    kinds = [line.kind for line in spec.lines]
    assert kinds == [SloKind.REQUEST, SloKind.SERVER, SloKind.SERVER, SloKind.DRIFT, SloKind.REQUEST]
    assert all(type(kind) is SloKind for kind in kinds)
    assert [str(kind) for kind in kinds] == ["request", "server", "server", "drift", "request"]
    # the summary's objectives keep a plain string, as before (unjudged series lines included)
    objectives = evaluate(spec, [], 1.0).to_json()["objectives"]
    assert isinstance(objectives, list)
    written = [o["kind"] for o in objectives if isinstance(o, dict)]
    assert [type(kind) for kind in written] == [str] * 5
    assert json.dumps(written) == '["request", "server", "server", "drift", "request"]'


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("preemptions>=1", "preemptions takes ==, <= or <"),
        ("waiting_p95<=10ms", "number of requests"),
        ("kv_cache_usage_max<=120%", "cannot exceed 100%"),
        ("ttft_p95_drift<=5", "ms or s"),
        ("kv_cache_usage_max>=50%", "upper bound"),
        ("ttft_p95==1s", "== applies only to preemptions"),
        ("waiting_p200<=1", "between 0 and 100"),
    ],
)
def test_bad_terms_name_the_line(text: str, why: str) -> None:
    with pytest.raises(ValueError, match="--slo") as info:
        parse_slo(text)
    assert why in str(info.value) and text.split("<")[0].split("=")[0].split(">")[0] in str(info.value)


def _server() -> list[dict]:
    return [
        {
            "t": T0 + i,
            "kv_cache_usage": 0.5 + 0.01 * i,
            "waiting": float(i % 4),
            "preemptions": 2.0 + (i >= 30),
        }
        for i in range(60)
    ]


def test_server_terms_judged_per_span() -> None:
    spec = parse_slo("kv_cache_usage_max<=95%,waiting_max<=3,preemptions==0")
    early = evaluate(spec, [], 1.0, series_judge(_server(), None, T0, T0, T0 + 20, 10.0))
    assert [line.verdict for line in early.lines] == ["pass", "pass", "pass"]
    assert early.lines[0].measured == pytest.approx(0.70) and early.lines[2].measured == 0.0
    late = evaluate(spec, [], 1.0, series_judge(_server(), None, T0, T0 + 25, T0 + 59, 10.0))
    assert late.lines[0].measured == pytest.approx(1.09) and late.lines[0].verdict == "fail"
    assert late.lines[2].measured == 1.0 and not late.lines[2].passed  # a preemption at t = 30


def test_without_server_metrics_a_server_term_is_not_shown_to_hold() -> None:
    result = evaluate(parse_slo("waiting_p95<=10"), [], 1.0, series_judge([], None, T0, T0, T0 + 60, 10.0))
    line = result.lines[0]
    assert line.measured is None and not line.passed and line.verdict == "inconclusive"
    assert "--server-metrics" in line.note
    unjudged = evaluate(parse_slo("waiting_p95<=10"), [], 1.0).lines[0]
    assert not unjudged.passed and "not evaluated" in unjudged.note


def test_drift_terms_judged_from_windows() -> None:
    windows = [
        WindowRow(start_s=i * 30.0, end_s=(i + 1) * 30.0, p95_ttft_ms=300.0 + 4.0 * i) for i in range(40)
    ]
    # +4 ms per 30 s window = +80 ms per 10 min
    judge = series_judge(None, windows, T0, T0, T0 + 1200, 30.0)
    failing = evaluate(parse_slo("ttft_p95_drift<=50ms"), [], 1.0, judge).lines[0]
    assert failing.measured == pytest.approx(0.080) and failing.verdict == "fail"
    passing = evaluate(parse_slo("ttft_p95_drift<=100ms"), [], 1.0, judge).lines[0]
    assert passing.verdict == "pass" and passing.passed
    short = series_judge(None, windows[:4], T0, T0, T0 + 120, 30.0)
    assert evaluate(parse_slo("ttft_p95_drift<=1s"), [], 1.0, short).lines[0].verdict == "inconclusive"
