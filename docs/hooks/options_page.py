"""MkDocs hook: the options reference page, generated from the option table at every build.

``llm_locust.config.options.OPTIONS`` is the one declaration of every llm-locust option (the
command line, the environment, the web UI's start form and ``llm-locust run --help`` come from
it), so the page is rendered from it too and cannot drift: ``options.md`` exists only in the
built site. ``python docs/hooks/options_page.py`` prints the same Markdown.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from llm_locust.config.options import GROUPS, RUN_GROUPS, Option, options_in
from llm_locust.config.register import section_order

PAGE = "options.md"

_INTRO = """\
# Options reference

Generated from the option table (`OPTIONS` in `llm_locust/config/options.py`) when the site is
built, so it lists exactly what the code accepts. Every option of a load test works the same
four ways: on the command line (`locust -f ...` or `llm-locust run`), as an environment variable
(`--foo-bar` reads `LLM_LOCUST_FOO_BAR`; an `LLM_LOCUST_*` variable that is no option's is
refused), in the web UI's start form (unless the table says no) and under `llm-locust run`.
Locust owns `--host`, `-u`, `-r`, `-t` and `--profile`; `locust --help` lists its own options.
`llm-locust run --help` prints the same groups in a terminal.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _value(opt: Option) -> str:
    if opt.action == "flag":
        return "flag"
    if opt.choices:
        return " \\| ".join(f"`{c}`" for c in opt.choices)
    kind = opt.type + (", repeatable" if opt.action == "append" else "")
    return kind


def _default(opt: Option) -> str:
    text = opt.default_text
    return f"`{text}`" if text is not None else ""


def _row(opt: Option) -> str:
    flags = f"`{opt.short}`, `{opt.flag}`" if opt.short else f"`{opt.flag}`"
    notes = [f"Environment: `{opt.env}`."] if opt.env_var else []
    if not opt.web_ui:
        notes.append("Not in the web UI's form.")
    if opt.secret:
        notes.append("A secret.")
    help_text = " ".join([_cell(opt.help).rstrip(".") + ".", *notes])
    return f"| {flags}<br>{_value(opt)} | {_default(opt)} | {help_text} |"


def _sections() -> dict[str, list[Option]]:
    """Heading -> options: the run's options under the headings and in the order of
    ``llm-locust run --help`` (and the start form), then ``llm-locust workload``'s own."""
    sections: dict[str, list[Option]] = {}
    for opt in sorted(options_in(*RUN_GROUPS), key=section_order):
        sections.setdefault(opt.section, []).append(opt)
    sections[GROUPS["workload-command"]] = list(options_in("workload-command"))
    return sections


def markdown() -> str:
    """The whole page: one heading and table per section, in help order."""
    parts = [_INTRO]
    for title, rows in _sections().items():
        heading = f"`{title}`" if title.startswith("llm-locust") else title[0].upper() + title[1:]
        parts.append(f"\n## {heading}\n")
        if title == GROUPS["workload-command"]:
            parts.append(
                "The options of `llm-locust workload sample|describe|prompts` only (with the "
                "workload options above); `--host` there is the server for `--tokenizer server`.\n"
            )
        parts.append("| option | default | what it does |")
        parts.append("|---|---|---|")
        parts.extend(_row(opt) for opt in rows)
    return "\n".join(parts) + "\n"


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    files.append(File.generated(config, PAGE, content=markdown()))
    return files


if __name__ == "__main__":
    sys.stdout.write(markdown())
