"""Deployment time: the numbers of a run against a simulator that ran ``k`` times faster than the
deployment it models (``llm-locust sim --speedup k``), as the deployment would have shown them.

A closed-loop test is time-scale invariant: at ``k`` x every duration is ``k`` times shorter and
every rate ``k`` times higher, while concurrency, counts, token lengths and ratios are the same.
So the conversion is by name: a number under a key ending in ``_ms`` or ``_s`` (a latency or a
duration) is multiplied by ``k``; a rate (``*_throughput``, ``*_per_s``, ``*_rps``, ``arrival_rate``,
the level of a rate search) divided by it; an SLO term's value, threshold and interval (all but
``success``) multiplied. Absolute times (``*_time``, epoch seconds) are dates, not durations,
and stay as they are.

Texts are never rescaled: a text with a latency in it is composed again from the converted
numbers, so no number is rounded and then scaled (3.245 s is 32.45 s, not "3.25 s" x 10). A
search (:func:`search_in_deployment_time`) and its steps (:func:`in_deployment_time`) are
converted as typed models: each step's terms, reason, the withheld answer and the sentence
composed from the exact values; an SLO line's text (``objective``) is the deployment's line
(:func:`llm_locust.config.slo.scaled_line`). The other texts of a summary carry no latency (a
shortfall is a count, a stop reason a fixed sentence), and the load generator's own health
(its event-loop lag) is its wall clock, as measured: they stay as written.

One scale per file (issue 22): ``capacity.json`` is all deployment time and says so in its
``time_scale`` block; a plan folder's own files (``summary.json``, ``requests.jsonl``) stay the
measured wall clock, and say so (``config.options.time_scale``), while its ``report.html`` is
drawn in deployment time with a note on the page.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

from llm_locust.config.slo import SloKind, parse_slo, scaled_line
from llm_locust.config.stage_kind import StageKind
from llm_locust.load.search import Verdict
from llm_locust.results.probe import composed_reason, term_line, why_text
from llm_locust.results.search_model import JudgedStep, SearchResult, SloTerm
from llm_locust.results.search_result import search_sentence, withheld_text

__all__ = [
    "capacity_time_scale",
    "deployment_row",
    "deployment_summary",
    "in_deployment_time",
    "scaled",
    "search_in_deployment_time",
    "speedup_of",
    "term_in_deployment_time",
]

_RATE_KEYS = frozenset(
    {
        "arrival_rate",
        "goodput_rps",
        "request_goodput",
        "request_rate",
        "achieved_request_rate",
        "sent_rate",
        "scheduled_rate",
        "spawn_rate",
        "tokens_per_user",
    }
)
_RATE_ENDINGS = ("_throughput", "_per_s", "_rps")
_DURATION_KEYS = frozenset({"duration", "mean_e2e", "seconds", "test_seconds"})
_KEEP = frozenset({"per_s"})  # a drift slope: a latency per second of run, the same in both clocks
_EPOCH_KEYS = frozenset({"start", "end", "t0", "plan_t0", "t"})
_EPOCH = 1e9  # seconds since 1970: a date (2001 on), never a duration
_TIMED = ("ttft", "tpot", "itl", "e2e")  # SLO terms whose values are latencies
#: Left as measured: the run's options as given, and the load generator's own health (its
#: event-loop lag and CPU are the client's wall clock, and validity is judged on them).
_AS_MEASURED = frozenset({"config", "client"})
#: A row's latencies and durations (seconds).
_ROW_SECONDS = (
    *("ttft", "tpot", "e2e", "ttft_visible", "client_stall_s", "send_lag", "intended_offset"),
    *("time_to_first_tool_call", "time_to_tool_args_complete"),
)


def _objective(text: str, k: float) -> str:
    """An SLO line's text in deployment time: the deployment's line (its threshold x ``k``)."""
    try:
        line = parse_slo([text]).lines[0]
    except ValueError:  # a server gauge's or drift's line: no latency in it
        return text
    return text if line.kind is not SloKind.REQUEST else scaled_line(line, 1 / k).text


def _is_rate(key: str) -> bool:
    return key in _RATE_KEYS or key.endswith(_RATE_ENDINGS)


def _is_duration(key: str) -> bool:
    return key in _DURATION_KEYS or key.endswith(("_ms", "_s"))


def _number(key: str, value: object, k: float, origin: float | None) -> object:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or key in _KEEP:
        return value
    if value > _EPOCH and (key in _EPOCH_KEYS or key.endswith("_time")):
        return value if origin is None else origin + (value - origin) * k
    if _is_rate(key):  # before the durations: "tokens_per_s" ends in "_s" too
        return value / k
    return value * k if _is_duration(key) else value


def _judged(line: Mapping[str, Any], out: dict[str, Any], k: float) -> None:
    """An SLO term or objective of a latency: its value, threshold and interval x ``k``."""
    if not str(line.get("name") or "").startswith(_TIMED):  # success, server gauges: no time
        return
    for key in ("value", "measured", "threshold"):
        if isinstance(out.get(key), (int, float)) and not isinstance(out.get(key), bool):
            out[key] = out[key] * k
    if out.get("interval") is not None:
        out["interval"] = [None if v is None else v * k for v in out["interval"]]


def scaled(data: Mapping[str, Any], k: float, origin: float | None = None) -> dict[str, Any]:
    """``data`` (a dict of dicts, lists and numbers) in deployment time, by key (see the module);
    ``origin``: the run's start, from which dates are stretched (``None``: dates stay)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in _AS_MEASURED:
            out[key] = value
        elif isinstance(value, Mapping):
            out[key] = scaled(value, k, origin)
        elif isinstance(value, list):
            out[key] = [
                scaled(v, k, origin) if isinstance(v, Mapping) else _number(key, v, k, origin) for v in value
            ]
        elif key == "objective" and isinstance(value, str):
            out[key] = _objective(value, k)
        else:
            out[key] = _number(key, value, k, origin)
    if "threshold" in data and "name" in data:
        _judged(data, out, k)
    if out.get("kind") == "rate" and isinstance(out.get("target"), (int, float)):  # a rate stage
        out["target"] = out["target"] / k
        out["label"] = f"rate={out['target']:g}"
    return out


