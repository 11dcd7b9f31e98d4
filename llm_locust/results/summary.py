"""Exact run statistics from request records, in ``vllm bench serve``'s vocabulary.

The input is the JSONL form of :class:`~llm_locust.record.RequestRecord` (dicts), so the
same function summarizes a live run, one stage of it, or a ``requests.jsonl`` read back
from disk. Percentiles are exact over the records (numpy's linear interpolation, as
``vllm bench serve`` uses), never Locust's rounded response-time buckets.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from llm_locust.record import INCOMPLETE, OK

__all__ = [
    "LATENCY_METRICS",
    "PERCENTILES",
    "Columns",
    "format_stage_table",
    "format_table",
    "inconclusive_reason",
    "max_concurrency",
    "open_loop_stats",
    "summarize",
]

PERCENTILES = (50, 90, 95, 99)
#: Summary metric name -> the record field it is computed from.
LATENCY_METRICS = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2el": "e2e"}


class Columns:
    """Records pulled apart into numpy columns once, for every statistic after."""

    def __init__(self, rows: Iterable[dict[str, Any]]) -> None:
        rows = list(rows)
        ok = [r for r in rows if r.get("outcome") == OK]
        self.rows = rows
        self.ok = ok
        #: In flight when the load stopped: neither a success nor a failure (no latency known).
        self.incomplete = sum(1 for r in rows if r.get("outcome") == INCOMPLETE)
        self.errors = Counter(
            r.get("outcome", "unknown") for r in rows if r.get("outcome") not in (OK, INCOMPLETE)
        )
        self.ttft = _column(r.get("ttft") for r in ok)
        self.tpot = _column(r.get("tpot") for r in ok)
        self.e2e = _column(r.get("e2e") for r in ok)
        self.itl = np.fromiter((g for r in ok for g in (r.get("itl") or ())), dtype=float)
        self.input_tokens = int(sum(_tokens_in(r) for r in ok))
        self.output_tokens = int(sum(r.get("completion_tokens") or 0 for r in ok))
        self.token_sources = Counter(r.get("token_source") or "none" for r in ok)

    def metric(self, name: str) -> np.ndarray:
        return getattr(self, LATENCY_METRICS[name])


def summarize(rows: Iterable[dict[str, Any]], duration: float) -> dict[str, Any]:
    """The run-level summary over ``rows``; ``duration`` is the wall time they span (s)."""
    cols = rows if isinstance(rows, Columns) else Columns(rows)
    duration = max(duration, 1e-9)
    out: dict[str, Any] = {
        "completed": len(cols.ok),
        "failed": len(cols.rows) - len(cols.ok) - cols.incomplete,
        "incomplete": cols.incomplete,
        "duration": duration,
        "total_input_tokens": cols.input_tokens,
        "total_output_tokens": cols.output_tokens,
        "request_throughput": len(cols.ok) / duration,
        "output_throughput": cols.output_tokens / duration,
        "total_token_throughput": (cols.input_tokens + cols.output_tokens) / duration,
        "max_concurrent_requests": max_concurrency(cols.rows),
    }
    for name in LATENCY_METRICS:
        out.update(latency_stats(name, cols.metric(name)))
    out["errors"] = dict(sorted(cols.errors.items()))
    out["token_sources"] = dict(sorted(cols.token_sources.items()))
    out["tpot_undefined"] = sum(1 for r in cols.ok if r.get("tpot") is None)
    if any(r.get("send_lag") is not None for r in cols.rows):
        out.update(open_loop_stats(cols, duration))
    return out


def open_loop_stats(cols: Columns, duration: float) -> dict[str, Any]:
    """Achieved arrival rate, send lag, and latency seen from the intended send time.

    Latency "from intended" adds the send lag: it is what a user who arrived on schedule
    waited, including any time the load generator (or a concurrency ceiling) held the
    request back. Other tools report only the latency from the actual send.
    """
    lags = _column(r.get("send_lag") for r in cols.rows)
    sends = _column(r.get("start_time") for r in cols.rows)
    span = float(sends.max() - sends.min()) if sends.size > 1 else 0.0
    out: dict[str, Any] = {
        # arrivals per second between the first and the last send: not diluted by the
        # time before the first arrival or by the drain after the last
        "achieved_request_rate": (sends.size - 1) / span if span > 0 else None,
        "waited_for_slot": sum(1 for r in cols.rows if r.get("waited_for_slot")),
    }
    if lags.size:
        p50, p99 = np.percentile(lags * 1000.0, [50, 99])
        out.update(
            {
                "p50_send_lag_ms": float(p50),
                "p99_send_lag_ms": float(p99),
                "max_send_lag_ms": float(lags.max() * 1000.0),
            }
        )
    lag_of = {id(r): (r.get("send_lag") or 0.0) for r in cols.ok}
    ttft_i = _column(None if r.get("ttft") is None else r["ttft"] + lag_of[id(r)] for r in cols.ok)
    e2e_i = _column(None if r.get("e2e") is None else r["e2e"] + lag_of[id(r)] for r in cols.ok)
    out.update(latency_stats("ttft_intended", ttft_i))
    out.update(latency_stats("e2el_intended", e2e_i))
    return out


def latency_stats(name: str, seconds: np.ndarray) -> dict[str, float | None]:
    """``mean_X_ms``, ``median_X_ms``, ``std_X_ms``, ``pNN_X_ms``; ``None`` with no data."""
    keys = [f"mean_{name}_ms", f"median_{name}_ms", f"std_{name}_ms"]
    keys += [f"p{p}_{name}_ms" for p in PERCENTILES]
    if seconds.size == 0:
        return dict.fromkeys(keys)
    ms = seconds * 1000.0
    values = [float(np.mean(ms)), float(np.median(ms)), float(np.std(ms))]
    values += [float(v) for v in np.percentile(ms, PERCENTILES)]
    return dict(zip(keys, values, strict=True))


def max_concurrency(rows: Sequence[dict[str, Any]]) -> int:
    """Peak number of requests in flight, by a sweep over [start, start + e2e] intervals."""
    events: list[tuple[float, int]] = []
    for r in rows:
        start, e2e = r.get("start_time"), r.get("e2e")
        if start is None or e2e is None:
            continue
        events.append((start, 1))
        events.append((start + e2e, -1))
    events.sort(key=lambda e: (e[0], e[1]))  # an end before a start at the same instant
    peak = current = 0
    for _, step in events:
        current += step
        peak = max(peak, current)
    return peak


def format_table(summary: dict[str, Any], title: str = "llm-locust summary") -> str:
    """A fixed-width table for the end of a headless run."""
    lines = [f"{'=' * 22} {title} {'=' * 22}"]
    row = "{:<40}{:>16}".format
    for label, key, fmt in _HEADLINE:
        value = summary.get(key)
        lines.append(row(label, "-" if value is None else fmt.format(value)))
    for name, label in (
        ("ttft", "Time to first token"),
        ("tpot", "Time per output token (excl. 1st)"),
        ("itl", "Inter-token latency"),
        ("e2el", "End-to-end latency"),
    ):
        lines.append(f"{'-' * 15} {label} (ms) {'-' * 15}")
        for stat in ("mean", "median", "p90", "p95", "p99"):
            value = summary.get(f"{stat}_{name}_ms")
            lines.append(row(f"{stat.capitalize()} {name.upper()}", "-" if value is None else f"{value:.2f}"))
    if summary.get("errors"):
        lines.append(f"{'-' * 20} Failures by class {'-' * 20}")
        lines += [row(k, str(v)) for k, v in summary["errors"].items()]
    if summary.get("p99_send_lag_ms") is not None:
        lines.append(f"{'-' * 20} Open loop {'-' * 20}")
        lines.append(row("Achieved arrival rate (req/s):", _num(summary["achieved_request_rate"])))
        lines.append(
            row(
                "Send lag p50 / p99 (ms):",
                f"{summary['p50_send_lag_ms']:.1f} / {summary['p99_send_lag_ms']:.1f}",
            )
        )
        lines.append(row("Waited for a concurrency slot:", str(summary["waited_for_slot"])))
        for name in ("ttft_intended", "e2el_intended"):
            value = summary.get(f"p99_{name}_ms")
            lines.append(row(f"P99 {name.upper()} (ms):", "-" if value is None else f"{value:.2f}"))
    if summary.get("generator_lagging"):
        lines.append(
            "WARNING: the load generator fell behind its schedule (send lag p99 "
            f"{summary['p99_send_lag_ms']:.0f} ms): add workers or lower the rate"
        )
    if summary.get("slo"):
        verdict = "PASS" if summary["slo"]["passed"] else "FAIL"
        scope = "SLO over the whole run, stages pooled" if summary.get("stages") else "SLO"
        lines.append(f"{'-' * 20} {scope}: {verdict} {'-' * 20}")
        for line in summary["slo"]["objectives"]:
            judged = " (inconclusive)" if line.get("verdict") == "inconclusive" else ""
            shown = f"{_objective_value(line)} {'ok' if line['passed'] else 'FAIL'}{judged}"
            lines.append(row(f"{line['objective']}", shown))
        lines.append(row("Goodput (req/s):", f"{summary['slo']['goodput_rps']:.2f}"))
    if summary.get("token_sources", {}).get("chunks"):
        lines.append("note: output tokens of some requests were counted from stream chunks (no usage sent)")
    lines.append("=" * (len(title) + 46))
    return "\n".join(lines)


def _objective_value(line: dict[str, Any]) -> str:
    """An SLO line's measured value in its own unit."""
    measured, name = line.get("measured"), line.get("name", "")
    if measured is None:
        return "-"
    percent = name == "success" or name.startswith(("kv_cache_usage", "error_rate"))
    if line.get("kind") == "drift":
        return (
            f"{measured * 100:+.2f} pts/10min"
            if percent
            else (
                f"{measured:+.2f}/10min" if name.startswith("waiting") else f"{measured * 1000:+.1f} ms/10min"
            )
        )
    if percent:
        return f"{measured * 100:.2f}%"
    if line.get("kind") == "server":
        return f"{measured:g}"
    return f"{measured * 1000:.1f} ms"


