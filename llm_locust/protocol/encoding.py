"""A response body's ``Content-Encoding``: gzip and deflate decoded as they arrive, others named.

The client sends no ``Accept-Encoding``, which by RFC 9110 §12.5.3 accepts any coding, and
OpenAI's own client asks for gzip and decodes it: a server (or a proxy in front of it) that
compresses its event stream is answered as that client would answer it. Each read is
decompressed as it arrives (``zlib.decompressobj``), so every event keeps the time of the read
that brought its compressed bytes; a compressor that buffers shows as batched tokens, as it
would to any client. A coding the standard library cannot decode (``br``, ``zstd``) is a
``bad_payload`` that names it, before any token.

Pure module: no network.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

from llm_locust.protocol.stream import Failure
from llm_locust.record import Outcome

__all__ = ["decoding"]

Sink = Callable[[bytes, float], bool]
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


def decoding(encoding: str | None, sink: Sink) -> Sink:
    """``sink`` behind a decoder of ``encoding`` (a ``Content-Encoding`` value; none or
    ``identity``: ``sink`` itself). Raises :class:`Failure` for a coding it cannot decode."""
    name = (encoding or "").strip().lower()
    if name in ("", "identity"):
        return sink
    wbits = _WBITS.get(name)
    if wbits is None:
        raise Failure(
            Outcome.BAD_PAYLOAD, f"body is {name}-encoded (Content-Encoding: {encoding}), not decoded"
        )
    decompress = zlib.decompressobj(wbits).decompress

    def decoded(body: bytes, now: float) -> bool:
        try:
            data = decompress(body)
        except zlib.error as exc:
            raise Failure(Outcome.BAD_PAYLOAD, f"body is not valid {name} ({exc})") from None
        return sink(data, now) if data else False

    return decoded
