"""SLO parsing, evaluation with exact percentiles, goodput, and the highest passing stage."""

from __future__ import annotations

import numpy as np
import pytest

from llm_locust.load.search import Verdict
from llm_locust.record import RequestRecord
from llm_locust.results.slo import (
    evaluate,
    evaluate_by_stage,
    highest_passing_stage,
    is_good,
    load_slo_file,
    parse_slo,
)
from llm_locust.results.stats import percentile


def rows(records: list[RequestRecord]) -> list[dict]:
    """The records' rows, as ``requests.jsonl`` holds them (the SLO reads rows)."""
    return [r.to_json() for r in records]


def _rec(
    i: int,
    ttft: float | None = 0.1,
    e2e: float | None = 1.0,
    tokens: int | None = 10,
    ok: bool = True,
    lag: float = 0.0,
    chunks: list[float] | None = None,
    warmup: bool = False,
    stage: int | None = None,
) -> RequestRecord:
    t0 = 100.0 + i
    return RequestRecord(
        request_id=str(i),
        wall_start=t0,
        t_sent=t0,
        t_first_token=None if ttft is None else t0 + ttft,
        t_end=None if e2e is None else t0 + e2e,
        chunk_times=[t0 + c for c in (chunks or [])],
        completion_tokens=tokens,
        outcome="ok" if ok else "http_error",
        t_intended=t0 - lag,
        warmup=warmup,
        stage=stage,
    )


# --------------------------------------------------------------------------- parsing


def test_parse_full_spec() -> None:
    spec = parse_slo(
        "success>=99%,ttft_p95<=5s,e2e_p95<=30s,tpot_p99<=100ms,itl_mean<0.05,e2e_p99.9_intended<=40"
    )
    by_name = {line.name: line for line in spec}
    assert by_name["success"].threshold == pytest.approx(0.99) and by_name["success"].op == ">="
    assert by_name["ttft_p95"].threshold == 5.0
    assert by_name["tpot_p99"].threshold == pytest.approx(0.1)
    assert by_name["itl_mean"].op == "<" and by_name["itl_mean"].threshold == 0.05
    intended = by_name["e2e_p99.9_intended"]
    assert intended.intended and intended.stat == "p99.9" and intended.threshold == 40.0
    assert spec.to_json()[1] == "ttft_p95<=5s"


@pytest.mark.parametrize(
    ("text", "value"),
    [("success>=0.95", 0.95), ("success>=95", 0.95), ("success>=1", 1.0), ("success > 99.5 %", 0.995)],
)
def test_success_forms(text, value) -> None:
    assert parse_slo(text).lines[0].threshold == pytest.approx(value)


def test_bare_latency_means_max() -> None:
    line = parse_slo("ttft<=500ms").lines[0]
    assert line.name == "ttft_max" and line.threshold == 0.5


@pytest.mark.parametrize(
    ("text", "bad"),
    [
        ("ttft_p95<=5x", "ttft_p95<=5x"),
        ("latency_p95<=5s", "latency_p95"),
        ("ttft_p95=5s", "ttft_p95=5s"),
        ("ttft_p95>=5s", "ttft_p95>=5s"),
        ("success<=99%", "success<=99%"),
        ("success>=101%", "success>=101%"),
        ("success>=5s", "success>=5s"),
        ("ttft_p95<=5%", "ttft_p95<=5%"),
        ("tpot_p95_intended<=1s", "tpot_p95_intended"),
        ("ttft_p101<=1s", "ttft_p101"),
        ("ttft_p95<=1s,ttft_p95<=2s", "ttft_p95"),
        ("", "empty"),
        ("ttft_p95<=5s,,", "ttft_p95"),
    ],
)
def test_parse_errors_name_the_part(text, bad) -> None:
    if text == "ttft_p95<=5s,,":
        assert len(parse_slo(text)) == 1  # empty parts are ignored
        return
    with pytest.raises(ValueError, match="--slo") as info:
        parse_slo(text)
    assert bad in str(info.value) and "\n" not in str(info.value)


