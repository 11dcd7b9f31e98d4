"""Value types of the simulator's flags: each converter says what it expected.

argparse prints ``argument --flag: expected <what>, got '<text>'`` from these, on one line.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from llm_locust.sim.reasoning import ReasoningSpec, parse_reasoning

__all__ = [
    "fraction",
    "integer",
    "nonneg",
    "nonneg_int",
    "nonneg_ms",
    "nonneg_s",
    "port",
    "pos_float",
    "pos_int",
    "rate",
    "reasoning",
    "retry_after",
]


def _typed(
    kind: Callable[[str], float], lo: float | None, hi: float | None, what: str
) -> Callable[[str], float]:
    def convert(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    convert.__name__ = what
    return convert


port = _typed(int, 0, 65535, "a port number 0-65535")
pos_int = _typed(int, 1, None, "an integer >= 1")
nonneg_int = _typed(int, 0, None, "an integer >= 0")
nonneg_ms = _typed(float, 0, None, "a number of milliseconds >= 0")
nonneg_s = _typed(float, 0, None, "a number of seconds >= 0")
rate = _typed(float, 0, 1, "a rate between 0 and 1")
pos_float = _typed(float, 1e-9, None, "a number > 0")
fraction = _typed(float, 1e-9, 1, "a fraction in (0, 1]")
integer = _typed(int, None, None, "an integer")
nonneg = _typed(float, 0, None, "a number >= 0")


def reasoning(text: str) -> ReasoningSpec | None:
    try:
        return parse_reasoning(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def retry_after(text: str) -> int | None:
    if text.strip().lower() == "none":
        return None
    return int(_typed(int, 0, None, "whole seconds >= 0 or 'none'")(text))
