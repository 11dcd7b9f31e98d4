"""``--cancel-after``: when a cancelled request is abandoned, the way a user closes a tab.

Grammar (one of)::

    first-token          right after the first token of any kind (the default)
    2s, 500ms, 1m        that long after the request was sent (a duration)
    seconds:2.5          the same, in seconds; seconds:uniform:1,10 draws from [1, 10]
    32tokens, tokens:32  after that many token-bearing chunks; tokens:uniform:1,200

A drawn point is a time (seconds after the send) or a chunk count; ``first-token`` is a
count of 1. Which requests are cancelled is ``--cancel-rate`` (:mod:`llm_locust.load.cancel`).

Pure module: no Locust, no network.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from enum import StrEnum

from llm_locust.config.units import parse_duration

__all__ = ["CancelAfter", "CancelKind", "CancelPoint", "parse_cancel_after"]

_UNIFORM = re.compile(r"uniform:([^,]+),(.+)")
_TOKENS = re.compile(r"(\d+)\s*tokens?")


class CancelKind(StrEnum):
    """What a ``--cancel-after`` point counts (its value is the grammar's ``kind:`` word)."""

    SECONDS = "seconds"  # seconds after the send
    TOKENS = "tokens"  # token-bearing chunks


@dataclass(frozen=True)
class CancelPoint:
    """Where one request is abandoned: ``seconds`` after the send, or after ``chunks`` chunks."""

    seconds: float | None = None
    chunks: int | None = None

    def describe(self) -> str:
        if self.chunks is not None:
            return "after the first token" if self.chunks == 1 else f"after {self.chunks} tokens"
        return f"after {self.seconds:.3g} s"


@dataclass(frozen=True)
class CancelAfter:
    """What it counts (``kind``); a fixed ``low`` or uniform over [``low``, ``high``]."""

    kind: CancelKind
    low: float
    high: float
    text: str

    def draw(self, rng: random.Random) -> CancelPoint:
        value = self.low if self.high == self.low else rng.uniform(self.low, self.high)
        if self.kind is CancelKind.TOKENS:
            return CancelPoint(chunks=max(1, round(value)))
        return CancelPoint(seconds=value)

    def __str__(self) -> str:
        return self.text


def parse_cancel_after(text: object) -> CancelAfter:
    """Parse ``--cancel-after``; ``ValueError`` with the reason (the caller names the flag)."""
    spec = str(text).strip().lower()
    if spec in ("first-token", "first_token", "first"):
        return CancelAfter(CancelKind.TOKENS, 1, 1, "first-token")
    match = _TOKENS.fullmatch(spec)
    if match:
        return _checked(CancelKind.TOKENS, float(match.group(1)), float(match.group(1)), spec)
    word, sep, rest = spec.partition(":")
    if sep and word in tuple(CancelKind):
        uniform = _UNIFORM.fullmatch(rest)
        low, high = (uniform.group(1), uniform.group(2)) if uniform else (rest, rest)
        return _checked(CancelKind(word), _number(low), _number(high), spec)
    try:
        seconds = parse_duration(spec, "--cancel-after")
    except ValueError:
        raise ValueError(
            "expected first-token, a duration (2s, 500ms), N tokens (32tokens), "
            "seconds:X, tokens:N or seconds:uniform:A,B / tokens:uniform:A,B"
        ) from None
    return _checked(CancelKind.SECONDS, seconds, seconds, spec)


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text.strip()!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{text.strip()!r} is not a finite number")
    return value


def _checked(kind: CancelKind, low: float, high: float, text: str) -> CancelAfter:
    if low > high:
        raise ValueError(f"uniform bounds reversed ({low:g} > {high:g})")
    if kind is CancelKind.TOKENS and low < 1:
        raise ValueError("a request is cancelled after at least 1 token")
    if kind is CancelKind.SECONDS and low <= 0:
        raise ValueError("a cancel time is above 0 s")
    return CancelAfter(kind, low, high, text)