_M = TypeVar("_M", bound=BaseModel)


def _changed(model: _M, **values: Any) -> _M:
    """``model`` with ``values`` for the fields it was built with (a key it never had stays out)."""
    return model.model_copy(update={k: v for k, v in values.items() if k in model.model_fields_set})


def _times(value: float | None, k: float) -> float | None:
    return None if value is None else value * k


def term_in_deployment_time(term: SloTerm, k: float) -> SloTerm:
    """An SLO term of a step measured ``k`` times faster, in deployment time: a latency line's
    value, threshold and interval x ``k``, its objective the deployment's line, and its why
    composed again from those exact values (never a rounded number scaled); a success ratio
    and the margin (a fraction of the threshold) have no time in them."""
    line = term_line(term)
    if k == 1 or line is None or line.metric == "success":
        return term
    real = scaled_line(line, 1 / k)
    interval = [_times(v, k) for v in term.interval]
    why = why_text(real, term.n, interval) if term.verdict == Verdict.INCONCLUSIVE and term.why else term.why
    return _changed(
        term,
        objective=real.text,
        threshold=real.threshold,
        value=_times(term.value, k),
        interval=interval,
        why=why,
    )


def in_deployment_time(step: JudgedStep, k: float, rate: bool = False) -> JudgedStep:
    """A search step measured against a simulator ``k`` times faster, in deployment time
    (``rate``: the step of a rate search, whose level is a rate): latencies and durations x
    ``k``, rates / ``k``, its terms converted and its reason composed again from them
    (:func:`~llm_locust.results.probe.composed_reason`); its client's health as measured."""
    if k == 1:
        return step
    terms = [term_in_deployment_time(t, k) for t in step.terms]
    facts = step.level_facts
    out = _changed(
        step,
        terms=terms,
        window_s=_times(step.window_s, k),
        median_tpot_ms=_times(step.median_tpot_ms, k),
        p95_ttft_ms=_times(step.p95_ttft_ms, k),
        p95_e2el_ms=_times(step.p95_e2el_ms, k),
        request_throughput=step.request_throughput / k,
        output_throughput=step.output_throughput / k,
        goodput_rps=step.goodput_rps / k,
        goodput_output_tokens_per_s=step.goodput_output_tokens_per_s / k,
        arrival_rate=None if step.arrival_rate is None else step.arrival_rate / k,
        level_facts=None
        if facts is None
        else _changed(
            facts,
            target_reached_s=_times(facts.target_reached_s, k),
            time_at_target_s=_times(facts.time_at_target_s, k),
        ),
    )
    if rate:
        out = _changed(out, level=step.level / k, label=f"rate={step.level / k:g}")
    return _changed(out, reason=composed_reason(out))


