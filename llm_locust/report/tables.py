"""The report's text parts as HTML: verdicts, the stage table, errors, configuration, and the
side-by-side differences of ``--compare`` (pure; every value is escaped)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from typing import Any

from llm_locust.report.data import RunData

__all__ = ["compare_table", "config_block", "errors_table", "stage_table", "verdict_block"]


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return escape(str(value))


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], cls: str = "") -> str:
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def _badge(verdict: str | None) -> str:
    if not verdict:
        return "-"
    return f'<span class="badge {escape(verdict)}">{escape(verdict)}</span>'


def _interval(o: dict[str, Any]) -> str:
    lo, hi = [*(o.get("interval") or ()), None, None][:2]
    if lo is None and hi is None:
        return "-"
    scale, unit = _unit(o)
    low = "-∞" if lo is None else f"{lo * scale:,.1f}"
    high = "∞" if hi is None else f"{hi * scale:,.1f}"
    return f"[{low} … {high}] {unit}"


def _unit(o: dict[str, Any]) -> tuple[float, str]:
    name = o.get("name", "")
    if name == "success" or name.startswith(("kv_cache", "error_rate")):
        return 100.0, "%"
    if o.get("kind") == "server" or name.startswith("waiting"):
        return 1.0, ""
    return 1000.0, "ms"


def verdict_block(run: RunData) -> str:
    """The answer first: capacity, the SLO verdict per objective with its interval, the drift."""
    s = run.summary
    capacity = s.get("capacity") or "no capacity verdict (no staged run with an SLO)"
    parts = [f'<p class="capacity">{escape(str(capacity))}</p>']
    slo = s.get("slo")
    if slo:
        verdict = slo.get("verdict") or ("pass" if slo.get("passed") else "fail")
        rows = []
        for o in slo.get("objectives", []):
            scale, unit = _unit(o)
            measured = None if o.get("measured") is None else f"{o['measured'] * scale:,.2f} {unit}"
            rows.append(
                [
                    escape(o["objective"]),
                    _fmt(measured),
                    _interval(o),
                    _fmt(o.get("n")),
                    _badge(o.get("verdict")),
                    escape(o.get("note", "")),
                ]
            )
        parts.append(
            f"<p>SLO over the whole run: {_badge(verdict)} "
            f"(point estimate: {'pass' if slo.get('passed') else 'fail'}; "
            f"goodput {_fmt(slo.get('goodput_rps'), 2)} req/s)</p>"
        )
        parts.append(_table(["objective", "measured", "95 % interval", "n", "verdict", "note"], rows))
    drift = run.drift or {}
    parts.append(
        f'<p class="drift">Soak: {_badge(drift.get("verdict"))} {escape(str(drift.get("text", "")))}</p>'
    )
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
        "E2E p95",
        "in flight",
        "verdict",
    ]
    rows = []
    for s in run.stages or [{**run.summary, "label": "whole run"}]:
        law = s.get("littles_law") or {}
        reason = s.get("invalid_reason") or ""
        rows.append(
            [
                escape(str(s.get("label", ""))),
                _fmt(s.get("completed")),
                _fmt(s.get("failed")),
                _fmt(s.get("request_throughput"), 2),
                _fmt(s.get("output_throughput")),
                *(
                    _fmt(s.get(k))
                    for k in (
                        "p50_ttft_ms",
                        "p95_ttft_ms",
                        "p99_ttft_ms",
                        "p50_tpot_ms",
                        "p50_itl_ms",
                        "p95_e2el_ms",
                    )
                ),
                _fmt(law.get("mean_in_flight"), 2),
                _badge(s.get("verdict")) + (f" <small>{escape(reason)}</small>" if reason else ""),
            ]
        )
    return (
        _table(head, rows, "stages")
        + '<p class="muted">latencies in ms; in flight: time-weighted mean over the measured window</p>'
    )


def errors_table(run: RunData) -> str:
    counts = run.summary.get("errors_by_class") or (
        run.summary.get("errors") if isinstance(run.summary.get("errors"), dict) else {}
    )
    if not counts:
        return "<p>No failed requests.</p>"
    rows = []
    for name, count in sorted(counts.items(), key=lambda kv: -kv[1]):
        messages = "<br>".join(
            f"{escape(m or '(no message)')} <small>× {n}</small>" for m, n in run.messages.get(name, [])
        )
        rows.append([escape(name), _fmt(count), messages])
    return _table(["class", "requests", "most frequent messages"], rows)


def config_block(run: RunData) -> str:
    config = run.summary.get("config") or {}
    text = json.dumps(config, indent=2, sort_keys=True, default=str)
    return (
        f"<details><summary>Configuration of {escape(run.name)}</summary><pre>{escape(text)}</pre></details>"
    )


_COMPARED = (
    ("completed", "completed requests", 0),
    ("failed", "failed requests", 0),
    ("request_throughput", "req/s", 2),
    ("output_throughput", "output tok/s", 1),
    ("p50_ttft_ms", "TTFT p50 (ms)", 1),
    ("p95_ttft_ms", "TTFT p95 (ms)", 1),
    ("p99_ttft_ms", "TTFT p99 (ms)", 1),
    ("p50_tpot_ms", "TPOT p50 (ms)", 2),
    ("p95_tpot_ms", "TPOT p95 (ms)", 2),
    ("p50_itl_ms", "ITL p50 (ms)", 2),
    ("p95_e2el_ms", "E2E p95 (ms)", 1),
    ("p99_e2el_ms", "E2E p99 (ms)", 1),
)


def compare_table(a: RunData, b: RunData) -> str:
    """A against B, run level and per stage of the same label: values, difference, change."""
    pairs = [("whole run", a.summary, b.summary)]
    b_stages = {s.get("label"): s for s in b.stages}
    pairs += [
        (str(s.get("label")), s, b_stages[s.get("label")]) for s in a.stages if s.get("label") in b_stages
    ]
    rows = []
    for scope, x, y in pairs:
        for key, label, digits in _COMPARED:
            va, vb = x.get(key), y.get(key)
            delta = None if va is None or vb is None else vb - va
            change = None if delta is None or not va else delta / va * 100
            rows.append(
                [
                    escape(scope),
                    escape(label),
                    _fmt(va, digits),
                    _fmt(vb, digits),
                    _signed(delta, digits),
                    _signed(change, 1, "%"),
                ]
            )
    head = ["scope", "metric", escape(a.name) + " (A)", escape(b.name) + " (B)", "B − A", "change"]
    return _table(head, rows, "compare")


def _signed(value: float | None, digits: int, unit: str = "") -> str:
    return "-" if value is None else f"{value:+,.{digits}f}{unit}"
