"""The streaming client against a scripted peer: every failure is a record with a class."""

from __future__ import annotations

import json
import socket
import time
import urllib.request
from collections.abc import Iterator

import gevent
import pytest

from llm_locust.client.streaming import ClientConfig, StreamingClient
from llm_locust.config.cancel import parse_cancel_after
from llm_locust.load.cancel import CancelPolicy
from llm_locust.record import CANCELLED, INCOMPLETE, RequestRecord
from llm_locust.runtime.backoff import PacedClient
from llm_locust.workload.corpus import PARAGRAPHS
from llm_locust.workload.tokenizer import HFTokenizer
from tests.bpe import train_bpe
from tests.scripted_server import running_peer


@pytest.fixture(scope="module")
def peer() -> Iterator[str]:
    with running_peer() as base:
        yield base


def send(host: str, timeout: float = 5.0, body: dict | None = None) -> tuple[RequestRecord, str]:
    client = StreamingClient(ClientConfig(host=host, model="m", request_timeout=timeout))
    record = RequestRecord(request_id="t", wall_start=0.0, t_sent=0.0)
    try:
        text = client.send(body or {"model": "m", "messages": [], "stream": True}, record, keep_text=True)
    finally:
        client.close()
    return record, text


def send_with(config: ClientConfig, n: int = 1) -> list[RequestRecord]:
    """``n`` requests in a row through one client with ``config``; their records."""
    client = StreamingClient(config)
    records = [RequestRecord(request_id=str(i), wall_start=0.0, t_sent=0.0) for i in range(n)]
    try:
        for record in records:
            client.send({"model": "m", "messages": [], "stream": True}, record)
    finally:
        client.close()
    return records


def test_ok_stream(peer: str) -> None:
    r, text = send(f"{peer}/ok")
    assert r.ok, r.message
    assert text == "abc"
    assert r.completion_tokens == 3 and r.token_source == "usage" and r.prompt_tokens == 7
    assert r.prompt_token_source == "usage" and r.finish_reason == "stop"
    assert len(r.chunk_times) == 3 and r.ttft is not None and r.ttft > 0


def test_ttft_is_the_first_content_chunk_not_the_role_chunk(peer: str) -> None:
    """The peer's /ok stream sends the role-only chunk (no content) at once, then sleeps 20 ms
    before the first token: TTFT (sent -> first content token) is at least those 20 ms. Taken at
    the role chunk it would be the ~1 ms of a loopback round trip."""
    r, _ = send(f"{peer}/ok")
    assert r.ok, r.message
    assert r.ttft is not None and r.ttft >= 0.019, r.ttft
    assert r.t_first_token == r.chunk_times[0]  # the first of the three content chunks


def test_event_split_across_writes_is_timed_on_arrival(peer: str) -> None:
    r, text = send(f"{peer}/split")
    assert r.ok, r.message
    assert text == "xy"
    # the first event completes only with its third write, ~100 ms after the head
    assert r.ttft is not None and r.ttft >= 0.09


@pytest.fixture(scope="module")
def bpe(tmp_path_factory: pytest.TempPathFactory) -> HFTokenizer:
    """A byte-level BPE trained here on the bundled corpus: a real tokenizer the client never saw."""
    return HFTokenizer(train_bpe(tmp_path_factory.mktemp("bpe") / "tokenizer.json", PARAGRAPHS, 600))


def test_stream_without_usage_is_counted_by_the_runs_tokenizer(peer: str, bpe: HFTokenizer) -> None:
    prompt = "Quarterly revenue grew while operating costs fell."
    body = {"model": "m", "messages": [{"role": "user", "content": prompt}], "stream": True}
    client = StreamingClient(ClientConfig(host=f"{peer}/no_usage", model="m", tokenizer=bpe))
    record = RequestRecord(request_id="t", wall_start=0.0, t_sent=0.0, target_input_tokens=9)
    try:
        text = client.send(body, record)
    finally:
        client.close()
    assert record.ok, record.message
    assert text == ""  # counted, not returned: keep_text was not asked for
    assert (record.completion_tokens, record.token_source) == (bpe.count_batch(["abc"])[0], "tokenizer")
    assert (record.prompt_tokens, record.prompt_token_source) == (bpe.count_batch([prompt])[0], "tokenizer")
    assert record.prompt_tokens != 9  # the count, not the target


