"""The report of one or more results folders: which charts and tables, in which order.

The answer comes first (capacity, SLO verdict with intervals, soak verdict), then latency
against load, throughput, distributions, the run over time, and the detail (stages,
errors, configuration). Several folders are overlaid on every chart, one colour per run;
``--compare A B`` adds a table of B against A (the run and each stage of the same label).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Protocol

from llm_locust.report import charts, tables, timecharts, traffic
from llm_locust.report.compare import compare_section
from llm_locust.report.data import RunData, load_run
from llm_locust.report.echarts import drawn
from llm_locust.report.html import Section, render_page

__all__ = [
    "AUTO_REPORT_MAX_BYTES",
    "REPORT_FILE",
    "build_report",
    "report_after_run",
    "time_scale_note",
    "write_report",
]

log = logging.getLogger("llm_locust")
REPORT_FILE = "report.html"


class _Render(Protocol):
    def __call__(self, run: RunData, /) -> str: ...


def _per_run(runs: Sequence[RunData], render: _Render) -> str:
    if len(runs) == 1:
        return render(runs[0])
    return "".join(f"<h3>{escape(run.name)}</h3>{render(run)}" for run in runs)


def build_report(runs: Sequence[RunData], compare: bool = False) -> str:
    """The page for ``runs`` (``compare``: exactly two, A then B)."""
    if not runs:
        raise ValueError("no results folder given")
    latency = drawn([(f"latency-{m}", charts.latency_vs_load(runs, m)) for m in charts.LATENCY_CHARTS])
    throughput = drawn(
        [("throughput", charts.throughput_vs_concurrency(runs)), ("pareto", charts.pareto_chart(runs))]
    )
    no_gpus = (
        ""
        if any(r.gpus for r in runs)
        else (
            '<p class="muted">Throughput per GPU against speed per user: give the GPU count '
            "(<code>llm-locust report --gpus N</code>, or <code>gpus</code> in the summary's config).</p>"
        )
    )
    distributions = drawn(
        [(f"cdf-{m}", charts.cdf_chart(runs, m)) for m in ("ttft", "tpot", "e2el")]
        + [(f"lengths-{w}", charts.lengths_chart(runs, w)) for w in ("input", "output")]
    )
    over_time = drawn(
        [
            ("time-latency", timecharts.latency_over_time(runs)),
            ("time-tokens", timecharts.tokens_over_time(runs)),
            ("time-in-flight", timecharts.in_flight_over_time(runs)),
            ("time-errors", timecharts.errors_over_time(runs)),
            ("time-server", timecharts.server_over_time(runs)),
            ("time-gpu", timecharts.gpu_over_time(runs)),
        ]
    )
    sections: list[Section] = [
        ("Verdict", time_scale_note(runs) + _per_run(runs, tables.verdict_block), [], "")
    ]
    if compare and len(runs) == 2:
        sections.append(
            (
                f"{runs[1].name} (B) against {runs[0].name} (A)",
                compare_section(runs[0], runs[1]),
                [],
                "",
            )
        )
    bars = (
        '<p class="muted">Error bars: 95 % distribution-free intervals of each percentile '
        "(order statistics); a dashed stub up where the stage had too few requests to bound it from above. "
        "Shaded stages: fail (red), inconclusive (orange), invalid (grey).</p>"
    )
    sections += [
        ("Latency against load", bars, latency, ""),
        ("Throughput", "", throughput, no_gpus),
        ("Distributions", "", distributions, ""),
        *_traffic_section(runs),
        ("Over time", "", over_time, ""),
        ("Stages", _per_run(runs, tables.stage_table), [], ""),
        ("Errors", _per_run(runs, tables.errors_table), [], ""),
        ("Configuration", "".join(tables.config_block(r) for r in runs), [], ""),
    ]
    names = ", ".join(r.name for r in runs)
    title = f"llm-locust report: {names}" if not compare else f"llm-locust comparison: {names}"
    return render_page(title, f"{len(runs)} run(s): " + ", ".join(str(r.directory) for r in runs), sections)


def time_scale_note(runs: Sequence[RunData]) -> str:
    """A visible note when a run's target ran faster than the deployment it stands for."""
    scaled = [r for r in runs if r.speedup != 1]
    if not scaled:
        return ""
    which = "; ".join(f"{escape(r.name)} against a target {r.speedup:g}x faster" for r in scaled)
    return (
        '<p class="warn"><strong>Deployment time.</strong> Measured ' + which + " than the deployment "
        "it stands for (a simulator's <code>--speedup</code>): every latency and duration on this page is "
        "the measured one multiplied by that factor, every rate divided by it, as the deployment would "
        "show them. The folder's summary.json and requests.jsonl keep the measured wall clock; the load "
        "generator's own health (event-loop lag, CPU) and the configuration are shown as measured.</p>"
    )


def _traffic_section(runs: Sequence[RunData]) -> list[Section]:
    """The "Modern traffic" section, only when some run has reasoning, cancelled requests,
    prefix-cache hits or bursts (a plain chat run's report stays as it was)."""
    shown = [r for r in runs if traffic.has_traffic(r)]
    if not shown:
        return []
    return [("Modern traffic", _per_run(shown, traffic.traffic_table), [], "")]


def write_report(
    directories: Sequence[str | Path],
    output: str | Path,
    window_s: float | None = None,
    gpus: float | None = None,
    compare: bool = False,
) -> Path:
    """Load ``directories``, build the page, write it to ``output`` (atomically)."""
    runs = [load_run(d, window_s=window_s, gpus=gpus) for d in directories]
    _unique_names(runs)
    page = build_report(runs, compare=compare)
    path = Path(output)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(path)
    return path


def _unique_names(runs: Sequence[RunData]) -> None:
    seen: dict[str, int] = {}
    for run in runs:
        count = seen.get(run.name, 0)
        seen[run.name] = count + 1
        if count:
            run.name = f"{run.name} ({count + 1})"


#: The largest ``requests.jsonl`` the end of a run turns into ``report.html`` itself. The report
#: reads the records into the summary's columns (measured 2026-12-02: 161 MiB peak RSS for a
#: 200 MiB file of 200,000 records, load and page; 731 MiB when it kept every row, 1.8 GB for
#: 165 MB in benchmarks/README.md); the limit was set for the rows and is kept as it was.
AUTO_REPORT_MAX_BYTES = 100 * 2**20


def report_after_run(directory: str | Path, max_bytes: int | None = AUTO_REPORT_MAX_BYTES) -> Path | None:
    """``report.html`` in a run's results folder; a failure is one logged line, never an error
    of the run (its summary is already written). A folder whose ``requests.jsonl`` is over
    ``max_bytes`` gets one logged line instead (``llm-locust report DIR`` makes it elsewhere)."""
    requests = Path(directory) / "requests.jsonl"
    size = requests.stat().st_size if requests.exists() else 0
    if max_bytes is not None and size > max_bytes:
        log.warning(
            "llm-locust: report.html not written: %s is %.0f MiB (over the end of a run's limit for "
            "the report); run `llm-locust report %s` where there is the memory",
            requests,
            size / 2**20,
            directory,
        )
        return None
    try:
        path = write_report([directory], Path(directory) / REPORT_FILE)
    except Exception as exc:  # the run's results are on disk already: report, do not fail
        log.warning("llm-locust: report.html not written: %s: %s", type(exc).__name__, exc)
        return None
    log.info("llm-locust: report %s", path)
    return path
