"""``Retry-After``: how long a server asks a client to wait (RFC 9110 §10.2.3), in seconds.

A 429 or 503 may carry it, as delay-seconds (``Retry-After: 2``) or an HTTP date. The client
keeps the value on the failed request's record; a closed-loop user waits that long before its
next request (:mod:`llm_locust.runtime.backoff`), and the preflight waits once, up to a bound,
before it asks again (:mod:`llm_locust.client.preflight`).

Pure module: no network.
"""

from __future__ import annotations

import email.utils
import time

__all__ = ["RETRY_STATUSES", "retry_after_seconds"]

#: The statuses whose ``Retry-After`` is honoured: too many requests, service unavailable.
RETRY_STATUSES = frozenset({429, 503})


def retry_after_seconds(value: str | list[str] | None, now: float | None = None) -> float | None:
    """The wait ``value`` asks for (``None``: no header, or one that is neither form).

    A header sent more than once (a proxy adding its own) comes as a list: the first one counts."""
    if isinstance(value, list):
        value = value[0] if value else None
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(when.timestamp() - (time.time() if now is None else now), 0.0)
