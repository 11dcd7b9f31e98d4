"""TLS to the target: verify the certificate chain and the host name, unless told otherwise.

Every connection to the target (the streaming requests, ``GET /v1/models``, the preflight,
the ``--tokenizer server`` probe) takes its context from :func:`tls_context`:

- by default the system's CA bundle, chain **and** host name checked (a certificate a
  trusted CA issued for another name is refused: whoever holds it could read the API key);
- ``--ca-cert FILE``: trust the CAs in FILE instead (a private CA, common for in-cluster
  endpoints), host name still checked;
- ``--insecure``: no verification at all, for a self-signed test target; the run says so.

Pure module: builds contexts, opens no connection. ``factory`` is the module's
``create_default_context`` (``ssl``'s, or ``gevent.ssl``'s for cooperative sockets).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["INSECURE_WARNING", "TlsSettings", "check_tls_options", "tls_context"]

INSECURE_WARNING = (
    "--insecure: TLS certificates are not verified; anyone on the path can read requests and the API key"
)


@dataclass(frozen=True)
class TlsSettings:
    """How to verify the target's certificate."""

    ca_cert: str | None = None
    insecure: bool = False


def check_tls_options(ca_cert: str | None, insecure: bool = False) -> None:
    """Raise ``ValueError`` (one line naming the flag) for a CA file that cannot be used."""
    if not ca_cert:
        return
    if insecure:
        raise ValueError("--ca-cert and --insecure: choose one (--insecure verifies nothing)")
    path = Path(ca_cert)
    if not path.is_file():
        raise ValueError(f"--ca-cert {ca_cert}: no such file")
    try:
        ssl.create_default_context(cafile=str(path))
    except (ssl.SSLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or str(exc) or type(exc).__name__
        raise ValueError(f"--ca-cert {ca_cert}: not a PEM certificate file ({reason})") from None


def tls_context(
    settings: TlsSettings, factory: Callable[..., ssl.SSLContext] = ssl.create_default_context
) -> ssl.SSLContext:
    """A client context for ``settings``; never less strict than ``factory``'s default."""
    context = factory(cafile=settings.ca_cert) if settings.ca_cert else factory()
    if settings.insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context.check_hostname = True
        context.verify_mode = ssl.CERT_REQUIRED
    return context
