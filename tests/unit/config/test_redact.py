"""Redaction (issue 10 §3): header values, URL credentials, the secret flag of a configuration."""

from __future__ import annotations

from llm_locust.config.build import build_config
from llm_locust.config.redact import REDACTED, redact_headers, strip_credentials
from llm_locust.protocol.openai import shown_host


def test_every_header_value_is_redacted_but_the_harmless_ones() -> None:
    headers = {"X-Api-Key": "k1", "Cookie": "s=k2", "api-token": "k3", "Accept": "text/event-stream"}
    assert redact_headers(headers) == {
        "X-Api-Key": REDACTED,
        "Cookie": REDACTED,
        "api-token": REDACTED,
        "Accept": "text/event-stream",
    }


def test_url_credentials_are_stripped() -> None:
    assert strip_credentials("https://user:sk-1@h.example:8443/v1") == "https://h.example:8443/v1"
    assert strip_credentials("http://sk-2@h/") == "http://h/"
    assert strip_credentials("http://h:1") == "http://h:1"
    assert strip_credentials("") == ""
    assert shown_host("https://u:p@h") == "https://h"


def test_the_options_block_shows_neither_header_values_nor_url_credentials() -> None:
    config = build_config({"host": "https://u:sk-3@h", "header": ["X-Api-Key: sk-4"]}, environ={})
    text = repr(config.options())
    assert "sk-3" not in text and "sk-4" not in text and config.options()["host"] == "https://h"


def test_a_configuration_holds_a_secret_with_a_key_or_a_redacted_header() -> None:
    assert not build_config({}, environ={}).request.holds_secret()
    assert not build_config({"header": ["User-Agent: me"]}, environ={}).request.holds_secret()
    assert build_config({"header": ["X-Api-Key: k"]}, environ={}).request.holds_secret()
    assert build_config({}, environ={"OPENAI_API_KEY": "k"}).request.holds_secret()


def test_allowed_hosts_is_a_comma_separated_list() -> None:
    config = build_config({"allowed_hosts": "http://a:1, http://b:2 ,"}, environ={})
    assert config.request.allowed_hosts == ("http://a:1", "http://b:2")
