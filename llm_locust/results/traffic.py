"""Modern traffic in the summary: reasoning phases, prefix-cache hits, bursts; and its text.

The keys (computed on the columns by :mod:`llm_locust.results.traffic_columns`), over the
successful, measured records of a run or a stage:

- ``ttft_visible``: latency keys like TTFT's (``p95_ttft_visible_ms``), sent -> first content;
- ``reasoning``: requests with a reasoning phase, reasoning and answer token totals and
  percentiles, where the split came from (``sources``, like ``token_sources``), how many
  first content chunks carried several tokens (``first_chunk_batched``), and which phase
  each latency covers (``phases``);
- ``tools`` (``--tools``): requests that offered tools, requests answered with a tool call,
  the calls, the share whose arguments parse as JSON (``args_json_ok_share``), beside the
  latency keys ``*_time_to_first_tool_call_ms`` and ``*_time_to_tool_args_complete_ms``;
- ``prefix_cache``: of the requests whose server reported ``cached_tokens``, the share with
  a hit (any cached prompt token), the share of prompt tokens served from the cache, and
  TTFT with and without a hit (``p50_ttft_cache_hit_ms`` / ``..._cache_miss_ms`` beside it);
- ``bursts`` (``--burst``): the TTFT of burst requests apart from the base load's
  (``p50_ttft_burst_ms`` / ``p50_ttft_base_ms``), and per wave how long it took to drain:
  ``queue_drain_s``, from the wave's time until its last request got its first token (every
  request of the wave admitted: the queue it made is gone), and ``drain_s``, until its last
  request finished.

A block is present only when some record has something to say (a reasoning split, a
``cached_tokens``), so a plain chat run's summary is unchanged but for ``ttft_visible``.

This module writes their lines in the end-of-run text. Pure module: no Locust, no network.
"""

from __future__ import annotations

from collections.abc import Sequence

from llm_locust.results.summary_blocks import ConfigBlock, PrefixCacheBlock
from llm_locust.results.summary_model import RunSummary, StageRow, Stats

__all__ = ["stage_cache_lines", "traffic_lines"]


def traffic_lines(summary: RunSummary) -> list[str]:
    """The end-of-run table's lines for visible TTFT, reasoning and the prefix cache."""
    row = "{:<40}{:>16}".format
    lines = []
    block = summary.reasoning
    if summary.ms("p50", "ttft_visible") is not None and block:
        lines.append(f"{'-' * 12} Time to first visible token (ms) {'-' * 11}")
        for stat in ("mean", "median", "p90", "p95", "p99"):
            lines.append(row(f"{stat.capitalize()} TTFT_VISIBLE", _fmt(summary.ms(stat, "ttft_visible"))))
    if block:
        lines.append(f"{'-' * 20} Reasoning {'-' * 20}")
        lines.append(row("Requests with reasoning:", f"{block.with_reasoning} of {block.requests}"))
        lines.append(
            row("Reasoning tokens p50 / p99:", _pair(block.p50_reasoning_tokens, block.p99_reasoning_tokens))
        )
        lines.append(row("Answer tokens p50 / p99:", _pair(block.p50_answer_tokens, block.p99_answer_tokens)))
        sources = ", ".join(f"{k} {v}" for k, v in block.sources.items())
        lines.append(row("Reasoning counts from:", sources))
        lines.append("TTFT: first token of any kind; TPOT and ITL cover reasoning and answer tokens")
        if block.first_chunk_batched:
            lines.append(
                f"WARNING: {block.first_chunk_batched} first content chunks carried several tokens: "
                "TTFT_VISIBLE includes their decode time"
            )
    lines += _tool_lines(summary)
    bursts = summary.bursts
    if bursts:
        lines.append(f"{'-' * 20} Bursts {'-' * 20}")
        lines.append(row("Waves / burst requests:", f"{bursts.waves} / {bursts.requests}"))
        burst, base = summary.ms("p50", "ttft_burst"), summary.ms("p50", "ttft_base")
        lines.append(row("TTFT p50 burst / base (ms):", f"{_fmt(burst)} / {_fmt(base)}"))
        lines.append(row("TTFT p99 burst (ms):", _fmt(summary.ms("p99", "ttft_burst"))))
        lines.append(
            row(
                "Queue drain mean / max (s):",
                f"{_fmt(bursts.mean_queue_drain_s)} / {_fmt(bursts.max_queue_drain_s)}",
            )
        )
        lines.append(row("Wave drain max (s):", _fmt(bursts.max_drain_s)))
    cache = summary.prefix_cache
    if cache:
        lines.append(f"{'-' * 20} Prefix cache {'-' * 20}")
        lines.append(row("Requests with a hit:", f"{cache.hits} of {cache.requests_reporting}"))
        lines.append(row("Hit ratio (requests / tokens):", _ratios(cache)))
        hit, miss = summary.ms("p50", "ttft_cache_hit"), summary.ms("p50", "ttft_cache_miss")
        lines.append(row("TTFT p50 hit / miss (ms):", f"{_fmt(hit)} / {_fmt(miss)}"))
    ceiling = _trace_hit_ceiling(summary.config)
    if ceiling is not None:  # a trace replayed prefix-exact: the most an unbounded cache could have served
        lines.append(row("Trace hit ceiling (tokens):", f"{ceiling * 100:.1f}%"))
    return lines


