"""The one rule for a target's address: an ``http://`` or ``https://`` URL with a host.

Every place a server address is read checks it here, the moment it is read: Locust's
``--host`` (command line, ``LOCUST_HOST``, the web UI's form), ``--endpoints`` entries and
the ``endpoints`` of a ``llm-locust capacity`` plan file. Without it, ``'not a url'`` ended
in a traceback inside the HTTP client, ``ftp://host:21`` was spoken to over HTTP, and
``127.0.0.1:8000`` (no scheme) was reported as an unknown host.

Pure module: no Locust, no network (``urllib.parse`` only splits text).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from llm_locust.config.units import OptionError

__all__ = ["EXPECTED", "check_target_url", "target_url_problem"]

#: What a bad address is told it should have been.
EXPECTED = "expected an http:// or https:// URL with a host, e.g. http://127.0.0.1:8000"
_SCHEMES = ("http", "https")
_CREDENTIALS = re.compile(r"^((?:[A-Za-z][A-Za-z0-9+.-]*://)?)[^/?#]*@")


def check_target_url(value: object, flag: str) -> str:
    """``value`` without surrounding blanks or a trailing ``/``; a bad address raises :class:`OptionError`.

    The message shows the value with any ``user:key@`` masked: a key never reaches a log.
    """
    text = str(value).strip()
    problem = _problem(text)
    if problem is not None:
        raise OptionError(flag, _CREDENTIALS.sub(r"\1***@", text), f"{problem}: {EXPECTED}")
    return text.rstrip("/")


def _problem(text: str) -> str | None:
    if not text:
        return "empty"
    if any(c.isspace() for c in text):
        return "contains blanks"
    if "://" not in text:
        return "no scheme"
    try:
        parts = urlsplit(text)
    except ValueError as exc:  # an unclosed [ of an IPv6 address
        return f"not a URL ({str(exc).lower()})"
    if parts.scheme.lower() not in _SCHEMES:
        return f"scheme {parts.scheme!r} is not http or https"
    if not parts.hostname:
        return "no host"
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        return "the port is not a number from 1 to 65535"
    if parts.query or parts.fragment:
        return "a base URL has no query or fragment"
    return None


def target_url_problem(value: str, flag: str) -> str | None:
    """The one-line refusal of a given (non-blank) bad address, or ``None`` (blank: "not given")."""
    if not value.strip():
        return None
    try:
        check_target_url(value, flag)
    except OptionError as exc:
        return str(exc)
    return None
