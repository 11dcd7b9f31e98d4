"""The small grammars of option values: durations, comma lists of load levels, "is it a file".

Every parser here raises :class:`OptionError`, whose message is one line that names the flag
and the value as given, then the reason: ``--ramp '1,x': 'x' is not a number``. The load
model (``load/stages.py``), the SLO and matrix formats and the typed configuration all use
these, so a value means the same wherever it is read.

The file rule (:func:`names_file`), one for every option that takes "a spec or a YAML file"
(``--slo``, ``--matrix``): the value is a file when it ends in ``.yaml``, ``.yml`` or ``.json``
and has none of the characters a spec needs (``=``, ``<``, ``>``, ``,``, ``;``). A file that
does not exist is then an error, never a spec.

Pure module: no Locust, no network.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from llm_locust.config.stage_kind import StageKind

__all__ = [
    "FILE_SUFFIXES",
    "OptionError",
    "as_items",
    "names_file",
    "one_line",
    "parse_duration",
    "parse_kind_spec",
    "parse_levels",
    "parse_percentiles",
    "read_yaml",
    "show",
    "split_list",
]

FILE_SUFFIXES = (".yaml", ".yml", ".json")
_SPEC_CHARS = frozenset("=<>,;")
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|h|m|s)")


def show(value: object) -> str:
    """A value as the user typed it, quoted: ``'1,x'``; lists joined with commas."""
    if isinstance(value, (list, tuple)):
        value = ",".join(str(v) for v in value)
    return repr(value) if isinstance(value, str) else repr(str(value))


class OptionError(ValueError):
    """A bad option value: ``<flag> '<value>': <reason>``, one line."""

    def __init__(self, flag: str, value: object, reason: str) -> None:
        self.flag, self.value, self.reason = flag, value, one_line(reason)
        super().__init__(f"{flag} {show(value)}: {self.reason}" if value is not None else f"{flag}: {reason}")


def one_line(text: object) -> str:
    """``text`` with every run of whitespace (newlines too) collapsed to one space."""
    return " ".join(str(text).split())


def read_yaml(path: str | Path, flag: str) -> Any:
    """A YAML (or JSON) file's data; a missing or malformed file is one line naming ``flag``."""
    import yaml

    try:
        return yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise ValueError(f"{flag}: cannot read {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{flag}: {path} is not valid YAML: {one_line(exc)}") from None


def names_file(text: str) -> bool:
    """The one "is it a file" rule for spec-or-file options (see the module docstring)."""
    value = text.strip()
    return value.lower().endswith(FILE_SUFFIXES) and not (_SPEC_CHARS & set(value))


def parse_duration(text: object, flag: str = "--step-time") -> float:
    """``"60s"``, ``"2m"``, ``"1h30m"``, ``"500ms"`` or a bare ``"90"`` (seconds) -> seconds."""
    if isinstance(text, bool):
        raise OptionError(flag, text, "expected a duration such as 60s, 2m or 1h30m")
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        value = _duration_text(str(text).strip().lower().replace(" ", ""), flag, text)
    if not math.isfinite(value) or value < 0:
        raise OptionError(flag, text, "a duration must be a finite non-negative number")
    return value


def _duration_text(s: str, flag: str, original: object) -> float:
    try:
        return float(s)
    except ValueError:
        pass
    pos, total = 0, 0.0
    for m in _DURATION_PART.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNIT_S[m.group(2)]
        pos = m.end()
    if pos != len(s) or not s:
        raise OptionError(flag, original, "expected a duration such as 60s, 2m or 1h30m")
    return total


def split_list(text: object, flag: str) -> list[str]:
    """``"1, 5,10"`` (or a sequence) -> ``["1", "5", "10"]``; an empty item is an error."""
    items = text.split(",") if isinstance(text, str) else [str(x) for x in as_items(text)]
    items = [x.strip() for x in items]
    if not items or any(not x for x in items):
        raise OptionError(flag, text, "expected a comma-separated list")
    return items


def as_items(value: object) -> Iterable[object]:
    """A YAML list's items; a single value is a list of one."""
    return value if isinstance(value, (list, tuple)) else [value]


def parse_percentiles(text: str) -> tuple[float, ...]:
    """``--percentiles 99.9,50,90`` -> ``(50.0, 90.0, 99.9)``: each in (0, 100], ascending, once."""
    out: set[float] = set()
    for item in split_list(text, "--percentiles"):
        try:
            q = float(item.rstrip("%"))
        except ValueError:
            raise OptionError("--percentiles", text, f"{item!r} is not a number") from None
        if not 0 < q <= 100:
            raise OptionError("--percentiles", text, f"{item!r} is not in (0, 100]")
        out.add(q)
    return tuple(sorted(out))


def parse_levels(text: object, kind: StageKind, flag: str) -> list[float]:
    """Load levels: positive numbers; whole numbers when ``kind`` is users."""
    levels = []
    for item in split_list(text, flag):
        try:
            value = float(item)
        except ValueError:
            raise OptionError(flag, text, f"{item!r} is not a number") from None
        if not math.isfinite(value) or value <= 0:
            raise OptionError(flag, text, f"{item!r} must be a positive number")
        if kind is StageKind.USERS and value != int(value):
            raise OptionError(flag, text, f"user counts must be whole numbers, got {item!r}")
        levels.append(value)
    return levels


def parse_kind_spec(
    text: str, kinds: Mapping[str, tuple[str, ...]], value: Callable[[str], float], what: str = "distribution"
) -> tuple[str, dict[str, float]]:
    """The grammar of distributions: ``kind:v1,v2`` (positional, in ``kinds[kind]``'s order) or
    ``kind:key=value,...``; a bare value is ``fixed:value``. ``value`` parses one value (raising
    ``ValueError`` with a reason). Raises ``ValueError`` with a one-line reason naming ``text``."""
    text = text.strip()
    kind, _, body = text.partition(":") if ":" in text else ("fixed", ":", text)
    kind = kind.strip().lower()
    if kind not in kinds:
        raise ValueError(f"unknown {what} {kind!r} in {text!r} (use {', '.join(kinds)})")
    params: dict[str, float] = {}
    for pos, item in enumerate(p.strip() for p in body.split(",") if p.strip()):
        key, eq, raw = item.partition("=")
        if not eq:
            if pos >= len(kinds[kind]):
                raise ValueError(f"too many values in {text!r}")
            key, raw = kinds[kind][pos], item
        key = key.strip().lower()
        if key not in kinds[kind]:
            raise ValueError(f"{kind} takes {', '.join(kinds[kind])}; got {key!r} in {text!r}")
        try:
            params[key] = value(raw.strip())
        except ValueError as exc:
            raise ValueError(f"{exc}: {raw.strip()!r} in {text!r}") from None
    return kind, params
