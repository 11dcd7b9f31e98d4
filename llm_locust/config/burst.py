"""``--burst``: synchronized waves of requests on top of the base load.

Grammar: comma-separated ``key=value`` pairs, ``every`` and ``size`` required::

    every=60s,size=50            50 requests at once every 60 s (the first wave after 60 s)
    every=30s,size=20,start=5s   the first wave 5 s into the test
    every=2m,size=100,count=3    three waves only

Durations take the usual units (``500ms``, ``60s``, ``2m``). The waves are open loop: they
leave on time whatever the server does (see :mod:`llm_locust.load.bursts`).

Pure module: no Locust, no network.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_locust.config.units import OptionError, parse_duration

__all__ = ["BurstSpec", "parse_burst"]

_KEYS = ("every", "size", "start", "count")


@dataclass(frozen=True)
class BurstSpec:
    every_s: float
    size: int
    start_s: float
    count: int | None
    text: str

    def __str__(self) -> str:
        return self.text


def parse_burst(text: object) -> BurstSpec:
    """Parse ``--burst``; ``ValueError`` with the reason (the caller names the flag)."""
    spec = str(text).strip()
    values: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        if not sep or key not in _KEYS:
            raise ValueError(f"expected every=DURATION,size=N[,start=DURATION][,count=N], got {part!r}")
        if key in values:
            raise ValueError(f"{key} given twice")
        values[key] = value.strip()
    missing = [k for k in ("every", "size") if k not in values]
    if missing:
        raise ValueError(f"missing {' and '.join(missing)} (e.g. every=60s,size=50)")
    every = _duration(values["every"])
    if every <= 0:
        raise ValueError("every must be above 0 s")
    start = _duration(values["start"]) if "start" in values else every
    count = _count(values["count"], "count") if "count" in values else None
    return BurstSpec(every, _count(values["size"], "size"), start, count, spec)


def _duration(value: str) -> float:
    try:
        return parse_duration(value, "--burst")
    except OptionError as exc:
        raise ValueError(exc.reason) from None


def _count(value: str, key: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{key} must be a whole number of at least 1, got {value!r}")
    return int(value)