def search_in_deployment_time(search: SearchResult, k: float) -> SearchResult:
    """A search against a simulator ``k`` times faster, in deployment time: its steps converted
    (:func:`in_deployment_time`), a rate search's levels, bounds, capacity and demand / ``k``, its
    step time x ``k``, the withheld answer and the sentence composed again from the converted steps."""
    if k == 1:
        return search
    rate = search.kind is StageKind.RATE
    steps = [in_deployment_time(s, k, rate) for s in search.steps]
    by_index = {s.index: s for s in steps}

    def same(step: JudgedStep | None) -> JudgedStep | None:
        return None if step is None else by_index.get(step.index) or in_deployment_time(step, k, rate)

    def level(value: float | None) -> float | None:
        return value / k if rate and value is not None else value

    deciders = [
        _changed(d, level=by_index[d.index].level, label=by_index[d.index].label)
        if d.index in by_index
        else d
        for d in search.decided_by
    ]
    out = _changed(
        search,
        min=level(search.min),
        max=level(search.max),
        capacity=level(search.capacity),
        demand=level(search.demand),
        step_time_s=search.step_time_s * k,
        steps=steps,
        highest_pass=same(search.highest_pass),
        upper=same(search.upper),
        lowest_fail=same(search.lowest_fail),
        demand_step=same(search.demand_step),
        decided_by=deciders,
    )
    if out.withheld and steps:
        out = _changed(out, withheld=withheld_text(steps))
    return _changed(out, sentence=search_sentence(out))


def capacity_time_scale(scales: Mapping[str, float]) -> dict[str, Any]:
    """``capacity.json``'s ``time_scale`` block: which clock its numbers are in, and why."""
    factors = {name: k for name, k in scales.items() if k != 1}
    return {
        "clock": "deployment",
        "speedups": dict(scales),
        "note": (
            "every latency, duration and rate in this file is in deployment time: a plan measured "
            "against a simulator at --speedup K (speedups) has its latencies and durations x K and "
            "its rates / K; the plan folders' summary.json and requests.jsonl keep the measured wall "
            "clock, their report.html is drawn in deployment time"
            if factors
            else "every plan was measured in real time: wall clock and deployment time are the same"
        ),
    }


def speedup_of(summary: Mapping[str, Any]) -> float:
    """How many times faster than its deployment the run's target ran (``--target-speedup``)."""
    options = (summary.get("config") or {}).get("options") or {}
    value = options.get("target_speedup")
    return float(value) if isinstance(value, (int, float)) and value > 0 else 1.0


def deployment_summary(summary: Mapping[str, Any], k: float, origin: float) -> dict[str, Any]:
    """A run's summary in deployment time; its windows and drift left out (they are computed
    again from the converted records)."""
    search = summary.get("search")
    out = scaled(
        {key: v for key, v in summary.items() if key not in ("windows", "drift", "search")}, k, origin
    )
    if search is not None:  # typed: its texts composed again in deployment time
        real = search_in_deployment_time(SearchResult.model_validate(search), k)
        out["search"] = real.to_json()
        if summary.get("capacity") == search.get("sentence"):  # the run's answer is the search's sentence
            out["capacity"] = real.sentence
    config = dict(out.get("config") or {})  # as run, but for when it ran
    for key in ("start_time", "stop_time", "plan_t0"):
        config[key] = _number(key, config.get(key), k, origin)
    out["config"] = config
    out["time_scale"] = {"clock": "deployment", "target_speedup": k}
    return out


def deployment_row(row: Mapping[str, Any], k: float, origin: float) -> dict[str, Any]:
    """One record in deployment time: its latencies x ``k``, its start stretched from ``origin``."""
    out = dict(row)
    for key in _ROW_SECONDS:
        if isinstance(out.get(key), (int, float)):
            out[key] = out[key] * k
    if out.get("itl"):
        out["itl"] = [g * k for g in out["itl"]]
    if isinstance(out.get("start_time"), (int, float)):
        out["start_time"] = origin + (out["start_time"] - origin) * k
    return out
