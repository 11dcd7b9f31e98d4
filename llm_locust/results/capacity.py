"""The capacity side of a summary: concurrency against users, the demand's verdict, the replicas.

- ``concurrency``: users are not concurrency. Over the run's span: the peak user count, the
  time-weighted mean and the peak of requests in flight, the arrival rate and the mean E2E
  (Little's law: mean in flight = arrival rate x mean E2E), and for closed-loop users with a
  think time the law's closed-loop form, ``users x W / (W + Z)`` (``W`` mean E2E, ``Z`` mean
  think time), next to what was measured.
- ``demand``: capacity against ``--demand`` in its unit (see :mod:`llm_locust.results.plans`),
  from a search's probes or a ramp's stages: the capacity, the headroom, whether it is met.
- ``replicas``: per replica of ``--endpoints``, its share of the requests, errors, TTFT and E2E
  percentiles, so skew between replicas shows; when the servers report ``cached_tokens``, each
  replica's prefix-cache ``token_hit_ratio`` (cached / prompt tokens of its successes).

Pure module: no Locust, no network.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from llm_locust.config.demand import Demand, DemandKind
from llm_locust.config.stage_kind import StageKind
from llm_locust.load.search import Verdict
from llm_locust.record import OK
from llm_locust.results.columns import Columns
from llm_locust.results.concurrency import littles_law, peak_in_flight
from llm_locust.results.cost import headroom
from llm_locust.results.inclusion import Coverage, row_covers
from llm_locust.results.probe import show_value
from llm_locust.results.search_model import JudgedStep, SearchResult, SloTerm
from llm_locust.results.summary_blocks import DemandBlock
from llm_locust.results.summary_model import RunSummary

__all__ = [
    "amount",
    "capacity_lines",
    "concurrency_block",
    "demand_block",
    "format_search_table",
    "measure",
    "replica_block",
    "stage_probes",
]


def concurrency_block(
    cols: Columns, start: float, stop: float, peak_users: int, think_mean: float
) -> dict[str, Any]:
    """Users, in flight (time-weighted mean and peak), arrivals and Little's law while the load
    ran: from the first request sent to the last one ended, within ``[start, stop]`` (the test's
    start-up and its drain are no part of it)."""
    out: dict[str, Any] = {
        "peak_users": peak_users,
        "peak_in_flight": peak_in_flight(cols.start, cols.e2e),
        "think_time_mean_s": think_mean,
    }
    known = ~np.isnan(cols.e2e)
    if known.any():
        start = max(start, float(cols.start[known].min()))
        stop = min(stop, float((cols.start[known] + cols.e2e[known]).max()))
    out["span_s"] = max(stop - start, 0.0)
    if stop <= start:
        return out
    law = littles_law(cols.start, cols.e2e, start, stop)
    out.update(
        {
            "mean_in_flight": law["mean_in_flight"],
            "arrival_rate": law["arrival_rate"],
            "mean_e2e_s": law["mean_e2e"],
            "littles_law_product": law["product"],
        }
    )
    w = law["mean_e2e"]
    if think_mean > 0 and w is not None and peak_users:
        out["closed_loop_expected_in_flight"] = peak_users * w / (w + think_mean)
    return out


def stage_probes(stages: Sequence[dict[str, Any]]) -> list[JudgedStep]:
    """A ramp's judged stages as search steps (level, verdict, load measures)."""
    return [
        JudgedStep(
            index=s["index"],
            label=s["label"],
            level=s["target"],
            verdict=s["verdict"],
            mean_in_flight=(s.get("littles_law") or {}).get("mean_in_flight"),
            request_throughput=s["request_throughput"],
        )
        for s in stages
        if s.get("verdict") is not None
    ]


def _load_in(
    demand: Demand,
    level: float | None,
    mean_in_flight: float | None,
    request_throughput: float | None,
    by_level: bool,
) -> float | None:
    """A judged step's load in the demand's unit. ``by_level``: the search ran in the demand's
    unit (users; concurrency by users that do not think, each holding one request in flight; a
    rate), so the step's level is that load, one number everywhere. Else: mean in flight,
    completed req/s, or users."""
    if by_level:
        return level
    if demand.kind is DemandKind.CONCURRENCY:
        return mean_in_flight
    if demand.kind is DemandKind.RATE:
        return request_throughput
    return level