def test_stream_without_usage_counts_chunks_and_says_so(peer: str) -> None:
    r, _ = send(f"{peer}/no_usage")
    assert r.ok, r.message
    assert r.completion_tokens == 3 and r.token_source == "chunks"
    assert r.prompt_tokens is None and r.prompt_token_source is None  # no target, no tokenizer


@pytest.mark.parametrize("scenario", ["cut_chunked", "cut_close"])
def test_clean_end_without_finish_reason_is_a_cut_stream(peer: str, scenario: str) -> None:
    """3 tokens and a clean end, no finish_reason: cut, not a 3-token success."""
    r, _ = send(f"{peer}/{scenario}")
    assert r.outcome == "stream_broken", (r.outcome, r.message)
    assert r.message.startswith("cut after 3 tokens, no finish_reason"), r.message
    assert r.ttft is not None and len(r.chunk_times) == 3 and len(r.itl) == 2


def test_cut_stream_keeps_its_partial_marks(peer: str) -> None:
    """41 tokens, [DONE] without finish_reason, then the body ends short of its last chunk."""
    r, _ = send(f"{peer}/cut_41")
    assert r.outcome == "stream_broken", (r.outcome, r.message)
    assert r.message.startswith("cut after 41 tokens, no finish_reason"), r.message
    assert r.status == 200
    assert r.ttft is not None and r.ttft > 0
    assert len(r.chunk_times) == 41 and len(r.itl) == 40
    assert r.completion_tokens == 41 and r.token_source == "chunks"


def test_early_clean_stop_is_a_short_success(peer: str) -> None:
    body = {"model": "m", "messages": [], "stream": True, "max_tokens": 8}
    r, _ = send(f"{peer}/early_stop", body=body)
    assert r.ok, r.message
    assert r.completion_tokens == 2 and r.max_tokens == 8 and r.finish_reason == "stop"
    assert r.short_output is True and r.to_json()["short_output"] is True
    assert r.usage_conflict is None


def test_usage_that_contradicts_the_stream_is_flagged_and_not_counted(peer: str) -> None:
    body = {"model": "m", "messages": [], "stream": True, "max_tokens": 8}
    r, _ = send(f"{peer}/usage_conflict", body=body)
    assert r.ok, r.message
    assert r.completion_tokens == 5 and r.token_source == "chunks"  # the 5 chunks received, not 50
    assert r.first_visible_tokens is None  # no batching read into a count that cannot be right
    assert r.usage_conflict is not None
    assert "50" in r.usage_conflict and "5 content chunks" in r.usage_conflict and "8" in r.usage_conflict
    assert r.to_json()["usage_conflict"] == r.usage_conflict


@pytest.mark.parametrize(
    ("scenario", "fragment"),
    [
        ("usage_lots", "usage is not an object"),
        ("tokens_abc", "usage.completion_tokens"),
        ("choices_null", "choices[0] is not an object"),
        ("delta_string", "delta is not an object"),
        ("content_number", "content is not a string"),
        ("not_utf8", "not UTF-8"),
    ],
)
def test_wrong_shapes_are_one_bad_payload_record(peer: str, scenario: str, fragment: str) -> None:
    r, _ = send(f"{peer}/{scenario}")
    assert r.outcome == "bad_payload", (r.outcome, r.message)
    assert fragment in r.message, r.message
    assert r.e2e is not None and r.ttft is not None  # the token before the bad chunk is kept


@pytest.mark.parametrize("scenario", ["bad_chunk_first", "bad_chunk_later"])
def test_broken_chunked_encoding_has_one_class_whatever_the_timing(peer: str, scenario: str) -> None:
    """Status received = not a connect failure, whether the bad bytes came with the head or later."""
    r, _ = send(f"{peer}/{scenario}")
    assert r.outcome == "stream_broken", (r.outcome, r.message)
    assert r.status == 200
    assert r.message.startswith("cut after 1 tokens, no finish_reason"), r.message