def _trace_hit_ceiling(config: ConfigBlock) -> float | None:
    """The replayed trace's prefix-reuse ceiling (``config.load_model.trace.prefix_reuse``), if any."""
    model = config.load_model
    trace = model.get("trace") if isinstance(model, dict) else None
    reuse = trace.get("prefix_reuse") if isinstance(trace, dict) else None
    ceiling = reuse.get("hit_ceiling") if isinstance(reuse, dict) else None
    return float(ceiling) if isinstance(ceiling, int | float) else None


def stage_cache_lines(stages: Sequence[StageRow]) -> list[str]:
    """One line per stage whose server reported ``cached_tokens``: its hit ratio and TTFT p50s."""
    lines = []
    for stage in stages:
        cache = stage.prefix_cache
        if not cache:
            continue
        hit, miss = stage.ms("median", "ttft_cache_hit"), stage.ms("median", "ttft_cache_miss")
        lines.append(
            f"{stage.label}: prefix cache hit ratio {_ratios(cache)} (requests / tokens), "
            f"TTFT p50 hit {_fmt(hit, '.1f')} ms / miss {_fmt(miss, '.1f')} ms"
        )
    return lines


def _tool_lines(summary: Stats) -> list[str]:
    """The "Tool calls" section, when some request offered tools (or got a tool call)."""
    block = summary.tools
    if not block:
        return []
    row = "{:<40}{:>16}".format
    share = block.args_json_ok_share
    return [
        f"{'-' * 20} Tool calls {'-' * 20}",
        row(
            "Offered tools / answered with a call:",
            f"{block.requests_offered} / {block.requests_with_tool_calls}",
        ),
        row(
            "Tool calls / arguments JSON ok:",
            f"{block.tool_calls} / {'-' if share is None else f'{share * 100:.1f}%'}",
        ),
        row("First tool call p50 / p99 (ms):", _stat_pair(summary, "time_to_first_tool_call")),
        row("Arguments complete p50 / p99 (ms):", _stat_pair(summary, "time_to_tool_args_complete")),
        "a tool-call piece is not content: TTFT and ITL cover text only",
    ]


def _stat_pair(summary: Stats, name: str) -> str:
    return f"{_fmt(summary.ms('p50', name))} / {_fmt(summary.ms('p99', name))}"


def _pair(p50: float | None, p99: float | None) -> str:
    return f"{_fmt(p50, '.0f')} / {_fmt(p99, '.0f')}"


def _ratios(cache: PrefixCacheBlock) -> str:
    tokens = cache.token_hit_ratio
    shown = "-" if tokens is None else f"{tokens * 100:.1f}%"
    return f"{cache.hit_ratio * 100:.1f}% / {shown}"


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)
