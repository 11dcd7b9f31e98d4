"""The web UI's start form (issue 27 §3), in headless Chromium against a real Locust web UI.

Locust lists an extension's fields alphabetically under one-line labels "Name (help)" cut off
at the field's edge, and shows argparse's ``%%``. llm-locust's fields come in the order and
under the headings of ``llm-locust run --help`` (read from the help's own text here), each
label whole, each field's help (with its default) under it, ``%`` once. A screenshot of the
grouped form is saved (``start-form.png`` in the test's folder).
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

from tests.browser import DevTools, chromium_binary
from tests.locustproc import llm_locust_cli
from tests.webproc import web_ui

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(chromium_binary() is None, reason="chromium not on PATH (make system-deps)"),
]

READY = (
    "new Promise(ok => { const look = () => (document.querySelector('form [data-llm-heading]') "
    "? ok() : setTimeout(look, 50)); look(); })"
)
#: The "Custom parameters" accordion has opened (its transition over: height no longer fixed).
OPENED = (
    "new Promise(ok => { const look = () => (document.querySelector('form .MuiCollapse-entered') "
    "? setTimeout(ok, 100) : setTimeout(look, 50)); look(); })"
)
#: The form's llm-locust part in page order: "## heading", or "name|label|help" per field.
LAYOUT = """[...document.querySelectorAll('form [data-llm-heading], form [data-llm-section]')].map(e => {
  if (e.dataset.llmHeading) return '## ' + e.dataset.llmHeading;
  const input = e.querySelector('[name]');
  const label = e.querySelector('label') || e;
  const help = e.nextElementSibling;
  return [input.name, label.textContent.replace(/[\\s*]+$/, ''), help ? help.textContent : ''].join('|');
})"""
#: Labels whose text does not fit (cut off with an ellipsis).
CUT = """[...document.querySelectorAll('form [data-llm-section] label')]
  .filter(l => l.scrollWidth > l.clientWidth + 1).map(l => l.textContent)"""


def _help_layout() -> list[str]:
    """``llm-locust run --help``'s headings and flags, in order (``## title`` / ``--flag``)."""
    text = llm_locust_cli("run", "--help").stdout
    out = []
    for line in text.splitlines():
        if re.fullmatch(r"[A-Za-z][^:]*:", line) and not line.startswith("usage"):
            out.append("## " + line[:-1])
        elif m := re.match(r"  (?:-\w, )?(--[a-z0-9-]+)", line):
            out.append(m.group(1))
    return out


def _camel(flag: str) -> str:
    words = flag.lstrip("-").split("-")
    return words[0] + "".join(w.capitalize() for w in words[1:])


def test_the_start_form_is_laid_out_as_the_help(tmp_path: Path) -> None:
    with web_ui(tmp_path, ("--ttft-ms", "20")) as ui, DevTools(f"{ui.base}/") as page:
        metrics = {"width": 1200, "height": 900, "deviceScaleFactor": 1, "mobile": False}
        page.call("Emulation.setDeviceMetricsOverride", metrics, session=page.session)
        page.evaluate(READY)
        page.evaluate("[...document.querySelectorAll('.MuiAccordionSummary-root')].forEach(e => e.click())")
        page.evaluate(OPENED)
        shown = page.evaluate(LAYOUT)
        cut = page.evaluate(CUT)
        text = page.evaluate("document.querySelector('form').innerText")
        height = page.evaluate("document.documentElement.scrollHeight")
        clip = {"x": 0, "y": 0, "width": 1200, "height": min(height, 16000), "scale": 1}
        shot = page.call(
            "Page.captureScreenshot",
            {"format": "png", "captureBeyondViewport": True, "clip": clip},
            session=page.session,
        )
    (tmp_path / "start-form.png").write_bytes(base64.b64decode(shot["data"]))

    names = [s.split("|")[0] for s in shown if not s.startswith("## ")]
    # the help's order, its headings, restricted to the fields the form has
    expected = [
        h if h.startswith("## ") else _camel(h)
        for h in _help_layout()
        if h.startswith("## ") or _camel(h) in names
    ]
    got = [s if s.startswith("## ") else s.split("|")[0] for s in shown]
    assert got == expected
    assert [h for h in got if h.startswith("## ")] == [
        "## target and model",
        "## workload",
        "## load model",
        "## SLO and search",
        "## outputs",
    ]
    assert len(names) == len(set(names)) >= 60

    fields = {s.split("|")[0]: s.split("|")[1:] for s in shown if not s.startswith("## ")}
    assert fields["requestRate"][0] == "Request Rate"  # the name alone: nothing to cut off
    assert cut == []
    slo_help = fields["slo"][1]
    assert "success>=99%,ttft_p95<=5s" in slo_help and "%%" not in text
    assert fields["requestTimeout"][1].endswith("(default: 600)")
    assert fields["searchPrecision"][1].startswith("--search-precision: ")