def format_stage_table(stages: list[dict[str, Any]]) -> str:
    """One row per stage: the load it ran at, throughput, latency percentiles, Little's law,
    verdict; then one line per stage that did not run at its level, saying why."""
    head = (
        f"{'stage':<24}{'load':>10}{'ok':>6}{'fail':>6}{'inc':>5}{'req/s':>8}{'out tok/s':>11}"
        f"{'TTFT p50':>10}{'TTFT p95':>10}{'TPOT p50':>10}{'E2E p95':>10}{'in-flight':>10}{'L=λW':>8}"
        f"{'verdict':>14}"
    )
    lines = [head, "-" * len(head)]
    for s in stages:
        law = s.get("littles_law") or {}
        lines.append(
            f"{s.get('label', '')[:23]:<24}{_load(s):>10}{s['completed']:>6}{s['failed']:>6}"
            f"{s.get('incomplete', 0):>5}{s['request_throughput']:>8.2f}{s['output_throughput']:>11.1f}"
            f"{_ms(s.get('median_ttft_ms')):>10}{_ms(s.get('p95_ttft_ms')):>10}"
            f"{_ms(s.get('median_tpot_ms')):>10}{_ms(s.get('p95_e2el_ms')):>10}"
            f"{_num(law.get('mean_in_flight')):>10}{_num(law.get('product')):>8}{_verdict(s):>14}"
        )
    for s in stages:
        if s.get("invalid_reason"):
            lines.append(f"{s.get('label', '')}: invalid: {s['invalid_reason']}")
        elif s.get("verdict") == "inconclusive":
            lines.append(f"{s.get('label', '')}: inconclusive: {inconclusive_reason(s)}")
    return "\n".join(lines)


