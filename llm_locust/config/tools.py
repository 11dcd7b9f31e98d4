"""``--tools``: the OpenAI ``tools`` definitions a request offers (issue 28 §1).

``--tools builtin`` is :data:`BUILTIN_TOOLS` (get_weather, search_docs); ``--tools FILE`` a JSON
or YAML file holding a list of ``{"type": "function", "function": {"name": ..., "parameters": ...}}``.
What the stream does with them: :mod:`llm_locust.protocol.tools`.

Pure module: no network, no Locust.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from llm_locust.config.jsontypes import JsonObject

__all__ = ["BUILTIN_TOOLS", "TOOL_CHOICE_MODES", "check_tool_choice", "load_tools"]

#: ``--tool-choice`` values sent as they are (any other value names one tool: that call forced).
TOOL_CHOICE_MODES = ("auto", "required", "none")

BUILTIN_TOOLS: tuple[JsonObject, ...] = (
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The current weather in a city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name, e.g. Paris"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search_docs",
            "description": "Search the product documentation and return the best passages",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for"},
                    "top_k": {"type": "integer", "minimum": 1, "maximum": 20},
                },
                "required": ["query"],
            },
        },
    },
)


def load_tools(value: str) -> list[JsonObject]:
    """The definitions ``--tools`` names: ``builtin`` or a JSON / YAML file holding a list of
    ``{"type": "function", "function": {"name": ...}}``. Raises ``ValueError`` (one line)."""
    if value == "builtin":
        return [dict(tool) for tool in BUILTIN_TOOLS]
    path = Path(value)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read {value} ({exc.strerror or exc})") from None
    try:
        tools = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ValueError(f"{value} is not valid JSON or YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(tools, list) or not tools:
        raise ValueError(f"{value} must hold a non-empty list of tool definitions")
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if (
            not isinstance(function, dict)
            or not isinstance(function.get("name"), str)
            or not function["name"]
        ):
            raise ValueError(f"{value}: tool {i} is not {{type: function, function: {{name: ...}}}}")
        tool.setdefault("type", "function")
    return tools


def check_tool_choice(choice: str, tools: str | None) -> str:
    """``--tool-choice``: a mode of :data:`TOOL_CHOICE_MODES` or the name of one of ``--tools``'
    functions (llama.cpp's server calls a tool only when one is named). Raises ``ValueError``."""
    if not tools:
        raise ValueError("needs --tools (the definitions it chooses among)")
    functions = [t.get("function") for t in load_tools(tools)]  # each checked by load_tools
    names = [str(f.get("name")) for f in functions if isinstance(f, dict)]
    if choice not in TOOL_CHOICE_MODES and choice not in names:
        raise ValueError(f"not {', '.join(TOOL_CHOICE_MODES)} or a tool of --tools ({', '.join(names)})")
    return choice
