"""What of a run's secrets may be shown: header values, URL credentials, the secret options.

A run holds secrets in three places: ``--api-key`` (or ``LLM_LOCUST_API_KEY`` /
``OPENAI_API_KEY``), ``--header`` values (``X-Api-Key: ...``, a session cookie: any name can
carry one) and credentials in the ``--host`` URL (``https://user:key@host``). Everything that
shows the configuration (``summary.json``, the Prometheus ``run_info`` label, the web UI, logs)
shows it through these functions:

- :func:`redact_headers`: every header value becomes :data:`REDACTED`, except the few harmless
  ones of :data:`SAFE_HEADERS` (content negotiation, a user agent): a deny-list of "auth-like"
  names misses ``X-Api-Key``.
- :func:`strip_credentials`: a URL without its ``user:password@``.
- :data:`SECRET_OPTIONS`: the option destinations never sent to a worker (a worker reads its own).

Pure module: no Locust, no network.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

__all__ = [
    "REDACTED",
    "SAFE_HEADERS",
    "SECRET_OPTIONS",
    "has_credentials",
    "redact_headers",
    "strip_credentials",
]

REDACTED = "<redacted>"
#: Header names (lower case) whose values are shown; every other value is redacted.
SAFE_HEADERS = frozenset(
    {"accept", "accept-encoding", "accept-language", "cache-control", "content-type", "user-agent"}
)
#: Option destinations that hold secrets: never in the web UI's page, never sent to workers.
SECRET_OPTIONS = ("api_key", "header")


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """``headers`` with every value outside :data:`SAFE_HEADERS` replaced by :data:`REDACTED`."""
    return {
        name: value if name.strip().lower() in SAFE_HEADERS else REDACTED for name, value in headers.items()
    }


def has_credentials(url: str) -> bool:
    """Whether ``url`` carries ``user[:password]@`` in its authority."""
    return "@" in urlsplit(url).netloc


def strip_credentials(url: str) -> str:
    """``url`` without credentials (``https://user:key@h:1/p`` -> ``https://h:1/p``)."""
    if not url or not has_credentials(url):
        return url
    parts = urlsplit(url)
    return parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]).geturl()
