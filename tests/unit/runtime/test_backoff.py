"""Pauses after failed requests (issue 9 §3): Retry-After honoured, exponential capped backoff."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from llm_locust.protocol.retry import retry_after_seconds
from llm_locust.runtime.backoff import BACKOFF_BASE_S, BACKOFF_CAP_S, RETRY_AFTER_CAP_S, PacedClient, Pacer


def test_requests_that_never_reach_the_model_back_off_exponentially_up_to_the_cap() -> None:
    pacer = Pacer()
    waits = [pacer.pause_after("connect", None, None)[0] for _ in range(10)]
    assert waits[:4] == [BACKOFF_BASE_S, 2 * BACKOFF_BASE_S, 4 * BACKOFF_BASE_S, 8 * BACKOFF_BASE_S]
    assert max(waits) == BACKOFF_CAP_S and waits[-1] == BACKOFF_CAP_S
    for status in (401, 403, 404, 500, 502, 429):
        assert Pacer().pause_after("http_4xx", status, None) == (BACKOFF_BASE_S, "backoff"), status


def test_the_documented_pauses_in_seconds() -> None:
    """The literal values (docs/running.md, the module docstring): 0.1 s, doubling, never more than 5 s;
    Retry-After honoured up to 60 s. Written out here, not read from the module under test."""
    pacer = Pacer()
    waits = [pacer.pause_after("connect", None, None)[0] for _ in range(12)]
    assert waits[:7] == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0])
    assert waits[6:] == [5.0] * 6  # the 7th refusal in a row reaches the cap and stays there
    assert Pacer().pause_after("http_429", 429, 3600.0) == (60.0, "retry_after")


def test_a_redirect_or_a_reply_unreadable_before_any_token_backs_off() -> None:
    """Issue 26 §7: refusals before any token, like a 5xx; an unreadable reply after tokens is
    a measurement of a stream the server took."""
    for outcome, status in (("http_other", 301), ("http_other", 302), ("http_other", 307)):
        assert Pacer().pause_after(outcome, status, None) == (0.1, "backoff"), status
    pacer = Pacer()
    waits = [pacer.pause_after("bad_payload", 200, None, tokens=0) for _ in range(3)]
    assert waits == [(0.1, "backoff"), (0.2, "backoff"), (0.4, "backoff")]
    assert pacer.pause_after("bad_payload", 200, None, tokens=3) == (0.0, None)
    assert pacer.pause_after("bad_payload", 200, None, tokens=0) == (0.1, "backoff")  # streak reset


def test_a_success_or_a_request_the_server_took_ends_the_streak() -> None:
    pacer = Pacer()
    pacer.pause_after("connect", None, None)
    pacer.pause_after("connect", None, None)
    assert pacer.pause_after("ok", 200, None) == (0.0, None)
    assert pacer.pause_after("connect", None, None)[0] == BACKOFF_BASE_S
    assert pacer.pause_after("timeout", 200, None) == (0.0, None)  # a measurement, not a refusal
    assert pacer.pause_after("connect", None, None)[0] == BACKOFF_BASE_S


def test_retry_after_is_honoured_on_429_and_503_and_capped() -> None:
    assert Pacer().pause_after("http_429", 429, 2.0) == (2.0, "retry_after")
    assert Pacer().pause_after("http_5xx", 503, 7.5) == (7.5, "retry_after")
    assert Pacer().pause_after("http_5xx", 503, 3600.0) == (RETRY_AFTER_CAP_S, "retry_after")
    assert Pacer().pause_after("http_5xx", 500, 2.0) == (BACKOFF_BASE_S, "backoff")  # only 429/503


def test_retry_after_in_seconds_or_as_a_date() -> None:
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds(" 0 ") == 0.0
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == 10.0
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412490.0) == 0.0  # past
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    # a repeated header: geventhttpclient's header map gives a list; the first value counts
    assert retry_after_seconds(["3", "7"]) == 3.0 and retry_after_seconds([]) is None


class _Client:
    config = "cfg"

    def __init__(self, outcome: str, status: int | None, extra: dict[str, Any]) -> None:
        self.outcome, self.status, self.extra = outcome, status, extra

    def send(self, body: dict[str, Any], record: Any, keep_text: bool = False) -> str:
        record.outcome, record.status = self.outcome, self.status
        record.extra.update(self.extra)
        return "text"

    def close(self) -> None: ...


def test_the_paced_client_writes_the_pause_on_the_record() -> None:
    paced = PacedClient(_Client("http_429", 429, {"retry_after": 2.0}))
    record = SimpleNamespace(outcome="ok", status=None, extra={}, chunk_times=[])
    assert paced.send({}, record) == "text" and paced.config == "cfg"
    assert record.extra == {"retry_after": 2.0, "pause_s": 2.0, "pause_reason": "retry_after"}
    ok = SimpleNamespace(outcome="ok", status=None, extra={}, chunk_times=[])
    PacedClient(_Client("ok", 200, {})).send({}, ok)
    assert ok.extra == {}
