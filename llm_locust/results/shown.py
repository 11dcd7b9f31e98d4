"""A number shown beside the threshold it is judged against is shown on its own side of it.

Rounded to its usual digits, a value just over its threshold reads as on it or under it
(``tpot_p90 95 ms misses tpot_p90<=0.095s`` for 95.3 ms; ``send lag p99 50 ms > 50 ms``): the
text contradicts itself. :func:`fixed` shows the digits that keep it on its side.

Pure module: no Locust, no network.
"""

from __future__ import annotations

__all__ = ["MORE_DIGITS", "fixed"]

#: :func:`fixed` shows at most this many more decimals than asked for.
MORE_DIGITS = 6


def fixed(value: float, digits: int, threshold: float | None = None) -> str:
    """``value`` with ``digits`` decimals, or as many more (up to :data:`MORE_DIGITS`) as it takes
    to show it on its own side of ``threshold`` (in ``value``'s unit): rounded, a value just over
    its threshold would read as on it or under it, beside the line that says it misses it."""
    shown = f"{value:.{digits}f}"
    if threshold is None or value == threshold:
        return shown
    for more in range(1, MORE_DIGITS + 1):
        if float(shown) != threshold and (float(shown) > threshold) == (value > threshold):
            break
        shown = f"{value:.{digits + more}f}"
    return shown