def measure(demand: Demand, step: JudgedStep, by_level: bool = False) -> float | None:
    """A search step's load in the demand's unit (:func:`_load_in`)."""
    return _load_in(demand, step.level, step.mean_in_flight, step.request_throughput, by_level)


def amount(kind: str, value: float) -> str:
    """A load in a demand's unit (a :class:`DemandKind` or its value), the one way every view shows
    it: ``22 concurrent``, ``21.9 concurrent`` (a measured mean), ``2.5 req/s``, ``400 users``."""
    unit = DemandKind(kind)
    rate = unit is DemandKind.RATE
    number = f"{value:g}" if value == round(value) else f"{value:.1f}" if not rate else f"{value:.3g}"
    return {DemandKind.CONCURRENCY: f"{number} concurrent", DemandKind.RATE: f"{number} req/s"}.get(
        unit, f"{number} users"
    )


def bracket(kind: str, capacity: float, below: float | None) -> str:
    """A capacity as every view says it: :func:`amount`, or, for a search that stopped at a coarser
    precision (it cannot meet the demand), the bracket: ``24 to under 28 concurrent``."""
    if below is None:
        return amount(kind, capacity)
    return f"{amount(kind, capacity).split(' ')[0]} to under {amount(kind, below)}"


def demand_block(
    demand: Demand,
    probes: Sequence[JudgedStep],
    kind: StageKind | None,
    withheld: str | None = None,
    by_level: bool = False,
) -> DemandBlock:
    """Capacity against the demand, from the judged steps (a search's probes or a ramp's stages);
    ``withheld``: the search's answer was withheld (invalid steps), so none is given here either.
    Its typed keys (``text``, ``meets``) first, then the demand as given and what it was met with."""
    fails = [p.level for p in probes if p.verdict in (Verdict.FAIL, Verdict.INCONCLUSIVE)]
    lowest_fail = min(fails) if fails else None
    passes = [
        p for p in probes if p.verdict == Verdict.PASS and (lowest_fail is None or p.level < lowest_fail)
    ]
    if withheld:
        passes = []
    best = max(passes, key=lambda p: p.level, default=None)
    capacity = None if best is None else measure(demand, best, by_level)
    meets = any((measure(demand, p, by_level) or 0.0) >= demand.value for p in passes)
    room = headroom(capacity, demand.value)
    if withheld:
        text = f"not judged against {demand.text()}: {withheld}"
    elif best is None or capacity is None:
        text = f"no step met the SLO: {demand.text()} is not met"
    elif meets:
        text = f"meets {demand.text()}: capacity {amount(demand.kind, capacity)} ({room:+.0%} headroom)"
    else:
        text = f"does not meet {demand.text()}: capacity {amount(demand.kind, capacity)} ({room:+.0%})"
    if demand.kind is DemandKind.USERS and kind is StageKind.USERS and demand.think:
        text += f"; users measured with their think time ({demand.think})"
    block = DemandBlock(
        text=text,
        meets=meets,
        unit=demand.kind.value,
        capacity=capacity,
        capacity_stage=None if best is None else best.index,
        headroom=room,
    )
    return block.model_copy(update=demand.to_json())  # the demand's own keys, those it has


