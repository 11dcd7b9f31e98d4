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

from llm_locust.report.data import RunData
from llm_locust.report.echarts import Series
from llm_locust.report.points import StagePoint
from llm_locust.report.tables import fmt, table
from llm_locust.results.summary_blocks import PrefixCacheBlock
from llm_locust.results.summary_model import RunSummary, Stats

__all__ = ["has_traffic", "traffic_table", "visible_ttft_lines"]

_LATENCY_PCTS = (50, 90, 95, 99)
_TOKEN_PCTS = (50, 90, 99)


def has_traffic(run: RunData) -> bool:
    """Whether the run has anything for the "Modern traffic" table."""
    s = run.model
    return bool(s.reasoning or s.tools or s.prefix_cache or s.bursts or s.cancelled)


def traffic_table(run: RunData) -> str:
    """The parts of the table the run has ("" for none)."""
    s = run.model
    parts = [_reasoning(s), _tools(s), _cancelled(s), _cache(run), _bursts(s)]
    return "\n".join(p for p in parts if p)


def visible_ttft_lines(
    points: Mapping[str, StagePoint], labels: list[str], name: str, color: str
) -> list[Series]:
    """The visible TTFT P50 / P95 per stage (the summary's ``pNN_ttft_visible_ms``) as two more
    lines of the TTFT chart, when the run had a reasoning phase (``points``: label -> StagePoint)."""
    if not any(p.row.reasoning for p in points.values()):
        return []
    lines: list[Series] = []
    for q, style in ((50, "solid"), (95, "dashed")):
        values = [points[c].row.ms(f"p{q}", "ttft_visible") if c in points else None for c in labels]
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


def _reasoning(s: RunSummary) -> str:
    block = s.reasoning
    if not block:
        return ""
    ttft = [
        [escape(label), *(fmt(s.ms(f"p{q}", key)) for q in _LATENCY_PCTS)]
        for label, key in (("TTFT (any token)", "ttft"), ("visible TTFT (first content)", "ttft_visible"))
    ]
    reasoning = (block.mean_reasoning_tokens, block.p50_reasoning_tokens, block.p90_reasoning_tokens)
    answer = (block.mean_answer_tokens, block.p50_answer_tokens, block.p90_answer_tokens)
    tokens = [
        [escape("reasoning tokens"), *(fmt(v) for v in (*reasoning, block.p99_reasoning_tokens))],
        [escape("answer tokens"), *(fmt(v) for v in (*answer, block.p99_answer_tokens))],
    ]
    sources = ", ".join(f"{escape(str(k))} {fmt(v)}" for k, v in block.sources.items())
    batched = block.first_chunk_batched
    note = (
        f"<p>Requests with reasoning: {fmt(block.with_reasoning)} of {fmt(block.requests)}; "
        f"reasoning counts from: {sources or '-'}; first content chunks with several tokens: {fmt(batched)}"
        + (" (visible TTFT includes their decode time)" if batched else "")
        + "</p>"
    )
    return (
        table(["latency (ms)", *(f"P{q}" for q in _LATENCY_PCTS)], ttft, "traffic-ttft")
        + table(["tokens per request", "mean", *(f"P{q}" for q in _TOKEN_PCTS)], tokens, "traffic-tokens")
        + note
    )


def _tools(s: RunSummary) -> str:
    """Tool calls (``--tools``): their two timings and how many, from the summary."""
    block = s.tools
    if not block:
        return ""
    rows = [
        [escape(label), *(fmt(s.ms(f"p{q}", key)) for q in _LATENCY_PCTS)]
        for label, key in (
            ("first tool call", "time_to_first_tool_call"),
            ("tool arguments complete", "time_to_tool_args_complete"),
        )
    ]
    return table(["tool calls (ms)", *(f"P{q}" for q in _LATENCY_PCTS)], rows, "traffic-tools") + (
        f'<p class="muted">offered tools: {fmt(block.requests_offered)}; answered with a tool call: '
        f"{fmt(block.requests_with_tool_calls)} ({fmt(block.tool_calls)} calls); arguments "
        f"parse as JSON: {_pct(block.args_json_ok_share)}. A tool-call piece is not content: "
        "TTFT covers text only</p>"
    )


def _cancelled(s: RunSummary) -> str:
    cancelled = s.cancelled
    if not cancelled:
        return ""
    sent = s.completed + s.failed + s.incomplete + cancelled
    return (
        f'<p class="traffic-cancelled">Cancelled by the client: {cancelled} of {sent} requests '
        f"({cancelled / sent * 100:.1f} %), counted neither as served nor as failed</p>"
    )


def _cache(run: RunData) -> str:
    s = run.model
    if not s.prefix_cache:
        return ""
    scopes: list[tuple[str, Stats]] = [(st.label, st) for st in s.stages or [] if st.prefix_cache]
    rows = [_cache_row(label, entry) for label, entry in [*scopes, ("whole run", s)]]
    head = ["scope", "reporting", "hits", "hit ratio (requests)", "hit ratio (tokens)"]
    head += ["TTFT P50 hit", "TTFT P95 hit", "TTFT P50 miss", "TTFT P95 miss"]
    return table(head, rows, "traffic-cache") + '<p class="muted">prefix cache: TTFT in ms</p>'


def _cache_row(label: str, entry: Stats) -> list[str]:
    cache = entry.prefix_cache or PrefixCacheBlock()
    return [
        escape(label),
        fmt(cache.requests_reporting),
        fmt(cache.hits),
        _pct(cache.hit_ratio),
        _pct(cache.token_hit_ratio),
        *(fmt(entry.ms(f"p{q}", f"ttft_cache_{kind}")) for kind in ("hit", "miss") for q in (50, 95)),
    ]


def _bursts(s: RunSummary) -> str:
    bursts = s.bursts
    if not bursts:
        return ""
    ttft = [
        [escape(label), *(fmt(s.ms(f"p{q}", f"ttft_{key}")) for q in (50, 95))]
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
        for w in bursts.per_wave
    ]
    return (
        table(["TTFT (ms)", "P50", "P95"], ttft, "traffic-bursts")
        + table(["wave", "sent", "ok", "queue_drain_s", "drain_s"], waves, "traffic-waves")
        + '<p class="muted">queue_drain_s: from the wave until its last request got its first token; '
        "drain_s: until its last request finished (- when some request of the wave did not)</p>"
    )


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f} %"