@pytest.mark.parametrize(
    ("scenario", "outcome", "message"),
    [
        ("bad_chunk_with_token", "stream_broken", "cut after 1 tokens, no finish_reason (HTTPParseError"),
        ("not_utf8_with_token", "bad_payload", "stream is not UTF-8 text: bytes b'\\xff"),
    ],
)
def test_a_token_in_the_same_read_as_bad_bytes_is_kept(
    peer: str, scenario: str, outcome: str, message: str
) -> None:
    """The token came first, in the same read as a broken chunk or bytes that are not UTF-8:
    it is timed and counted (issue 26 §8: 'cut after 0 tokens', no TTFT)."""
    r, text = send(f"{peer}/{scenario}")
    assert r.outcome == outcome, (r.outcome, r.message)
    assert r.message.startswith(message), r.message
    assert len(r.chunk_times) == 1 and text == "a"
    assert r.ttft is not None and r.ttft >= 0.04  # the token's read, 50 ms after the headers


@pytest.mark.parametrize(
    ("scenario", "outcome", "fragment"),
    [
        ("llama_error", "stream_error", "exceeds the context"),  # llama.cpp's error: field
        ("context_400", "http_4xx", "HTTP 400: maximum context length exceeded"),
        ("cut_chunked", "stream_broken", "cut after 3 tokens"),  # tokens came: no size hint
    ],
)
def test_a_failure_before_any_token_gives_the_prompt_length(
    peer: str, scenario: str, outcome: str, fragment: str
) -> None:
    client = StreamingClient(ClientConfig(host=f"{peer}/{scenario}", model="m"))
    record = RequestRecord(request_id="t", wall_start=0.0, t_sent=0.0, target_input_tokens=9009)
    try:
        client.send({"model": "m", "messages": [], "stream": True, "max_tokens": 512}, record)
    finally:
        client.close()
    assert record.outcome == outcome, (record.outcome, record.message)
    assert fragment in record.message
    hinted = "(prompt 9009 tokens, max_tokens 512)" in record.message
    assert hinted is (not record.chunk_times), record.message


@pytest.mark.parametrize(
    ("scenario", "outcome", "fragment"),
    [
        ("html", "bad_payload", "expected text/event-stream, got 'text/html' (HTTP 200: <html>oops</html>)"),
        ("json_200", "bad_payload", "got 'application/json' (HTTP 200: {'object': 'list', 'data': []})"),
        (
            "redirect",
            "http_other",
            "HTTP 301: redirects to https://login.example.test/sso?next=%2Fv1 (not followed)",
        ),
        ("unauthorized", "http_4xx", "invalid api key"),
        ("broken", "stream_broken", "cut after 1 tokens"),
        ("malformed", "bad_payload", "invalid JSON"),
        ("stream_error", "stream_error", "engine died"),
        ("empty", "empty_response", "without any generated text"),
    ],
)
def test_failures_have_a_class_and_message(peer: str, scenario: str, outcome: str, fragment: str) -> None:
    r, _ = send(f"{peer}/{scenario}")
    assert r.outcome == outcome, (r.outcome, r.message)
    assert fragment in r.message
    assert r.e2e is not None


def test_a_repeated_retry_after_is_read_not_a_crash(peer: str) -> None:
    # two Retry-After headers (3 and 7 s): the client's header map gives a list; the record is
    # still an http_429 with the server's message, and the first value is the wait asked for
    r, _ = send(f"{peer}/retry_twice")
    assert r.outcome == "http_429", (r.outcome, r.message)
    assert "slow down" in r.message
    assert r.extra.get("retry_after") == 3.0


def test_unreachable_host_is_a_connect_failure() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connection refused
        r, _ = send(f"http://127.0.0.1:{port}")
    assert r.outcome == "connect", (r.outcome, r.message)
    assert "Refused" in r.message or "refused" in r.message


def test_keep_alive_check_override_targets_a_real_pool_method() -> None:
    """The pool's own check yields to the gevent hub before every send (TTFT +18 ms at 500
    users); the client replaces it. Fail loudly if geventhttpclient renames the method."""
    from geventhttpclient.connectionpool import ConnectionPool

    from llm_locust.client.streaming import _socket_alive

    assert callable(getattr(ConnectionPool, "_is_socket_alive", None))
    client = StreamingClient(ClientConfig(host="http://127.0.0.1:9", model="m"))
    try:
        assert client._http._connection_pool._is_socket_alive is _socket_alive
    finally:
        client.close()


