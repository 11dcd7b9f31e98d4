"""``--percentiles`` (issue 27 §4), as ``vllm bench serve --metric-percentiles``: the option in
the one table, its field in the typed configuration, ``p99.9_ttft_ms`` keys in the summary and
the rows of the end-of-run text."""

from __future__ import annotations

import pytest

from llm_locust.config.build import ConfigError, build_config
from llm_locust.config.model import ResultsConfig
from llm_locust.config.options import by_dest
from llm_locust.results.columns import Columns, ColumnsBuilder
from llm_locust.results.finalize import RunFacts, build_summary
from llm_locust.results.stats import ItlBudget
from llm_locust.results.summary import summarize
from llm_locust.results.summary_model import RunSummary
from llm_locust.results.summary_text import format_table
from tests.records import linear_percentile

HOST = "http://127.0.0.1:9"


def _rows(n: int) -> list[dict]:
    return [
        {
            "request_id": f"r{i}",
            "start_time": 1000.0 + i * 0.01,
            "outcome": "ok",
            "ttft": 0.001 * (i + 1),  # 1 ms .. n ms
            "e2e": 0.5 + 0.001 * i,
            "tpot": 0.01,
            "itl": [0.001 * (i % 7 + 1)],
            "prompt_tokens": 10,
            "completion_tokens": 2,
            "token_source": "usage",
            "stage": None,
            "warmup": False,
        }
        for i in range(n)
    ]


def test_the_option_is_in_the_table_and_its_field_in_the_model() -> None:
    opt = by_dest("percentiles")
    assert opt.flag == "--percentiles" and opt.group == "results" and opt.web_ui
    assert "percentiles" in ResultsConfig.model_fields
    assert build_config({"host": HOST}).results.percentiles == (50, 90, 95, 99)
    config = build_config({"host": HOST, "percentiles": "99.9, 50,90"})
    assert config.results.percentiles == (50, 90, 99.9)
    assert config.options()["percentiles"] == [50, 90, 99.9]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("50,x", "--percentiles '50,x': 'x' is not a number"),
        ("0", "--percentiles '0': '0' is not in (0, 100]"),
        ("100.5", "--percentiles '100.5': '100.5' is not in (0, 100]"),
        ("50,,99", "--percentiles '50,,99': expected a comma-separated list"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_flag(value: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        build_config({"host": HOST, "percentiles": value})
    assert str(err.value) == message


def test_summary_keys_as_vllm_names_them() -> None:
    rows = _rows(2000)
    summary = summarize(rows, 20.0, (50, 99.9, 99.99))
    ttft = [r["ttft"] * 1000 for r in rows]
    e2e = [r["e2e"] * 1000 for r in rows]
    assert summary["p99.9_ttft_ms"] == pytest.approx(linear_percentile(ttft, 99.9))
    assert summary["p99.99_ttft_ms"] == pytest.approx(linear_percentile(ttft, 99.99))
    assert summary["p99.9_e2el_ms"] == pytest.approx(linear_percentile(e2e, 99.9))
    # the standard ones stay: every report, compare and SLO line reads them
    assert summary["p95_ttft_ms"] == pytest.approx(linear_percentile(ttft, 95))
    assert "p99.9_itl_ms" in summary and "p99.9_tpot_ms" in summary
    assert "p99.9_ttft_ms" not in summarize(rows, 20.0)


def test_itl_from_the_histogram_has_the_asked_percentiles_too() -> None:
    rows = _rows(500)
    builder = ColumnsBuilder(budget=ItlBudget(limit=10))
    for r in rows:
        builder.add(r)
    summary = summarize(builder.build(), 5.0, (99.9,))
    gaps = [g * 1000 for r in rows for g in r["itl"]]
    assert summary["itl_precision"]["method"] == "histogram"
    assert summary["p99.9_itl_ms"] == pytest.approx(linear_percentile(gaps, 99.9), rel=0.01)


def test_the_end_of_run_table_shows_the_asked_percentiles() -> None:
    rows = _rows(1000)
    facts = RunFacts(start_time=1000.0, stop_time=1010.0, percentiles=(50, 90, 99, 99.9))
    summary = build_summary(Columns.from_rows(rows), facts)
    assert summary["percentiles"] == [50, 90, 99, 99.9]
    lines = format_table(RunSummary.of(summary)).splitlines()
    ttft = [line.split() for line in lines if line.split()[1:2] == ["TTFT"] and line.startswith("P")]
    assert [w[0] for w in ttft] == ["P90", "P99", "P99.9"]
    shown = float(ttft[-1][-1])
    assert shown == pytest.approx(linear_percentile([r["ttft"] * 1000 for r in rows], 99.9), abs=0.005)
    # without the option: the table as before (P90, P95, P99)
    plain = format_table(RunSummary.of(build_summary(Columns.from_rows(rows), RunFacts(1000.0, 1010.0))))
    assert [ln.split()[0] for ln in plain.splitlines() if " TTFT " in f" {ln} " and ln[:1] == "P"] == [
        "P90",
        "P95",
        "P99",
    ]
