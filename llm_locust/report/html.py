"""``report.html``: one self-contained page, charts by the vendored Apache ECharts.

Everything is inline: the ECharts bundle (``llm_locust/web/vendor/echarts``), the chart
options as one JSON block, the styles and a short script that hands each option to
``echarts.init(...).setOption``. The page makes no network request and opens from
``file://`` offline. The script also records, for tests and for anyone curious, what
ECharts holds after rendering (``#echarts-state``: the series of every chart as
``getOption()`` returns them, and how many shapes it drew) and any script error
(``#js-errors``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path

from llm_locust import __version__
from llm_locust.report.echarts import Option

__all__ = ["ECHARTS_PATH", "ECHARTS_VERSION", "Section", "render_page"]

ECHARTS_VERSION = "6.1.0"
ECHARTS_PATH = Path(__file__).resolve().parent.parent / "web" / "vendor" / "echarts" / "echarts.min.js"

#: (title, HTML before the charts, [(chart key, option)], HTML after the charts)
Section = tuple[str, str, list[tuple[str, Option]], str]

ASSETS = Path(__file__).resolve().parent / "assets"


def _asset(name: str) -> str:
    return (ASSETS / name).read_text(encoding="utf-8")


def _json_script(data: Mapping[str, Mapping[str, Option]]) -> str:
    """JSON safe inside a ``<script>`` element."""
    return json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")


def render_page(title: str, subtitle: str, sections: Sequence[Section]) -> str:
    """The whole page; chart keys must be unique across ``sections``."""
    charts: dict[str, Option] = {}
    body = []
    for heading, before, section_charts, after in sections:
        divs = []
        for key, option in section_charts:
            charts[key] = option
            divs.append(f'<div class="chart" id="chart-{escape(key)}" data-key="{escape(key)}"></div>')
        grid = f'<div class="grid">{"".join(divs)}</div>' if divs else ""
        body.append(f"<section><h2>{escape(heading)}</h2>{before}{grid}{after}</section>")
    generated = time.strftime("%Y-%m-%d %H:%M:%S")
    return "\n".join(
        [
            "<!doctype html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{escape(title)}</title><style>{_asset('report.css')}</style></head><body>",
            f"<header><h1>{escape(title)}</h1><p>{escape(subtitle)} · generated {generated} by llm-locust "
            f"{escape(__version__)} · charts: Apache ECharts {ECHARTS_VERSION} (Apache-2.0, inlined)"
            "</p></header>",
            *body,
            '<div id="js-errors" hidden></div><pre id="echarts-state" hidden></pre>',
            f"<script>{ECHARTS_PATH.read_text(encoding='utf-8')}</script>",
            f'<script type="application/json" id="report-data">{_json_script({"charts": charts})}</script>',
            f"<script>{_asset('report.js')}</script>",
            "</body></html>",
        ]
    )