def test_a_user_killed_mid_stream_leaves_an_incomplete_record_with_its_marks(peer: str) -> None:
    """Locust stops a user with GreenletExit; the record must say what arrived (issue 8 §2)."""
    client = StreamingClient(ClientConfig(host=f"{peer}/slow", model="m", request_timeout=30))
    record = RequestRecord(request_id="t", wall_start=0.0, t_sent=0.0)
    body = {"model": "m", "messages": [], "stream": True}
    try:
        g = gevent.spawn(client.send, body, record)
        deadline = gevent.get_hub().loop.now() + 10
        while len(record.chunk_times) < 3 and gevent.get_hub().loop.now() < deadline:
            gevent.sleep(0.01)
        g.kill(block=True, timeout=5)
    finally:
        client.close()
    assert g.dead and isinstance(g.value, gevent.GreenletExit)  # the kill went on unwinding
    assert record.outcome == INCOMPLETE and not record.ok
    assert record.ttft is not None and 0 < record.ttft < 1.0
    assert 3 <= len(record.chunk_times) < 50 and record.completion_tokens == len(record.chunk_times)
    assert record.e2e is not None and record.e2e >= record.ttft
    assert "stopped after" in record.message and "GreenletExit" in record.message


# -- reasoning models (issue 16 §1) ---------------------------------------------------------


def test_reasoning_stream_has_two_clocks_and_a_token_split(peer: str) -> None:
    r, text = send(f"{peer}/reasoning")
    assert r.ok, r.message
    assert text == "hmm soone two three four five six"
    assert len(r.chunk_times) == 5 and r.reasoning_chunks == 2
    # the scripted peer waits 20 ms between writes: the first content chunk is the 4th event
    assert r.ttft is not None and r.ttft_visible is not None
    assert r.ttft_visible - r.ttft >= 0.035
    assert r.t_first_visible == r.chunk_times[2]
    assert (r.reasoning_tokens, r.reasoning_token_source, r.answer_tokens) == (2, "usage", 6)
    assert r.cached_tokens == 5
    # 6 answer tokens in 3 content chunks of 18, 5 and 4 characters: the first carried 4
    assert r.first_visible_tokens == 4
    row = r.to_json()
    assert row["ttft_visible"] == r.ttft_visible and row["answer_tokens"] == 6
    back = RequestRecord.from_json(row)
    assert back.ttft_visible == pytest.approx(r.ttft_visible) and back.reasoning_tokens == 2


def test_batched_first_content_chunk_warns_once(peer: str, caplog: pytest.LogCaptureFixture) -> None:
    import llm_locust.client.streaming as client_module

    client_module._batched_warned.clear()
    with caplog.at_level("WARNING", logger="llm_locust"):
        send(f"{peer}/reasoning")
        send(f"{peer}/reasoning")
        send(f"{peer}/ok")
    warnings = [m for m in caplog.messages if "first content chunk carried" in m]
    assert warnings == [
        "llm-locust: the first content chunk carried 4 tokens: ttft_visible includes the "
        "decode time of 3 of them (the server batches tokens into chunks; ITL sees one gap "
        "for several)"
    ]


def test_reasoning_without_usage_counts_chunks_or_the_tokenizer(peer: str, bpe: HFTokenizer) -> None:
    r, _ = send(f"{peer}/reasoning_no_usage")
    assert r.ok, r.message
    assert (r.reasoning_tokens, r.reasoning_token_source) == (2, "chunks")
    assert r.completion_tokens == 5 and r.answer_tokens == 3 and r.token_source == "chunks"
    assert r.first_visible_tokens is None  # chunk counts cannot say how many tokens a chunk held
    assert r.cached_tokens is None
    (record,) = send_with(ClientConfig(host=f"{peer}/reasoning_no_usage", model="m", tokenizer=bpe))
    reasoning, answer, first = bpe.count_batch(
        ["hmm so", "one two three four five six", "one two three four"]
    )
    everything = bpe.count_batch(["hmm soone two three four five six"])[0]
    assert (record.reasoning_tokens, record.reasoning_token_source) == (reasoning, "tokenizer")
    assert (record.completion_tokens, record.token_source) == (everything, "tokenizer")
    assert record.first_visible_tokens == first and first > 1
    assert answer > 1


# -- cancelled requests (issue 16 §2) -------------------------------------------------------


