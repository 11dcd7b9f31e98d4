"""The simulator's injected faults: their kinds, the seeded draw and the fault counter."""

from __future__ import annotations

import random
from collections import Counter

from llm_locust.sim.faults import FAULT_KINDS, FaultConfig, FaultKind
from llm_locust.sim.metrics import Metrics


def test_a_fault_is_its_kind_s_member_in_the_order_of_the_rates() -> None:
    assert FAULT_KINDS == ("error", "rate_limit", "unavailable", "disconnect", "malformed", "stall")
    assert [kind.value for kind in FaultKind] == list(FAULT_KINDS)  # the slices of the draw
    config = FaultConfig(error=0.1, rate_limit=0.1, unavailable=0.1, disconnect=0.1, malformed=0.1, stall=0.1)
    rng = random.Random(11)
    plans = [config.decide(rng, 5) for _ in range(600)]
    drawn = [p for p in plans if p is not None]
    assert all(type(p.kind) is FaultKind and 1 <= p.at <= 4 for p in drawn)
    assert set(Counter(p.kind for p in drawn)) == set(FaultKind)  # every kind, about 60 each
    only = FaultConfig(stall=1.0).decide(random.Random(1), 1)
    assert only is not None and (only.kind, only.at) == (FaultKind.STALL, 0)
    assert FaultConfig().decide(random.Random(1), 5) is None


def test_the_fault_counter_names_each_kind_by_its_value() -> None:
    metrics = Metrics("m", lambda: {"running": 0, "waiting": 0, "kv": 0.0}, {"mode": "fixed"})
    for kind in (FaultKind.STALL, FaultKind.ERROR, FaultKind.STALL):
        metrics.fault(kind)
    lines = [line for line in metrics.render().splitlines() if line.startswith("llm_sim_faults_total")]
    assert lines == [
        'llm_sim_faults_total{kind="error",model_name="m"} 1',
        'llm_sim_faults_total{kind="stall",model_name="m"} 2',
    ]
