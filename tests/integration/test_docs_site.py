"""The documentation site builds with ``mkdocs build --strict`` (no broken link, no page left out
of the nav, no missing included file), and its options page lists exactly the options the
command line takes.

The options page is generated from the option table at build time (``docs/hooks/options_page.py``);
the oracle here is the real command line's help (``llm-locust run --help``, ``llm-locust workload
sample --help``), parsed from its text: each group's flags and environment variables must be the
page's, group by group, in the help's order.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("mkdocs", reason="the docs extra (pip install -e '.[docs]'; make setup installs it)")
pytest.importorskip("material", reason="the docs extra: mkdocs-material")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    res = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return out


def _help(*args: str) -> str:
    res = subprocess.run(
        [sys.executable, "-m", "llm_locust.cli", *args, "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    return res.stdout


def _help_groups(text: str) -> list[tuple[str, dict[str, str]]]:
    """``[(group title, {flag: env var})]`` in the help's order."""
    groups: list[tuple[str, dict[str, str]]] = []
    entry = ""

    def close() -> None:
        flag = re.match(r"\s+(?:-\w [A-Z_]+, |-\w, )?(--[\w-]+)", entry)
        if flag and groups:
            env = re.search(r"\[env\s+(LLM_LOCUST_\w+)\]", entry)
            groups[-1][1][flag.group(1)] = env.group(1) if env else ""

    for line in text.split("\n\n", 2)[-1].splitlines():
        if re.fullmatch(r"\S.*:", line):
            close()
            entry = ""
            groups.append((line[:-1], {}))
        elif re.match(r"  -", line):
            close()
            entry = line
        else:
            entry += " " + line.strip()
    close()
    return groups


def _page_groups(page: str) -> list[tuple[str, dict[str, str]]]:
    """``[(section title, {flag: env var})]`` from the built options page's tables."""
    groups = []
    for section in re.split(r"<h2 ", page)[1:]:
        title = html.unescape(re.sub(r"<[^>]+>", "", section.split(">", 1)[1].split("</h2>")[0]))
        rows: dict[str, str] = {}
        for cells in re.findall(r"<tr>(.*?)</tr>", section, re.S):
            tds = re.findall(r"<td>(.*?)</td>", cells, re.S)
            if not tds:
                continue
            flags = re.findall(r"<code>(--?[\w-]+)</code>", tds[0])
            env = re.findall(r"<code>(LLM_LOCUST_\w+)</code>", cells)
            rows[flags[-1]] = env[0] if env else ""
        groups.append((title.strip("¶ \n"), rows))
    return groups


def test_the_site_builds_strict_and_has_every_page(site: Path) -> None:
    """Every Markdown page under docs/ became an HTML page (strict mode already refused any page
    left out of the nav, any broken link or anchor, any missing included file)."""
    pages = {p.relative_to(ROOT / "docs").with_suffix(".html") for p in (ROOT / "docs").glob("*.md")}
    assert pages, "no pages under docs/"
    for page in pages:
        assert (site / page).is_file(), page
    assert (site / "options.html").is_file()  # generated, in no file under docs/


def test_the_options_page_lists_what_the_command_line_takes(site: Path) -> None:
    page = _page_groups((site / "options.html").read_text(encoding="utf-8"))
    run = _help_groups(_help("run"))
    assert len(run) >= 5, run
    by_title = {title.lower(): rows for title, rows in page}
    assert [t.lower() for t, _ in page[: len(run)]] == [t.lower() for t, _ in run]  # same groups, order
    for title, rows in run:
        assert list(by_title[title.lower()].items()) == list(rows.items()), title  # same flags, order, env
    workload = _help_groups(_help("workload", "sample"))
    flags = {f for _, rows in workload for f in rows} - {"--help"}
    listed = {f for _, rows in page for f in rows}
    assert flags and flags <= listed, flags - listed


def _field_tables() -> list[list[str]]:
    """The first column of each table in docs/results.md's section on requests.jsonl's fields."""
    text = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    section = text.split("## `requests.jsonl`: the fields of a row", 1)[1].split("\n## ", 1)[0]
    tables: list[list[str]] = []
    for block in re.split(r"\n\s*\n", section):
        rows = [line for line in block.splitlines() if line.startswith("| `")]
        if rows:
            tables.append([name for row in rows for name in re.findall(r"`(\w+)`", row.split("|")[1])])
    return tables


def test_the_results_page_lists_every_field_of_a_row() -> None:
    """The fields table is requests.jsonl's fields, in order (a field added to the row without a
    line on the page fails here); every optional field it names is one the package writes."""
    from llm_locust.record import ROW_FIELDS

    fields, optional = _field_tables()
    assert fields == list(ROW_FIELDS)
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "llm_locust").rglob("*.py"))
    for name in optional:
        assert f'"{name}"' in source, name


def test_the_readme_links_resolve(site: Path) -> None:
    """Every relative link of the README names a file of the repository, and a link into a docs
    page with an anchor names a heading of the built page (the README is no page of the site,
    so mkdocs --strict does not check it)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#\s]+)(?:#([^)\s]+))?\)", text)
    local = [(path, anchor) for path, anchor in links if not re.match(r"[a-z]+://", path)]
    assert len(local) >= 10, local  # the README's table of the docs pages
    for path, anchor in local:
        assert (ROOT / path).exists(), path
        if anchor and path.startswith("docs/") and path.endswith(".md"):
            page = (site / path.removeprefix("docs/")).with_suffix(".html").read_text(encoding="utf-8")
            assert f'id="{anchor}"' in page, f"{path}#{anchor}"


OVERFLOWING = """
JSON.stringify(Array.from(document.querySelectorAll('.md-content pre > code'))
  .filter(code => code.scrollWidth > code.clientWidth + 1)
  .map(code => code.textContent.split('\\n').reduce((a, b) => (b.length > a.length ? b : a), '')))
"""


@pytest.mark.parametrize("page", ["index.html", "tutorial-gpus.html", "capacity.md"])
def test_a_long_command_stays_inside_its_code_block(site: Path, page: str) -> None:
    """The new-user trial (2026-12-02): the home page's comment and the tutorial's simulator
    commands and plan file ran off the content column (Material scrolls a code block, its
    scrollbar shows only on hover, so the line looked cut off). Every code block of the page,
    in a 1000-px window, must hold its longest line without scrolling."""
    import json

    from tests.browser import DevTools, chromium_binary

    if chromium_binary() is None:
        pytest.skip("chromium not on PATH (make system-deps)")
    name = page.replace(".md", ".html")
    with DevTools("about:blank") as browser:
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1000, "height": 800, "deviceScaleFactor": 1, "mobile": False},
            session=browser.session,
        )
        browser.navigate((site / name).as_uri())
        blocks = browser.evaluate("document.querySelectorAll('.md-content pre > code').length")
        overflowing = json.loads(browser.evaluate(OVERFLOWING))
    assert blocks > 0, f"{name} has no code block to check"
    assert overflowing == [], f"{name}: lines cut at the column's edge: {overflowing}"