@pytest.mark.parametrize(
    ("after", "chunks"), [("3tokens", (3, 3)), ("first-token", (1, 1)), ("0.5s", (1, 4))]
)
def test_a_cancelled_request_keeps_its_partial_marks(peer: str, after: str, chunks: tuple[int, int]) -> None:
    policy = CancelPolicy(1.0, parse_cancel_after(after))
    config = ClientConfig(host=f"{peer}/slow", model="m", request_timeout=30, cancel=policy)
    record, again = send_with(config, 2)  # the second on a fresh connection
    for r in (record, again):
        assert r.outcome == CANCELLED and not r.ok, r.message
        assert chunks[0] <= len(r.chunk_times) <= chunks[1]
        assert r.ttft is not None and r.e2e is not None and r.e2e < 2.0  # not the 10 s stream
        assert r.completion_tokens == len(r.chunk_times) and r.finish_reason is None
        assert "cancelled by the client" in r.message and "(--cancel-rate)" in r.message
    if after.endswith("s") and not after.endswith("tokens"):
        assert 0.5 <= record.e2e < 0.8


def test_no_cancel_rate_no_cancellation(peer: str) -> None:
    policy = CancelPolicy(0.0, parse_cancel_after("first-token"))
    (record,) = send_with(ClientConfig(host=f"{peer}/ok", model="m", cancel=policy))
    assert record.ok, record.message


# -- misbehaving servers (issue 26) ---------------------------------------------------------


def test_a_stream_is_complete_at_done_even_if_its_body_never_ends(peer: str) -> None:
    """[DONE] and a finish_reason, then the server holds the body open: complete at [DONE], not a
    timeout with an E2E of the timeout; the half-read connection is closed, not reused."""
    client = StreamingClient(ClientConfig(host=f"{peer}/done_open", model="m", request_timeout=4.0))
    records = [RequestRecord(request_id=str(i), wall_start=0.0, t_sent=0.0) for i in range(2)]
    called = []
    try:
        for record in records:
            called.append(time.perf_counter())
            client.send({"model": "m", "messages": [], "stream": True}, record)
    finally:
        client.close()
    for r in records:
        assert r.ok, (r.outcome, r.message)
        assert r.finish_reason == "stop" and r.completion_tokens == 3 and len(r.chunk_times) == 3
        # usage and [DONE] came 20 and 40 ms after the last token: E2E ends at the read of [DONE]
        assert r.t_end is not None and r.t_end - r.chunk_times[-1] >= 0.035
        assert r.e2e is not None and r.e2e < 2.0  # half the timeout, which the old client waited for
    # the second request was timed only once the first one's connection was given up (0.25 s
    # after [DONE]): that wait is not in its TTFT
    assert records[1].t_sent - called[1] >= 0.2
    assert requests_seen(peer, "done_open") == {"requests": 2, "connections": 2}


def test_a_connection_whose_body_ends_after_done_is_kept_alive(peer: str) -> None:
    """The body's last chunk 20 ms after [DONE]: the reading stops at [DONE], the connection
    still goes back to the pool once the body has ended, and the next request reuses it."""
    records = send_with(ClientConfig(host=f"{peer}/keepalive", model="m"), 3)
    assert all(r.ok and len(r.chunk_times) == 3 for r in records), [r.message for r in records]
    assert requests_seen(peer, "keepalive") == {"requests": 3, "connections": 1}


