"""The usual chat chunk's bytes around its content, learned once per stream (issue 29 §1).

A server writes every usual chunk of a stream (:func:`~llm_locust.protocol.sse.content_text`:
one choice carrying only a content string) the same way but for that string: vLLM's, SGLang's,
TGI's id, ``created`` and model stay the same for the whole stream. :func:`shape_of` splits
one such payload into the bytes before its content's JSON string and the bytes after it, and
proves the split right (below); a later payload made of the same two ends and, between them,
bytes that orjson reads as one non-empty string is then a usual chunk with that string as its
content: one small ``orjson.loads`` instead of parsing the whole chunk and walking its objects.

Why that is exact: :func:`shape_of` accepts the ends only if the ends around a probe string
(``"\\u0000a"``) parse and read as a usual chunk of exactly that content. The probe starts with
a quote and holds a backslash escape, so the bytes before it cannot end inside a string or a
number (the backslash would then stand outside a string): the probe is one string token, the
bytes after it are read from between tokens, and any other string token in its place (the
learned chunk's own, found the way a JSON lexer ends a string) gives the same tree with that one
leaf changed. The content read is that leaf: were it a leaf of the ends, the learned chunk's
content would be the probe's too, and it is not (a chunk whose content is the probe's text
teaches nothing). Payloads of any other shape (a ``created`` that changes, OpenAI's per-chunk
``obfuscation``) just miss and take the full path.

Pure: no gevent, no sockets.
"""

from __future__ import annotations

import re

import orjson

from llm_locust.protocol.sse import content_text

__all__ = ["Shape", "shape_of"]

#: (bytes before the content string, bytes after it, their lengths: ``len(head)``, ``-len(tail)``)
Shape = tuple[bytes, bytes, int, int]

_KEY = b'"content":'
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # a string token, loosely: probed below
_PROBE, _PROBE_TEXT = b'"\\u0000a"', "\x00a"


def shape_of(raw: bytes, text: str) -> Shape | None:
    """The ends around the content string of ``raw`` (a usual chunk, valid UTF-8 JSON, whose
    content is ``text``), or ``None`` when they cannot be proved (then the stream's chunks take
    the full path)."""
    if text == _PROBE_TEXT:
        return None
    start = raw.rfind(_KEY)
    if start < 0:
        return None
    start += len(_KEY)
    token = _STRING.match(raw, start)
    if token is None:
        return None
    head, tail = raw[:start], raw[token.end() :]
    if not tail:
        return None
    try:
        if content_text(orjson.loads(head + _PROBE + tail)) != _PROBE_TEXT:
            return None
    except orjson.JSONDecodeError:
        return None
    return head, tail, len(head), -len(tail)