def inconclusive_reason(stage: dict[str, Any]) -> str:
    """Why a stage's SLO verdict is inconclusive: its undecided objectives and their notes."""
    parts = []
    for o in (stage.get("slo") or {}).get("objectives", []):
        if o.get("verdict") == "inconclusive":
            note = o.get("note") or "the 95 % interval straddles the threshold"
            parts.append(f"{o['objective']}: {note}")
    return "; ".join(parts) or "the 95 % intervals straddle the thresholds"


def _load(stage: dict[str, Any]) -> str:
    """What ran against what was planned: peak/target users, or sent/target req/s."""
    if stage.get("kind") == "users":
        peak = stage.get("peak_users")
        return f"{'-' if peak is None else peak}/{int(stage['target'])}"
    sent = stage.get("sent_rate")
    return f"{'-' if sent is None else f'{sent:.2g}'}/{stage['target']:g}/s"


def _verdict(stage: dict[str, Any]) -> str:
    verdict = stage.get("verdict")
    return {"pass": "pass", "fail": "FAIL", "invalid": "invalid", "inconclusive": "inconclusive"}.get(
        verdict or "", ""
    )


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


_HEADLINE = (
    ("Successful requests:", "completed", "{}"),
    ("Failed requests:", "failed", "{}"),
    ("Incomplete (in flight at the stop):", "incomplete", "{}"),
    ("Duration (s):", "duration", "{:.2f}"),
    ("Total input tokens:", "total_input_tokens", "{}"),
    ("Total generated tokens:", "total_output_tokens", "{}"),
    ("Request throughput (req/s):", "request_throughput", "{:.2f}"),
    ("Output token throughput (tok/s):", "output_throughput", "{:.2f}"),
    ("Total token throughput (tok/s):", "total_token_throughput", "{:.2f}"),
    ("Peak concurrent requests:", "max_concurrent_requests", "{}"),
)


def _column(values: Iterable[Any]) -> np.ndarray:
    return np.fromiter((v for v in values if v is not None), dtype=float)


def _tokens_in(row: dict[str, Any]) -> int:
    actual = row.get("prompt_tokens")
    return actual if actual is not None else (row.get("target_input_tokens") or 0)
