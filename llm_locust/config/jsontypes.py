"""Free-form JSON, typed: the one home of the recursive JSON alias.

Where data truly is any JSON (a block not modelled yet, a body read back as it came), its
type is :data:`JsonValue` (pydantic's recursive alias: ``None``, bool, int, float, str, or a
list or a str-keyed dict of JSON values), never untyped: a reader narrows each value it uses.

Pure module: no Locust, no network.
"""

from __future__ import annotations

from pydantic import JsonValue

__all__ = ["JsonObject", "JsonValue", "number"]

#: A JSON object: any JSON value by key.
JsonObject = dict[str, JsonValue]


def number(value: object) -> float | None:
    """``value`` as a float when it is a JSON number (not a bool); ``None`` otherwise."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