def test_a_10_mb_event_is_decoded_in_linear_time(peer: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """One 10 MiB event over loopback, read in the reader's pieces: complete, and the decoder's
    CPU time is about 32x that of a 320 KiB event (quadratic: ~1,000x; issue 26 §3, where
    every request timed out at --request-timeout 3). Both measured here, in this process."""
    import llm_locust.protocol.stream as stream_module

    spent: list[float] = []

    class Timed(stream_module.EventDecoder):  # type: ignore[misc, valid-type]
        def feed(self, chunk: bytes) -> list[str]:
            start = time.process_time()
            try:
                return super().feed(chunk)
            finally:
                spent[-1] += time.process_time() - start

    monkeypatch.setattr(stream_module, "EventDecoder", Timed)
    best = {}
    for kib in (320, 10240):
        for _ in range(2):
            spent.append(0.0)
            r, text = send(f"{peer}/big{kib}k", timeout=60.0)
            assert r.ok and len(r.chunk_times) == 1 and text == "x" * (kib * 1024), (r.outcome, r.message)
            best[kib] = min(best.get(kib, float("inf")), spent[-1])
    assert best[10240] < 200 * best[320], best


@pytest.mark.parametrize("scenario", ["html", "json_200", "redirect", "ok"])
def test_a_reply_that_is_no_stream_backs_off_like_a_5xx(peer: str, scenario: str) -> None:
    """A 200 with an HTML or JSON body, or a redirect, refuses the request before any token: the
    user pauses 0.1 s, then 0.2, 0.4 (issue 26 §7: 19,109 requests in 10 s for an HTML page);
    a stream that arrived does not."""
    paced = PacedClient(StreamingClient(ClientConfig(host=f"{peer}/{scenario}", model="m")))
    records = [RequestRecord(request_id=str(i), wall_start=0.0, t_sent=0.0) for i in range(3)]
    try:
        for record in records:
            paced.send({"model": "m", "messages": [], "stream": True}, record)
    finally:
        paced.close()
    pauses = [(r.extra.get("pause_s"), r.extra.get("pause_reason")) for r in records]
    if scenario == "ok":
        assert all(r.ok for r in records) and pauses == [(None, None)] * 3
    else:
        assert not any(r.ok for r in records)
        assert pauses == [(0.1, "backoff"), (0.2, "backoff"), (0.4, "backoff")]


def test_a_gzip_encoded_stream_is_decoded_and_timed_per_read(peer: str) -> None:
    """Compressed though no coding was asked for (issue 26 §6: 'cut after 0 tokens, no
    finish_reason' for a complete stream): decoded as it arrives, each event flushed in its own
    write 20 ms apart, so the tokens keep their own times."""
    r, text = send(f"{peer}/gzip")
    assert r.ok, (r.outcome, r.message)
    assert text == "abc" and r.finish_reason == "stop" and r.completion_tokens == 3
    assert len(r.itl) == 2 and min(r.itl) >= 0.015  # not one batch at the end of the body


def test_a_coding_that_cannot_be_decoded_is_named(peer: str) -> None:
    r, _ = send(f"{peer}/brotli")
    assert r.outcome == "bad_payload", (r.outcome, r.message)
    assert r.message.startswith("body is br-encoded"), r.message


def test_a_repeated_content_encoding_is_named_as_the_stacked_codings(peer: str) -> None:
    """Two Content-Encoding headers come from the HTTP library as a list: read as one field value
    ("gzip, gzip", two codings stacked), named, not an unexpected error."""
    r, _ = send(f"{peer}/gzip_twice")
    assert r.outcome == "bad_payload", (r.outcome, r.message)
    assert r.message.startswith("body is gzip, gzip-encoded (Content-Encoding: gzip, gzip)"), r.message


def test_a_repeated_location_is_named_whole(peer: str) -> None:
    r, _ = send(f"{peer}/redirect_twice")
    assert r.outcome == "http_other", (r.outcome, r.message)
    want = "HTTP 302: redirects to https://a.example.test/sso, https://b.example.test/ (not followed)"
    assert want in r.message, r.message


def requests_seen(peer: str, scenario: str) -> dict[str, int]:
    with urllib.request.urlopen(f"{peer}/{scenario}/count", timeout=5) as reply:
        return dict(json.loads(reply.read()))


def _headers_seen(peer: str, scenario: str) -> dict[str, str]:
    with urllib.request.urlopen(f"{peer}/{scenario}/headers", timeout=5) as reply:
        lines = json.load(reply)["headers"]
    return {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}


def test_session_header_carries_the_requests_session_id(peer: str) -> None:
    # --session-header NAME: a router sees each request's session (agent, conversation, trace
    # session) in that header; a request of no session sends none
    client = StreamingClient(ClientConfig(host=f"{peer}/sess", model="m", session_header="X-Session-Id"))
    try:
        record = RequestRecord(request_id="a", wall_start=0.0, t_sent=0.0, session_id="trace-7")
        client.send({"model": "m", "messages": [], "stream": True}, record)
        assert record.ok and _headers_seen(peer, "sess").get("x-session-id") == "trace-7"
        plain = RequestRecord(request_id="b", wall_start=0.0, t_sent=0.0)
        client.send({"model": "m", "messages": [], "stream": True}, plain)
        assert plain.ok and "x-session-id" not in _headers_seen(peer, "sess")
    finally:
        client.close()
