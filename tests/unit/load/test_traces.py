"""Trace replay: Azure CSV and Mooncake JSONL parsing, slicing, scaling, slot spreading."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from llm_locust.load.traces import (
    TraceError,
    detect_format,
    detect_slot_width,
    load_trace,
    spread_slots,
)

TRACES = Path(__file__).resolve().parents[4] / "shared/data/traces"
needs_traces = pytest.mark.skipif(not TRACES.is_dir(), reason=f"sample traces absent ({TRACES})")

AZURE_HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"


def _azure(tmp_path: Path, rows: list[str], name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_text(AZURE_HEADER + "\n".join(rows) + "\n")
    return path


def _mooncake(tmp_path: Path, rows: list[dict], name: str = "t.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# --------------------------------------------------------------------------- real traces


@needs_traces
@pytest.mark.parametrize(
    ("name", "rows", "fmt"),
    [
        ("AzureLLMInferenceTrace_conv.csv", 19366, "azure"),
        ("AzureLLMInferenceTrace_code.csv", 8819, "azure"),
        ("conversation_trace.jsonl", 12031, "mooncake"),
    ],
)
def test_real_trace_counts(name, rows, fmt) -> None:
    trace = load_trace(TRACES / name)
    assert len(trace) == rows and trace.skipped == 0 and trace.format == fmt
    offsets = trace.offsets
    assert offsets[0] == 0.0 and np.all(np.diff(offsets) >= 0)
    assert 3400 < trace.duration_s < 3600


@needs_traces
def test_real_azure_values() -> None:
    trace = load_trace(TRACES / "AzureLLMInferenceTrace_conv.csv")
    first, second = trace.entries[:2]
    assert (first.input_tokens, first.output_tokens, first.hash_ids) == (374, 44, None)
    # 18:15:50.9951690 - 18:15:46.6805900, exact to the microsecond.
    assert second.offset_s == pytest.approx(4.3145790, abs=1e-6)
    inputs = np.array([e.input_tokens for e in trace.entries])
    assert np.percentile(inputs, 50) == 1020


@needs_traces
def test_real_mooncake_slots_spread_evenly() -> None:
    raw = load_trace(TRACES / "conversation_trace.jsonl", spread="none")
    assert detect_slot_width(raw.offsets) == pytest.approx(3.0)
    assert len(np.unique(raw.offsets)) == 1180
    trace = load_trace(TRACES / "conversation_trace.jsonl")  # auto -> even
    assert trace.spread == "even" and trace.slot_s == pytest.approx(3.0)
    offsets = trace.offsets
    assert len(np.unique(offsets)) == len(offsets)
    assert np.all(np.diff(offsets) > 0)
    # Every request stays inside its slot.
    assert np.all(offsets >= raw.offsets) and np.all(offsets - raw.offsets < 3.0)
    assert trace.entries[0].hash_ids[:3] == (0, 1, 2)


@needs_traces
def test_real_mooncake_synthetic_not_spread_by_auto() -> None:
    trace = load_trace(TRACES / "synthetic_trace.jsonl")
    assert len(trace) == 3993 and trace.spread == "none"


# --------------------------------------------------------------------------- synthetic


def test_azure_parse_relative_and_across_midnight(tmp_path) -> None:
    path = _azure(
        tmp_path,
        [
            "2023-11-16 23:59:59.5000000,100,10",
            "2023-11-17 00:00:00.2500000,200,20",
            "2023-11-17 00:00:01.0000000,300,30",
        ],
    )
    trace = load_trace(path)
    assert [e.offset_s for e in trace.entries] == pytest.approx([0.0, 0.75, 1.5])
    assert [(e.input_tokens, e.output_tokens) for e in trace.entries] == [(100, 10), (200, 20), (300, 30)]


def test_malformed_rows_counted_or_strict(tmp_path) -> None:
    path = _azure(
        tmp_path,
        [
            "2023-11-16 18:00:00.0000000,100,10",
            "garbage",
            "2023-11-16 18:00:01.0000000,abc,10",
            "2023-11-16 25:00:01.0000000,1,1",
            "2023-11-16 18:00:02.0000000,-5,10",
            "2023-11-16 18:00:03.0000000,100,10",
        ],
    )
    trace = load_trace(path)
    assert len(trace) == 2 and trace.skipped == 4
    assert ":3: expected 3 columns" in trace.errors[0] and ":4: malformed" in trace.errors[1]
    with pytest.raises(TraceError, match=r":3: ") as info:
        load_trace(path, strict=True)
    assert "\n" not in str(info.value)


def test_mooncake_malformed_and_ms(tmp_path) -> None:
    rows = [
        {"timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": [1, 2]},
        {"timestamp": 1500, "input_length": 11, "output_length": 6},
        {"input_length": 1, "output_length": 1},
    ]
    path = _mooncake(tmp_path, rows)
    with path.open("a") as fh:
        fh.write("{not json\n")
    trace = load_trace(path, spread="none")
    assert trace.skipped == 2
    assert [(e.offset_s, e.hash_ids) for e in trace.entries] == [(0.0, (1, 2)), (1.5, None)]


def test_time_scale_and_slicing(tmp_path) -> None:
    rows = [{"timestamp": 1000 * i, "input_length": i, "output_length": 1} for i in range(10)]
    path = _mooncake(tmp_path, rows)
    assert load_trace(path, time_scale=2.0).offsets.tolist() == [i / 2 for i in range(10)]
    sliced = load_trace(path, start_s=3.5, limit=3)
    assert [e.input_tokens for e in sliced.entries] == [4, 5, 6]
    assert sliced.offsets.tolist() == [0.5, 1.5, 2.5]
    window = load_trace(path, start_s=2.0, duration_s=3.0, time_scale=0.5)
    assert [e.input_tokens for e in window.entries] == [2, 3, 4]
    assert window.offsets.tolist() == [0.0, 2.0, 4.0]
    with pytest.raises(TraceError, match="--trace-start"):
        load_trace(path, start_s=100.0)


@pytest.mark.parametrize(
    ("kwargs", "flag"),
    [
        ({"time_scale": 0.0}, "--time-scale"),
        ({"limit": 0}, "--trace-limit"),
        ({"spread": "wide"}, "--trace-spread"),
        ({"fmt": "parquet"}, "--trace-format"),
        ({"slot_s": -1.0}, "--trace-slot"),
    ],
)
def test_option_errors(tmp_path, kwargs, flag) -> None:
    path = _azure(tmp_path, ["2023-11-16 18:00:00.0000000,1,1"])
    with pytest.raises(TraceError, match=flag):
        load_trace(path, **kwargs)


def test_file_errors(tmp_path) -> None:
    with pytest.raises(TraceError, match="no such file"):
        load_trace(tmp_path / "missing.csv")
    bad_header = tmp_path / "lengths.csv"
    bad_header.write_text("num_prefill_tokens,num_decode_tokens\n1,2\n")
    with pytest.raises(TraceError, match="TIMESTAMP"):
        load_trace(bad_header)
    empty = _azure(tmp_path, [], name="empty.csv")
    with pytest.raises(TraceError, match="no valid rows"):
        load_trace(empty)
    odd = tmp_path / "trace.txt"
    odd.write_text("hello\n")
    with pytest.raises(TraceError, match="--trace-format"):
        load_trace(odd)


def test_format_detection_and_override(tmp_path) -> None:
    assert detect_format("x.csv") == "azure" and detect_format("x.jsonl") == "mooncake"
    assert detect_format("x.log", '{"timestamp": 0}') == "mooncake"
    assert detect_format("x.log", "TIMESTAMP,ContextTokens,GeneratedTokens") == "azure"
    path = tmp_path / "trace.dat"
    path.write_text(json.dumps({"timestamp": 0, "input_length": 1, "output_length": 2}) + "\n")
    assert load_trace(path).format == "mooncake"
    assert load_trace(path, fmt="mooncake").entries[0].output_tokens == 2


def test_spread_even_random_none() -> None:
    t = np.array([0.0, 0.0, 0.0, 0.0, 3.0, 6.0, 6.0])
    even = spread_slots(t, 3.0, "even")
    assert even.tolist() == [0.0, 0.75, 1.5, 2.25, 3.0, 6.0, 7.5]
    rnd = spread_slots(t, 3.0, "random", seed=1)
    assert np.all(np.diff(rnd) > 0) and np.all((rnd >= t) & (rnd < t + 3.0))
    assert np.array_equal(rnd, spread_slots(t, 3.0, "random", seed=1))
    assert spread_slots(t, 3.0, "none").tolist() == t.tolist()


def test_spread_width_capped_by_next_timestamp() -> None:
    # A slot followed 2.999 s later (jittered quantization) must not overlap the next one.
    t = np.array([0.0] * 3000 + [2.999])
    out = spread_slots(t, 3.0, "even")
    assert np.all(np.diff(out) > 0)


def test_slot_width_detection_and_auto(tmp_path) -> None:
    assert detect_slot_width([0, 0, 3.0, 3.0, 6.0, 9.001, 15.0]) == pytest.approx(3.0)
    assert detect_slot_width([1.0, 1.0]) is None
    rows = [{"timestamp": 3000 * (i // 4), "input_length": 1, "output_length": 1} for i in range(12)]
    trace = load_trace(_mooncake(tmp_path, rows))
    assert trace.spread == "even" and trace.slot_s == 3.0
    assert trace.offsets.tolist() == [0.0, 0.75, 1.5, 2.25, 3.0, 3.75, 4.5, 5.25, 6.0, 6.75, 7.5, 8.25]
    given = load_trace(_mooncake(tmp_path, rows), spread="random", slot_s=1.0, seed=3)
    assert np.all(given.offsets - np.repeat([0.0, 3.0, 6.0], 4) < 1.0)
    one_slot = [{"timestamp": 0, "input_length": 1, "output_length": 1}] * 3
    with pytest.raises(TraceError, match="--trace-slot"):
        load_trace(_mooncake(tmp_path, one_slot, "one.jsonl"))
