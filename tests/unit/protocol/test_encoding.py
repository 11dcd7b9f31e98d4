"""A body's Content-Encoding (issue 26 §6): gzip and deflate decoded per read, others named."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable

import pytest

from llm_locust.protocol.encoding import decoding
from llm_locust.protocol.stream import Failure


def collect() -> tuple[list[tuple[bytes, float]], Callable[[bytes, float], bool]]:
    got: list[tuple[bytes, float]] = []

    def sink(body: bytes, now: float) -> bool:
        got.append((body, now))
        return body.endswith(b"[DONE]\n\n")

    return got, sink


def test_no_coding_or_identity_is_the_sink_itself() -> None:
    _, sink = collect()
    assert decoding(None, sink) is sink and decoding(" Identity ", sink) is sink


@pytest.mark.parametrize("coding", ["gzip", "x-gzip", "GZIP", "deflate"])
def test_each_read_is_decoded_as_it_arrives_with_its_time(coding: str) -> None:
    events = [b"data: 1\n\n", b"data: 2\n\n", b"data: [DONE]\n\n"]
    wbits = zlib.MAX_WBITS if coding == "deflate" else 16 + zlib.MAX_WBITS
    packer = zlib.compressobj(wbits=wbits)
    reads = [packer.compress(e) + packer.flush(zlib.Z_SYNC_FLUSH) for e in events]
    got, sink = collect()
    feed = decoding(coding, sink)
    done = [feed(read, float(t)) for t, read in enumerate(reads)]
    assert got == [(e, float(t)) for t, e in enumerate(events)]
    assert done == [False, False, True]  # the sink's answer comes back ([DONE])


def test_a_read_with_no_whole_byte_of_output_reaches_no_sink() -> None:
    got, sink = collect()
    feed = decoding("gzip", sink)
    assert feed(gzip.compress(b"data: 1\n\n")[:5], 0.0) is False and got == []


@pytest.mark.parametrize(
    ("coding", "data", "message"),
    [
        ("br", None, "body is br-encoded (Content-Encoding: br), not decoded"),
        ("zstd", None, "body is zstd-encoded"),
        ("gzip", b"not gzip at all", "body is not valid gzip"),
    ],
)
def test_what_cannot_be_decoded_is_a_bad_payload_naming_it(
    coding: str, data: bytes | None, message: str
) -> None:
    _, sink = collect()
    with pytest.raises(Failure) as caught:
        decoding(coding, sink)(data or b"", 0.0)
    assert caught.value.outcome == "bad_payload" and caught.value.message.startswith(message)
