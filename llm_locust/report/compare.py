"""``llm-locust report --compare A B``: B against A, the whole run and each stage of the same label.

Before the table, what makes the two runs' latencies not comparable: a prefix cache that served
a different share of their prompt tokens (more than :data:`CACHE_POINTS` points apart), for
instance because B repeated A's prompts (the same ``--prompt-salt``) against a server that
still held them.

Pure: files already loaded (:class:`~llm_locust.report.data.RunData`), no network.
"""

from __future__ import annotations

from html import escape
from typing import Any

from llm_locust.report.data import RunData
from llm_locust.report.tables import fmt, table

__all__ = ["CACHE_POINTS", "cache_warning", "compare_section", "compare_table"]

#: Prefix-cache shares of prompt tokens further apart than this (percentage points) are warned of.
CACHE_POINTS = 5.0

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


def compare_section(a: RunData, b: RunData) -> str:
    """The comparison's HTML: the warnings, then the table."""
    warning = cache_warning(a, b)
    head = f'<p class="warn"><strong>Warning:</strong> {escape(warning)}</p>' if warning else ""
    return head + compare_table(a, b)


def _cache_share(summary: dict[str, Any]) -> float | None:
    """The share of prompt tokens the server said it served from its prefix cache (``None``:
    the server reported no ``cached_tokens``)."""
    block = summary.get("prefix_cache") or {}
    ratio = block.get("token_hit_ratio")
    return None if ratio is None else float(ratio)


def _salt(summary: dict[str, Any]) -> str | None:
    return ((summary.get("config") or {}).get("options") or {}).get("prompt_salt")


def cache_warning(a: RunData, b: RunData) -> str | None:
    """One sentence when the runs' prefix-cache shares of prompt tokens differ by more than
    :data:`CACHE_POINTS` points (both servers must have reported ``cached_tokens``)."""
    share_a, share_b = _cache_share(a.summary), _cache_share(b.summary)
    if share_a is None or share_b is None or abs(share_b - share_a) * 100 <= CACHE_POINTS:
        return None
    text = (
        f"the prefix cache served {share_a:.1%} of A's prompt tokens and {share_b:.1%} of B's "
        f"({(share_b - share_a) * 100:+.1f} points): their TTFT and E2E differ partly because of it"
    )
    salt = _salt(a.summary)
    if salt is not None and salt == _salt(b.summary):
        text += f"; both runs used --prompt-salt {salt}, so one run sent the other's prompts again"
    return text + "."


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
                    fmt(va, digits),
                    fmt(vb, digits),
                    _signed(delta, digits),
                    _signed(change, 1, "%"),
                ]
            )
    head = ["scope", "metric", escape(a.name) + " (A)", escape(b.name) + " (B)", "B − A", "change"]
    return table(head, rows, "compare")


def _signed(value: float | None, digits: int, unit: str = "") -> str:
    return "-" if value is None else f"{value:+,.{digits}f}{unit}"
