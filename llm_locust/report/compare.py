"""``llm-locust report --compare A B``: B against A, the whole run and each stage of the same label,
each difference with its 95 % interval (:mod:`llm_locust.report.differences` says which and why)
and "no significant difference" where that interval contains 0.

Before the table, what makes the two runs' latencies not comparable: a prefix cache that served
a different share of their prompt tokens (more than :data:`CACHE_POINTS` points apart), for
instance because B repeated A's prompts (the same ``--prompt-salt``) against a server that
still held them.

Pure: files already loaded (:class:`~llm_locust.report.data.RunData`), no network.
"""

from __future__ import annotations

from html import escape

from llm_locust.report.data import RunData
from llm_locust.report.differences import Difference, Kind, Scope, difference
from llm_locust.report.tables import fmt, table
from llm_locust.results.summary_model import RunSummary

__all__ = ["CACHE_POINTS", "cache_warning", "compare_section", "compare_table"]

#: Prefix-cache shares of prompt tokens further apart than this (percentage points) are warned of.
CACHE_POINTS = 5.0

_COMPARED = (
    ("completed", "completed requests", 0, Kind.COUNT),
    ("failed", "failed requests", 0, Kind.COUNT),
    ("request_throughput", "req/s", 2, Kind.RATE),
    ("output_throughput", "output tok/s", 1, Kind.RATE),
    ("p50_ttft_ms", "TTFT p50 (ms)", 1, Kind.PERCENTILE),
    ("p95_ttft_ms", "TTFT p95 (ms)", 1, Kind.PERCENTILE),
    ("p99_ttft_ms", "TTFT p99 (ms)", 1, Kind.PERCENTILE),
    ("p50_tpot_ms", "TPOT p50 (ms)", 2, Kind.PERCENTILE),
    ("p95_tpot_ms", "TPOT p95 (ms)", 2, Kind.PERCENTILE),
    ("p50_itl_ms", "ITL p50 (ms)", 2, Kind.ITL),
    ("p95_e2el_ms", "E2E p95 (ms)", 1, Kind.PERCENTILE),
    ("p99_e2el_ms", "E2E p99 (ms)", 1, Kind.PERCENTILE),
)
_NOTE = (
    '<p class="muted">95 % interval of B − A: percentiles from order statistics (distribution-free; '
    "each run's at 97.5 %, so the difference's covers at least 95 %), ITL with the requests as the "
    "independent units, rates from a compound-Poisson variance; counts are facts, without an interval. "
    "&quot;No significant difference&quot;: the interval contains 0.</p>"
)


def compare_section(a: RunData, b: RunData) -> str:
    """The comparison's HTML: the warnings, then the table."""
    warning = cache_warning(a, b)
    head = f'<p class="warn"><strong>Warning:</strong> {escape(warning)}</p>' if warning else ""
    return head + compare_table(a, b)


def _cache_share(summary: RunSummary) -> float | None:
    """The share of prompt tokens the server said it served from its prefix cache (``None``:
    the server reported no ``cached_tokens``)."""
    return None if summary.prefix_cache is None else summary.prefix_cache.token_hit_ratio


def _salt(summary: RunSummary) -> str | None:
    salt = summary.config.option("prompt_salt")
    return salt if isinstance(salt, str) else None


def cache_warning(a: RunData, b: RunData) -> str | None:
    """One sentence when the runs' prefix-cache shares of prompt tokens differ by more than
    :data:`CACHE_POINTS` points (both servers must have reported ``cached_tokens``)."""
    share_a, share_b = _cache_share(a.model), _cache_share(b.model)
    if share_a is None or share_b is None or abs(share_b - share_a) * 100 <= CACHE_POINTS:
        return None
    text = (
        f"the prefix cache served {share_a:.1%} of A's prompt tokens and {share_b:.1%} of B's "
        f"({(share_b - share_a) * 100:+.1f} points): their TTFT and E2E differ partly because of it"
    )
    salt = _salt(a.model)
    if salt is not None and salt == _salt(b.model):
        text += f"; both runs used --prompt-salt {salt}, so one run sent the other's prompts again"
    return text + "."


def _scopes(a: RunData, b: RunData) -> list[tuple[str, Scope, Scope]]:
    """The whole runs, then each stage of A that B has under the same label (the records as the
    summary reads them: the run's columns)."""
    ca, cb = a.columns, b.columns
    pairs = [("whole run", Scope(a.model, ca.measured_part()), Scope(b.model, cb.measured_part()))]
    b_stages = {s.label: s for s in b.stages}
    for s in a.stages:
        other = b_stages.get(s.label)
        if other is not None:
            sa, sb = Scope(s, ca.measured_part(s.index)), Scope(other, cb.measured_part(other.index))
            pairs.append((s.label, sa, sb))
    return pairs


def compare_table(a: RunData, b: RunData) -> str:
    """A against B, run level and per stage of the same label: values, difference, change, the
    difference's 95 % interval and what it allows one to say."""
    rows = []
    for scope, x, y in _scopes(a, b):
        for key, label, digits, kind in _COMPARED:
            diff = difference(key, kind, x, y)
            va, vb = x.row.stated(key), y.row.stated(key)
            change = None if diff.delta is None or not va else diff.delta / va * 100
            rows.append(
                [
                    escape(scope),
                    escape(label),
                    fmt(va, digits),
                    fmt(vb, digits),
                    _signed(diff.delta, digits),
                    _signed(change, 1, "%"),
                    _interval(diff, digits),
                    escape(diff.verdict),
                ]
            )
    head = ["scope", "metric", escape(a.name) + " (A)", escape(b.name) + " (B)", "B − A", "change"]
    return table([*head, "95 % interval of B − A", "significance"], rows, "compare") + _NOTE


def _interval(diff: Difference, digits: int) -> str:
    if not diff.bounded:
        return "-"
    lo = "−∞" if diff.lo is None else f"{diff.lo:+,.{digits}f}"
    hi = "+∞" if diff.hi is None else f"{diff.hi:+,.{digits}f}"
    return f"[{lo}, {hi}]"


def _signed(value: float | None, digits: int, unit: str = "") -> str:
    return "-" if value is None else f"{value:+,.{digits}f}{unit}"
