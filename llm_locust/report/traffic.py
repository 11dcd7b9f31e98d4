"""The report's "Modern traffic" table: reasoning phases, tool calls (issue 28), cancelled
requests, prefix-cache hits, bursts (issue 16), read from the summary's own keys
(:mod:`llm_locust.results.traffic`).

Every part is shown only when the run has it: visible TTFT and the token split with a
``reasoning`` block, the tool-call timings with a ``tools`` block, a cancelled line when some
request was cancelled, hit ratios with a ``prefix_cache`` block (per stage when the stages
have one), waves with a ``bursts`` block.
A plain chat run has none of them, and its report no such section (pure; values escaped).
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from llm_locust.report.data import RunData
from llm_locust.report.tables import fmt, table

__all__ = ["has_traffic", "traffic_table", "visible_ttft_lines"]

_LATENCY_PCTS = (50, 90, 95, 99)
_TOKEN_PCTS = (50, 90, 99)


def has_traffic(run: RunData) -> bool:
    """Whether the run has anything for the "Modern traffic" table."""
    s = run.summary
    keys = ("reasoning", "tools", "prefix_cache", "bursts", "cancelled")
    return any(s.get(key) for key in keys)


def traffic_table(run: RunData) -> str:
    """The parts of the table the run has ("" for none)."""
    s = run.summary
    parts = [_reasoning(s), _tools(s), _cancelled(s), _cache(run), _bursts(s)]
    return "\n".join(p for p in parts if p)


def visible_ttft_lines(
    points: Mapping[str, Any], labels: list[str], name: str, color: str
) -> list[dict[str, Any]]:
    """The visible TTFT P50 / P95 per stage (the summary's ``pNN_ttft_visible_ms``) as two more
    lines of the TTFT chart, when the run had a reasoning phase (``points``: label -> StagePoint)."""
    if not any(p.entry.get("reasoning") for p in points.values()):
        return []
    lines = []
    for q, style in ((50, "solid"), (95, "dashed")):
        values = [points[c].entry.get(f"p{q}_ttft_visible_ms") if c in points else None for c in labels]
        lines.append(
            {
                "name": f"{name} P{q}",
                "type": "line",
                "data": [None if v is None else round(float(v), 3) for v in values],
                "lineStyle": {"type": style, "color": color},
                "itemStyle": {"color": color},
                "symbol": "diamond",
                "connectNulls": False,
            }
        )
    return lines


def _reasoning(s: Mapping[str, Any]) -> str:
    block = s.get("reasoning")
    if not block:
        return ""
    ttft = [
        [escape(label), *(fmt(s.get(f"p{q}_{key}_ms")) for q in _LATENCY_PCTS)]
        for label, key in (("TTFT (any token)", "ttft"), ("visible TTFT (first content)", "ttft_visible"))
    ]
    tokens = [
        [
            escape(label),
            fmt(block.get(f"mean_{key}")),
            *(fmt(block.get(f"p{q}_{key}")) for q in _TOKEN_PCTS),
        ]
        for label, key in (("reasoning tokens", "reasoning_tokens"), ("answer tokens", "answer_tokens"))
    ]
    sources = ", ".join(f"{escape(str(k))} {fmt(v)}" for k, v in (block.get("sources") or {}).items())
    batched = block.get("first_chunk_batched") or 0
    note = (
        f"<p>Requests with reasoning: {fmt(block.get('with_reasoning'))} of {fmt(block.get('requests'))}; "
        f"reasoning counts from: {sources or '-'}; first content chunks with several tokens: {fmt(batched)}"
        + (" (visible TTFT includes their decode time)" if batched else "")
        + "</p>"
    )
    return (
        table(["latency (ms)", *(f"P{q}" for q in _LATENCY_PCTS)], ttft, "traffic-ttft")
        + table(["tokens per request", "mean", *(f"P{q}" for q in _TOKEN_PCTS)], tokens, "traffic-tokens")
        + note
    )


def _tools(s: Mapping[str, Any]) -> str:
    """Tool calls (``--tools``): their two timings and how many, from the summary's keys."""
    block = s.get("tools")
    if not block:
        return ""
    rows = [
        [escape(label), *(fmt(s.get(f"p{q}_{key}_ms")) for q in _LATENCY_PCTS)]
        for label, key in (
            ("first tool call", "time_to_first_tool_call"),
            ("tool arguments complete", "time_to_tool_args_complete"),
        )
    ]
    return table(["tool calls (ms)", *(f"P{q}" for q in _LATENCY_PCTS)], rows, "traffic-tools") + (
        f'<p class="muted">offered tools: {fmt(block.get("requests_offered"))}; answered with a tool call: '
        f"{fmt(block.get('requests_with_tool_calls'))} ({fmt(block.get('tool_calls'))} calls); arguments "
        f"parse as JSON: {_pct(block.get('args_json_ok_share'))}. A tool-call piece is not content: "
        "TTFT covers text only</p>"
    )


def _cancelled(s: Mapping[str, Any]) -> str:
    cancelled = int(s.get("cancelled") or 0)
    if not cancelled:
        return ""
    sent = sum(int(s.get(k) or 0) for k in ("completed", "failed", "incomplete", "cancelled"))
    return (
        f'<p class="traffic-cancelled">Cancelled by the client: {cancelled} of {sent} requests '
        f"({cancelled / sent * 100:.1f} %), counted neither as served nor as failed</p>"
    )


def _cache(run: RunData) -> str:
    s = run.summary
    if not s.get("prefix_cache"):
        return ""
    scopes = [(str(st.get("label", "")), st) for st in run.stages if st.get("prefix_cache")]
    rows = [_cache_row(label, entry) for label, entry in [*scopes, ("whole run", s)]]
    head = ["scope", "reporting", "hits", "hit ratio (requests)", "hit ratio (tokens)"]
    head += ["TTFT P50 hit", "TTFT P95 hit", "TTFT P50 miss", "TTFT P95 miss"]
    return table(head, rows, "traffic-cache") + '<p class="muted">prefix cache: TTFT in ms</p>'


def _cache_row(label: str, entry: Mapping[str, Any]) -> list[str]:
    cache = entry["prefix_cache"]
    return [
        escape(label),
        fmt(cache.get("requests_reporting")),
        fmt(cache.get("hits")),
        _pct(cache.get("hit_ratio")),
        _pct(cache.get("token_hit_ratio")),
        *(fmt(entry.get(f"p{q}_ttft_cache_{kind}_ms")) for kind in ("hit", "miss") for q in (50, 95)),
    ]


def _bursts(s: Mapping[str, Any]) -> str:
    bursts = s.get("bursts")
    if not bursts:
        return ""
    ttft = [
        [escape(label), *(fmt(s.get(f"p{q}_ttft_{key}_ms")) for q in (50, 95))]
        for label, key in (("burst requests", "burst"), ("base load", "base"))
    ]
    waves = [
        [
            fmt(w.get("wave")),
            fmt(w.get("sent")),
            fmt(w.get("ok")),
            fmt(w.get("queue_drain_s"), 3),
            fmt(w.get("drain_s"), 3),
        ]
        for w in bursts.get("per_wave") or []
    ]
    return (
        table(["TTFT (ms)", "P50", "P95"], ttft, "traffic-bursts")
        + table(["wave", "sent", "ok", "queue_drain_s", "drain_s"], waves, "traffic-waves")
        + '<p class="muted">queue_drain_s: from the wave until its last request got its first token; '
        "drain_s: until its last request finished (- when some request of the wave did not)</p>"
    )


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f} %"