def test_yaml_forms(tmp_path) -> None:
    mapping = tmp_path / "slo.yaml"
    mapping.write_text('success: ">=99%"\nttft_p95: "<=5s"\ntpot_p99: 0.1\n')
    spec = load_slo_file(mapping)
    assert [(x.name, x.op, x.threshold) for x in spec] == [
        ("success", ">=", pytest.approx(0.99)),
        ("ttft_p95", "<=", 5.0),
        ("tpot_p99", "<=", 0.1),
    ]
    assert parse_slo(str(mapping)) == spec
    listed = tmp_path / "list.yml"
    listed.write_text("slo:\n  - success>=99%\n  - e2e_p95<=30s\n")
    assert [x.name for x in parse_slo(str(listed))] == ["success", "e2e_p95"]
    nested = tmp_path / "nested.yaml"
    nested.write_text("slo:\n  ttft_p50: 200ms\n")
    assert parse_slo(str(nested)).lines[0].threshold == pytest.approx(0.2)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("42\n")
    with pytest.raises(ValueError, match="--slo"):
        load_slo_file(wrong)
    with pytest.raises(ValueError, match="--slo"):
        parse_slo(str(tmp_path / "missing.yaml"))
    with pytest.raises(ValueError, match="ttft_p95"):
        parse_slo({"ttft_p95": "<=5 parsecs"})


# --------------------------------------------------------------------------- evaluation


def test_percentile_matches_numpy_linear() -> None:
    values = [0.3, 0.1, 0.9, 0.5, 0.7]
    assert percentile(values, 95) == pytest.approx(float(np.percentile(values, 95)))
    assert percentile(values, 50) == 0.5
    assert percentile([], 50) is None


def test_evaluate_exact_percentiles_and_pass_fail() -> None:
    # TTFTs 0.01 .. 1.00 s: p95 = 0.9505 (linear), p50 = 0.505.
    records = [_rec(i, ttft=(i + 1) / 100, e2e=2.0) for i in range(100)]
    result = evaluate(parse_slo("ttft_p95<=0.96s,ttft_p50<0.5s,e2e_mean<=2s"), rows(records), 50.0)
    measured = {x.line.name: x for x in result.lines}
    assert measured["ttft_p95"].measured == pytest.approx(0.9505)
    assert measured["ttft_p95"].passed
    assert measured["ttft_p50"].measured == pytest.approx(0.505) and not measured["ttft_p50"].passed
    assert measured["e2e_mean"].passed and measured["e2e_mean"].n == 100
    assert not result.passed
    assert {type(x.verdict) for x in result.lines} == {Verdict} and isinstance(result.verdict, Verdict)
    # Per-request goodness: ttft < 0.5 s (p50 line) and <= 0.96 s -> TTFTs 0.01..0.49 -> 49 good.
    assert result.good == 49
    assert result.goodput_rps == pytest.approx(49 / 50.0)
    assert result.goodput_tokens_per_s == pytest.approx(49 * 10 / 50.0)


def test_success_rate_and_warmup_excluded() -> None:
    records = [_rec(i) for i in range(97)] + [_rec(100 + i, ok=False) for i in range(3)]
    records += [_rec(200 + i, ok=False, warmup=True) for i in range(50)]
    result = evaluate(parse_slo("success>=97%"), rows(records), 10.0)
    assert result.requests == 100 and result.succeeded == 97
    assert result.lines[0].measured == pytest.approx(0.97) and result.passed
    assert not evaluate(parse_slo("success>97%"), rows(records), 10.0).passed
    assert result.good == 97 and result.good_output_tokens == 970


def test_requests_the_client_cancelled_are_neither_successes_nor_failures() -> None:
    """6 ok, 2 failed, 3 cancelled by the client (--cancel-after): by hand, success = 6 / (6 + 2)
    = 0.75; counting the cancelled ones would give 6 / 11 = 0.545 (or 9 / 11 as successes)."""
    records = [_rec(i) for i in range(6)] + [_rec(10 + i, ok=False) for i in range(2)]
    cancelled = [_rec(20 + i, e2e=0.3, tokens=2) for i in range(3)]
    for record in cancelled:
        record.outcome = "cancelled"
    result = evaluate(parse_slo("success>=75%"), rows(records + cancelled), 10.0)
    assert result.requests == 8 and result.succeeded == 6
    assert result.lines[0].measured == 0.75 and result.lines[0].n == 8
    assert result.success_rate == 0.75 and result.passed
    assert not evaluate(parse_slo("success>=76%"), rows(records + cancelled), 10.0).passed


