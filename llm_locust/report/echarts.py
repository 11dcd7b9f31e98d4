"""The shapes of the ECharts options the report's charts build (typed, never ``Any``).

An option is what the page hands to ECharts as it is (:mod:`llm_locust.report.html`): its
frame (:class:`Option`: title, axes, legend, grid) and its series (:class:`Series`: a line,
bars, a scatter, the error bars of a ``custom`` series). The keys the charts set are named
here; a style object ECharts reads as it is (``lineStyle``, ``itemStyle``, ``label``...) is
a JSON value (:data:`Style`). A point of a series is a number, a category, or a row of them
(``[x, y, label]``, ``[x, low, high, flags]``).

Pure module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict

from llm_locust.config.jsontypes import JsonValue

__all__ = ["Axis", "Cell", "Datum", "Legend", "MarkLine", "Option", "Series", "Style", "cells", "drawn"]

#: A style or axis object ECharts reads as it is (``{"color": "#999", "type": "dotted"}``).
Style = dict[str, JsonValue]
#: An axis (``{"type": "value", "name": "ms", ...}``).
Axis = dict[str, JsonValue]
#: One value of a point: a number, a category label, or none (a gap in a line).
Cell = float | int | str | None
#: One point of a series: a value, a row of values, or a named item (a bar with its own style).
Datum = Cell | Sequence[Cell] | Mapping[str, JsonValue]


class MarkLine(TypedDict, total=False):
    """Lines across a chart (an SLO threshold, the stage boundaries, the demand)."""

    symbol: str
    silent: bool
    lineStyle: Style
    label: Style
    data: Sequence[Mapping[str, JsonValue]]


class Series(TypedDict, total=False):
    name: str
    type: str
    data: Sequence[Datum]
    stack: str
    yAxisIndex: int
    lineStyle: Style
    itemStyle: Style
    label: Style
    tooltip: Style
    markLine: MarkLine
    connectNulls: bool
    showSymbol: bool
    symbol: str
    symbolSize: float
    barWidth: str
    barGap: str
    silent: bool
    z: int
    renderItem: str  # "errorbar": the one shape the page adds (html.py)
    encode: Mapping[str, JsonValue]


class Legend(TypedDict, total=False):
    type: str
    bottom: int
    data: list[str]


class Option(TypedDict, total=False):
    animation: bool
    title: Style
    tooltip: Style
    legend: Legend
    grid: Style
    xAxis: Axis | list[Axis]
    yAxis: Axis | list[Axis]
    dataZoom: list[Style]
    series: list[Series]


def drawn(charts: Sequence[tuple[str, Option | None]]) -> list[tuple[str, Option]]:
    """The charts (key, option) that have something to draw (``None``: nothing)."""
    return [(key, option) for key, option in charts if option is not None]


def cells(datum: Datum) -> Sequence[Cell]:
    """The values of a point that is a row (``[x, y, ...]``); none for any other point."""
    if isinstance(datum, Sequence) and not isinstance(datum, str):
        return datum
    return ()