def replica_block(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Per replica: requests and their share, completed, failed by class, TTFT and E2E percentiles
    (ms), over the records of ``rows`` the summary's own numbers cover (``Coverage.REQUESTS``,
    the latencies ``Coverage.LATENCY``: :mod:`llm_locust.results.inclusion`)."""
    by: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        if r.get("replica") is not None and row_covers(Coverage.REQUESTS, r):
            by.setdefault(r["replica"], []).append(r)
    total = sum(len(v) for v in by.values())
    out = {}
    for replica in sorted(by):
        own = by[replica]
        ok = [r for r in own if r.get("outcome") == OK]
        timed = [r for r in ok if row_covers(Coverage.LATENCY, r)]
        entry: dict[str, Any] = {
            "requests": len(own),
            "share": len(own) / total if total else None,
            "completed": len(ok),
            "failed": len(own) - len(ok),
            "errors": dict(sorted(Counter(r["outcome"] for r in own if r.get("outcome") != OK).items())),
        }
        for name, key in (("ttft", "ttft"), ("e2el", "e2e")):
            values = np.array([r[key] for r in timed if r.get(key) is not None], dtype=float) * 1000.0
            for p in (50, 95, 99):
                entry[f"p{p}_{name}_ms"] = float(np.percentile(values, p)) if values.size else None
        reporting = [r for r in ok if r.get("cached_tokens") is not None]
        if reporting:  # the replica's own prefix cache: its cached share of prompt tokens
            prompt = sum(int(r.get("prompt_tokens") or 0) for r in reporting)
            cached = sum(int(r["cached_tokens"]) for r in reporting)
            entry["cached_tokens"], entry["prompt_tokens"] = cached, prompt
            entry["token_hit_ratio"] = cached / prompt if prompt else None
        out[replica] = entry
    return out


def _term(term: SloTerm) -> str:
    margin = "" if term.margin is None else f" ({term.margin:+.0%})"
    return f"{show_value(term.name, term.value, term.threshold)}{margin}"


def format_search_table(search: SearchResult) -> str:
    """Every probe of a capacity search: level, how it was chosen, throughput, each SLO term's
    value and margin, verdict; then the bracket and why the search stopped."""
    names = [t.name for t in (search.steps[0].terms if search.steps else [])]
    head = f"{'step':<5}{'level':<12}{'phase':<8}{'reqs':>6}{'req/s':>8}{'out tok/s':>10}{'goodput':>9}"
    head += "".join(f"{name + ' (margin)':>22}" for name in names) + f"{'verdict':>14}"
    lines = [
        f"capacity search ({search.kind.value} from {search.min:g}, {search.precision:.0%} precision):",
        head,
        "-" * len(head),
    ]
    for i, p in enumerate(search.steps, 1):
        verdict = p.verdict + (f" +{p.extensions}x" if p.extensions else "")
        phase = "" if p.phase is None else p.phase.value
        lines.append(
            f"{i:<5}{p.label[:11]:<12}{phase[:7]:<8}{p.requests:>6}"
            f"{p.request_throughput:>8.2f}{p.output_throughput:>10.1f}{p.goodput_rps:>9.2f}"
            + "".join(f"{_term(t):>22}" for t in p.terms)
            + f"{verdict:>14}"
        )
    for p in search.steps:
        if p.verdict != Verdict.PASS and p.reason:
            lines.append(f"{p.label}: {p.verdict}: {p.reason}")
    return "\n".join(lines)


def capacity_lines(summary: RunSummary) -> list[str]:
    """The end-of-run lines for the search, the demand, users against concurrency, the replicas."""
    lines = []
    if summary.search:
        lines.append(format_search_table(summary.search))
    if summary.demand:
        lines.append(f"demand: {summary.demand.text}")
    conc = summary.concurrency
    if conc is not None and conc.mean_in_flight is not None:
        text = (
            f"concurrency: {conc.peak_users} users, {conc.mean_in_flight:.2f} requests in flight on "
            f"average (peak {conc.peak_in_flight}), {conc.arrival_rate or 0.0:.2f} req/s arriving"
        )
        if conc.mean_e2e_s is not None:
            text += f", mean E2E {conc.mean_e2e_s:.2f} s (L=λW {conc.littles_law_product or 0.0:.2f})"
        if conc.closed_loop_expected_in_flight is not None:
            text += (
                f"; think {conc.think_time_mean_s or 0.0:.2f} s mean: users x W/(W+Z) = "
                f"{conc.closed_loop_expected_in_flight:.2f}"
            )
        lines.append(text)
    if summary.replicas:
        lines.append(
            f"{'replica':<32}{'share':>7}{'ok':>7}{'fail':>6}{'TTFT p50':>10}{'TTFT p95':>10}{'E2E p95':>10}"
        )
        for url, r in summary.replicas.items():
            lines.append(
                f"{url[:31]:<32}{r.share or 0.0:>7.1%}{r.completed:>7}{r.failed:>6}"
                f"{_ms(r.ms('p50', 'ttft')):>10}{_ms(r.ms('p95', 'ttft')):>10}{_ms(r.ms('p95', 'e2el')):>10}"
            )
    return lines


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"
