"""The end of a run's timeline from columns: the same windows, drift and vLLM keys as from rows.

The end of a run reads ``requests.jsonl`` once into columns (no rows kept) and builds the
timeline from them (:meth:`Timeline.from_columns`); ``llm-locust report`` builds it from the
rows. Both must give the same numbers; past :data:`EXACT_CHUNK_GAPS` the chunks are binned by
time and the windows' token rates move by at most the tokens near their edges.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from llm_locust.results import chunk_arrivals as arrivals
from llm_locust.results.analysis import analyse, analyse_timeline
from llm_locust.results.columns import Columns
from llm_locust.results.timeline import Timeline
from llm_locust.results.vllm_compat import max_output_tokens_per_s
from llm_locust.results.windows import window_series

T0 = 1_700_000_000.0


def _rows(n: int = 400, seed: int = 3) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        start = T0 + float(rng.uniform(0.0, 60.0))
        outcome = "ok" if rng.random() > 0.1 else ("http_500" if rng.random() > 0.3 else "incomplete")
        ttft = float(rng.uniform(0.05, 0.5))
        gaps = [round(float(g), 6) for g in rng.uniform(0.005, 0.05, int(rng.integers(0, 40)))]
        ok = outcome == "ok"
        rows.append(
            {
                "request_id": str(i),
                "start_time": start,
                "outcome": outcome,
                "message": "" if ok else "boom",
                "ttft": ttft if ok else None,
                "tpot": (sum(gaps) / len(gaps)) if ok and gaps else None,
                "e2e": ttft + sum(gaps) if outcome != "http_500" else 0.01,
                "itl": gaps if ok else [],
                "completion_tokens": (len(gaps) + 1) * int(rng.integers(1, 3)) if ok and i % 7 else None,
                "prompt_tokens": 100,
                "target_input_tokens": 100,
                "target_output_tokens": 40,
                "stage": 0 if start < T0 + 30 else 1,
                "warmup": bool(start < T0 + 3),
                "rampup": bool(T0 + 30 <= start < T0 + 32),
            }
        )
    return rows


def _summary() -> dict:
    return {"config": {"start_time": T0, "stop_time": T0 + 61.0}, "completed": 0, "failed": 0}


def test_a_timeline_from_columns_holds_the_same_chunks_as_from_rows() -> None:
    rows = _rows()
    a, b = Timeline(rows), Timeline.from_columns(Columns.from_rows(rows))
    assert not b.binned and b.token_precision() == {"method": "exact"}
    for name in ("start", "ttft", "tpot", "e2e", "end", "completion_tokens", "stage"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert list(a.outcome) == list(b.outcome) and (a.excluded == b.excluded).all()
    for mask in (None, a.measured(), a.measured(1)):
        ta, wa = a.chunk_times(mask)
        tb, wb = b.chunk_times(mask)
        np.testing.assert_array_equal(ta, tb)
        np.testing.assert_array_equal(wa, wb)
    np.testing.assert_array_equal(a.gaps(a.measured(0)), b.gaps(b.measured(0)))
    assert a.chunk_times()[0].size > 1000  # the test has chunks to compare


def test_the_analysis_from_columns_is_the_analysis_from_rows() -> None:
    rows = _rows()
    measured = [r for r in rows if r["outcome"] != "incomplete" and not r["warmup"] and not r["rampup"]]
    by_rows = analyse(_summary(), rows, measured, window_s=5.0, detailed=True)
    timeline = Timeline.from_columns(Columns.from_rows(rows))
    by_columns = analyse_timeline(_summary(), timeline, lambda: iter(measured), window_s=5.0, detailed=True)
    assert json.dumps(by_columns, sort_keys=True) == json.dumps(by_rows, sort_keys=True)
    assert len(by_rows["windows"]) == 13 and by_rows["max_output_tokens_per_s"] > 0


def test_past_the_limit_chunks_are_binned_and_the_windows_stay_within_the_edge_tokens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rows = _rows(800, seed=5)
    exact = Timeline(rows)
    monkeypatch.setattr(arrivals, "EXACT_CHUNK_GAPS", 500)
    binned = Timeline.from_columns(Columns.from_rows(rows))
    assert binned.binned and binned.token_precision()["method"] == "binned"
    # every token is still counted, in every mode and for the measured ones
    for mask in (None, exact.measured()):
        assert binned.chunk_times(mask)[1].sum() == pytest.approx(exact.chunk_times(mask)[1].sum())
    with pytest.raises(ValueError, match="binned"):
        binned.chunk_times(exact.measured(0))
    a = window_series(exact, T0, T0 + 61.0, 5.0)
    b = window_series(binned, T0, T0 + 61.0, 5.0)
    times, weights = exact.chunk_times()
    for wa, wb in zip(a, b, strict=True):
        lo, hi = T0 + wa.start_s, T0 + wa.end_s
        near = np.abs(times - lo) < arrivals.BIN_S
        near |= np.abs(times - hi) < arrivals.BIN_S
        allowed = weights[near].sum() / max(hi - lo, 1e-9)
        assert abs(wa.output_tokens_per_s - wb.output_tokens_per_s) <= allowed + 1e-9
        assert {k: v for k, v in wa.to_json().items() if k != "output_tokens_per_s"} == {
            k: v for k, v in wb.to_json().items() if k != "output_tokens_per_s"
        }
    assert max_output_tokens_per_s(binned) == pytest.approx(max_output_tokens_per_s(exact), rel=0.02)
