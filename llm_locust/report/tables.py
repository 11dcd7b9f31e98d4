"""The report's text parts as HTML: verdicts, the stage table, errors, configuration (pure; every
value is escaped). The side-by-side differences of ``--compare`` are :mod:`llm_locust.report.compare`'s."""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape

from llm_locust.config.slo import SloKind
from llm_locust.report.data import RunData
from llm_locust.results.headline import headline
from llm_locust.results.summary_blocks import LittlesLaw, SloLine
from llm_locust.results.summary_model import StageRow, Stats

__all__ = ["config_block", "errors_table", "fmt", "stage_table", "table", "verdict_block"]


def fmt(value: object, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return escape(str(value))


def table(head: Sequence[str], rows: Sequence[Sequence[str]], cls: str = "") -> str:
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def _badge(verdict: str | None) -> str:
    if not verdict:
        return "-"
    return f'<span class="badge {escape(verdict)}">{escape(verdict)}</span>'


def _interval(o: SloLine) -> str:
    lo, hi = [*o.interval, None, None][:2]
    if lo is None and hi is None:
        return "-"
    scale, unit = _unit(o)
    low = "-∞" if lo is None else f"{lo * scale:,.1f}"
    high = "∞" if hi is None else f"{hi * scale:,.1f}"
    return f"[{low} … {high}] {unit}"


def _unit(o: SloLine) -> tuple[float, str]:
    name = o.name
    if name == "success" or name.startswith(("kv_cache", "error_rate")):
        return 100.0, "%"
    if o.kind == SloKind.SERVER or name.startswith("waiting"):
        return 1.0, ""
    return 1000.0, "ms"


def verdict_block(run: RunData) -> str:
    """The answer first: capacity, the SLO verdict per objective with its interval, the drift."""
    s = run.model
    capacity = s.capacity or "no capacity verdict (no staged run with an SLO)"
    parts = [f'<p class="capacity">{escape(capacity)}</p>']
    if s.interrupted:  # the results cover the run until then, not what was asked for
        ended = s.interruption
        early = (
            f" The load ended early: {ended.after_s:.1f} s into the test"
            + (f" of the {ended.planned_s:.1f} s planned" if ended.planned_s else "")
            + "."
            if ended is not None and ended.early
            else ""
        )
        parts.insert(
            0, f'<p class="warn">Interrupted by {escape(s.interrupted_by or "?")}.{escape(early)}</p>'
        )
    judged = headline(s)
    if judged is not None:
        parts.append(f'<p class="headline">Answer: {_badge(str(judged[0]))} {escape(judged[1])}</p>')
    slo = s.slo
    if slo:
        rows = []
        for o in slo.objectives:
            scale, unit = _unit(o)
            measured = None if o.measured is None else f"{o.measured * scale:,.2f} {unit}"
            rows.append(
                [
                    escape(o.objective),
                    fmt(measured),
                    _interval(o),
                    fmt(o.n),
                    _badge(o.verdict.value),
                    escape(o.note or ""),
                ]
            )
        parts.append(
            f"<p>SLO over the whole run: {_badge(slo.verdict.value)} "
            f"(point estimate: {'pass' if slo.passed else 'fail'}; "
            f"goodput {fmt(slo.goodput_rps, 2)} req/s)</p>"
        )
        parts.append(table(["objective", "measured", "95 % interval", "n", "verdict", "note"], rows))
    badge = _badge(run.drift.verdict.value)
    parts.append(f'<p class="drift">Soak: {badge} {escape(run.drift.text)}</p>')
    return "\n".join(parts)


def stage_table(run: RunData) -> str:
    head = [
        "stage",
        "ok",
        "failed",
        "req/s",
        "out tok/s",
        "TTFT p50",
        "TTFT p95",
        "TTFT p99",
        "TPOT p50",
        "ITL p50",
        "ITL 0 ms gaps",
        "E2E p95",
        "in flight",
        "verdict",
    ]
    rows = []
    stages = run.model.stages or []
    scopes: list[tuple[str, Stats, StageRow | None]] = [(st.label, st, st) for st in stages]
    for label, s, stage in scopes or [("whole run", run.model, None)]:
        law = (stage.littles_law if stage is not None else None) or LittlesLaw()
        reason = (stage.invalid_reason if stage is not None else None) or ""
        verdict = stage.verdict if stage is not None else None
        rows.append(
            [
                escape(label),
                fmt(s.completed),
                fmt(s.failed),
                fmt(s.request_throughput, 2),
                fmt(s.output_throughput),
                *(fmt(s.ms(stat, name)) for stat, name in _STAGE_LATENCIES),
                _percent(s.itl_zero_gap_share),
                fmt(s.ms("p95", "e2el")),
                fmt(law.mean_in_flight, 2),
                _badge(None if verdict is None else verdict.value)
                + (f" <small>{escape(reason)}</small>" if reason else ""),
            ]
        )
    return (
        table(head, rows, "stages")
        + '<p class="muted">latencies in ms; ITL 0 ms gaps: share of inter-token gaps of 0 ms (stream '
        "events that arrived in one read; they pull the low ITL percentiles to 0); in flight: "
        "time-weighted mean over the measured window</p>"
    )


#: The stage table's latency columns: (statistic, latency).
_STAGE_LATENCIES = (("p50", "ttft"), ("p95", "ttft"), ("p99", "ttft"), ("p50", "tpot"), ("p50", "itl"))


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{share * 100:.0f} %"


def errors_table(run: RunData) -> str:
    errors = run.model.errors
    counts = run.model.errors_by_class or (errors if isinstance(errors, dict) else {})
    if not counts:
        return "<p>No failed requests.</p>"
    rows = []
    for name, count in sorted(counts.items(), key=lambda kv: -kv[1]):
        messages = "<br>".join(
            f"{escape(m or '(no message)')} <small>× {n}</small>" for m, n in run.messages.get(name, [])
        )
        rows.append([escape(name), fmt(count), messages])
    return table(["class", "requests", "most frequent messages"], rows)


def config_block(run: RunData) -> str:
    text = json.dumps(run.model.config, indent=2, sort_keys=True, default=str)
    return (
        f"<details><summary>Configuration of {escape(run.name)}</summary><pre>{escape(text)}</pre></details>"
    )