def test_intended_variant_uses_t_intended() -> None:
    records = [_rec(i, ttft=0.2, e2e=1.0, lag=0.5 if i % 2 else 0.0) for i in range(10)]
    result = evaluate(
        parse_slo("e2e_max<=1s,e2e_max_intended<=1.2s,ttft_p50_intended<=1s"), rows(records), 10.0
    )
    values = {x.line.name: x.measured for x in result.lines}
    assert values["e2e_max"] == pytest.approx(1.0)
    assert values["e2e_max_intended"] == pytest.approx(1.5)
    assert values["ttft_p50_intended"] == pytest.approx(0.45)
    assert not result.passed and result.good == 5  # the lagged half misses 1.2 s from intended


def test_tpot_and_itl_per_request_rules() -> None:
    single = _rec(0, ttft=0.1, e2e=0.1, tokens=1)  # TPOT undefined -> passes the tpot line
    slow = _rec(1, ttft=0.1, e2e=1.1, tokens=11)  # TPOT 0.1 s
    stall = _rec(2, ttft=0.1, e2e=0.5, tokens=11, chunks=[0.1, 0.11, 0.12, 0.45, 0.5])
    spec = parse_slo("tpot_p99<=50ms,itl_p50<=50ms")
    assert is_good(single.to_json(), spec) and not is_good(slow.to_json(), spec)
    assert is_good(stall.to_json(), spec)  # own ITL p50 = 0.03 s despite one 0.33 s stall
    assert not is_good(stall.to_json(), parse_slo("itl_max<=50ms"))
    assert not is_good(_rec(3, ttft=None).to_json(), parse_slo("ttft_p50<=1s"))  # undefined TTFT fails
    assert not is_good(_rec(4, ok=False).to_json(), parse_slo("ttft_p50<=1s"))
    result = evaluate(parse_slo("itl_max<=0.4s"), rows([stall]), 1.0)
    assert result.lines[0].measured == pytest.approx(0.33) and result.passed


def test_nothing_to_measure_fails() -> None:
    result = evaluate(parse_slo("tpot_p99<=1s"), rows([_rec(0, tokens=1)]), 1.0)
    assert result.lines[0].measured is None and not result.passed
    assert evaluate(parse_slo("success>=1"), rows([]), 1.0).passed is False


def test_to_json_shape() -> None:
    result = evaluate(parse_slo("success>=90%,ttft_p95<=1s"), rows([_rec(i) for i in range(5)]), 2.0)
    data = result.to_json()
    assert data["passed"] is True and data["good_requests"] == 5
    assert data["goodput_rps"] == 2.5 and data["goodput_output_tokens_per_s"] == 25.0
    assert data["objectives"][1] == {
        "objective": "ttft_p95<=1s",
        "name": "ttft_p95",
        "kind": "request",
        "op": "<=",
        "threshold": 1.0,
        "measured": pytest.approx(0.1),
        "n": 5,
        "passed": True,
        # five requests cannot bound a P95 from above (it needs 72): not shown to hold
        "interval": [pytest.approx(0.1), None],
        "verdict": "inconclusive",
        "note": "5 values cannot bound a P95 from above (it needs at least 72)",
    }
    assert data["verdict"] == "inconclusive"


def test_by_stage_and_highest_passing() -> None:
    records = []
    for stage, ttft in enumerate([0.1, 0.2, 0.9, 0.3]):
        records += [_rec(stage * 10 + i, ttft=ttft, stage=stage) for i in range(10)]
    spec = parse_slo("ttft_p95<=0.5s")
    results = evaluate_by_stage(spec, rows(records), {0: 10.0, 1: 10.0, 2: 10.0, 3: 10.0})
    assert [r.passed for r in results.values()] == [True, True, False, True]
    assert results[1].goodput_rps == 1.0
    assert highest_passing_stage(results) == 1
    assert highest_passing_stage(results, contiguous=False) == 3
    assert highest_passing_stage(list(results.items())[2:3]) is None
    labelled = [("users=1", results[0]), ("users=10", results[1])]
    assert highest_passing_stage(labelled) == "users=10"
