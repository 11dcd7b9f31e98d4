"""``--burst``: the grammar, the waves, each worker's share, and the summary's burst block."""

from __future__ import annotations

import pytest

from llm_locust.config.build import ConfigError, build_config
from llm_locust.config.burst import parse_burst
from llm_locust.load.bursts import wave_offsets, wave_share
from llm_locust.load.plan import build_load_plan
from llm_locust.results.summary import summarize


def test_grammar_and_defaults() -> None:
    spec = parse_burst("every=60s,size=50")
    assert (spec.every_s, spec.size, spec.start_s, spec.count) == (60.0, 50, 60.0, None)
    spec = parse_burst(" every=500ms , size=3, start=0s, count=2 ")
    assert (spec.every_s, spec.size, spec.start_s, spec.count) == (0.5, 3, 0.0, 2)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("size=5", "missing every"),
        ("every=1s", "missing size"),
        ("every=0s,size=5", "every must be above 0 s"),
        ("every=1s,size=0", "size must be a whole number of at least 1"),
        ("every=1s,size=5,often=yes", "expected every=DURATION,size=N"),
        ("every=1s,every=2s,size=1", "every given twice"),
        ("every=soon,size=1", "duration"),
    ],
)
def test_bad_specs_say_why(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_burst(text)


def test_waves_and_shares() -> None:
    spec = parse_burst("every=10s,size=7,start=5s")
    assert list(wave_offsets(spec, 40)) == [(0, 5.0), (1, 15.0), (2, 25.0), (3, 35.0)]
    assert list(wave_offsets(parse_burst("every=1s,size=1,count=2"))) == [(0, 1.0), (1, 2.0)]
    for workers in (1, 2, 3, 7, 10):
        shares = [wave_share(7, w, workers) for w in range(workers)]
        assert sum(shares) == 7 and max(shares) - min(shares) <= 1


def test_the_option_reaches_the_plan_and_bad_values_are_one_line() -> None:
    config = build_config({"burst": "every=30s,size=20", "ramp": "1,2"}, environ={})
    plan = build_load_plan(config.load)
    assert plan.burst is not None and plan.burst.size == 20 and plan.describe()["burst"]["every_s"] == 30.0
    assert build_config({"burst": ""}, environ={}).load.burst is None
    with pytest.raises(ConfigError) as info:
        build_config({"burst": "every=1s"}, environ={})
    assert str(info.value).startswith("--burst 'every=1s': missing size") and "\n" not in str(info.value)


def _row(wave: int | None, start: float, ttft: float | None, e2e: float | None, outcome: str = "ok") -> dict:
    row = {"request_id": str(start), "outcome": outcome, "start_time": start, "ttft": ttft, "e2e": e2e}
    if wave is not None:
        row.update(burst=wave, burst_at=100.0 + 10 * wave)
    return row


def test_burst_block_drain_times() -> None:
    rows = [_row(0, 100.0, 0.1, 1.0), _row(0, 100.01, 0.5, 2.0), _row(None, 100.0, 0.05, 0.5)]
    rows += [_row(1, 110.0, 0.2, 0.4), _row(1, 110.0, None, 3.0, "incomplete")]
    block = summarize(rows, 20.0)["bursts"]
    assert (block["waves"], block["requests"], block["completed"]) == (2, 4, 3)
    first, second = block["per_wave"]
    assert first["queue_drain_s"] == pytest.approx(0.51) and first["drain_s"] == pytest.approx(2.01)
    # a wave with a request that never got a first token has not drained: not a number
    assert second["queue_drain_s"] is None and second["drain_s"] is None
    assert block["max_queue_drain_s"] == pytest.approx(0.51)
    assert "bursts" not in summarize([_row(None, 1.0, 0.1, 0.2)], 1.0)
