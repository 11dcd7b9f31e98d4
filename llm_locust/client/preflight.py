"""Preflight: check the target before any load, the way ``vllm bench serve`` does.

A load test against a target that cannot serve fires thousands of doomed requests in
seconds (14,577 ``connect`` failures in 6 s against a closed port; 9,297 HTTP 404s for a
wrong ``--model``). :func:`preflight` asks once, in order:

1. ``GET /v1/models``: reachable (a refused connection, an unknown host and a TLS
   certificate that is not accepted are each named), authorised (401/403), which models
   are served and their ``max_model_len``;
2. one short streaming request (8 tokens) to the model the run will use: tokens arrive,
   and whether the server reports ``usage``. Transient failures (5xx, 429, a torn stream)
   are retried twice; a 404 for a model the server does not list is "not served".

A 429 or 503 with ``Retry-After`` (to the listing or the test request) is a server asking
for time, not a refusal: the preflight waits once as asked, at most :data:`RETRY_WAIT_CAP_S`
(said in the log), and asks again. A test stream longer than the ``max_tokens`` it asked for
is a warning: the server ignores ``max_tokens``, so the run's output lengths are not the
workload's.

The result (:class:`Preflight`) is either a refusal with one line naming the cause, or
what was learned plus warnings: a model missing from the list that the server answered
anyway, an unknown context limit, a list the server would not give. Nothing waits longer
than ``--request-timeout`` (the listing at most 10 s, the test request at most 60 s).

When a run calls it (the node where results are kept, :mod:`llm_locust.runtime.sink`):

- headless (or ``--autostart``): at ``init``, before the runner starts. A refusal is one line on
  stderr and exit code 2; no request of the load is sent. With ``--endpoints`` every replica is
  checked (:func:`run_preflight`), and a refusal names it. Workers never check (the master did).
- web UI: each ``POST /swarm`` (after Locust's login and the form's check, in the one wrapper of
  :mod:`llm_locust.runtime.form`) checks the target the form names; a refusal is the form's error
  message and nothing starts.
- ``test_start``: :func:`server_facts` reuses what the check learned (no second
  ``GET /v1/models``), or asks for it when the check was skipped (``--skip-preflight``,
  workers), and refuses to start without a model: a run never sends ``"model": null``.
"""

from __future__ import annotations

import json
import logging
import socket
import ssl
from dataclasses import dataclass, field, replace

import gevent
from geventhttpclient.response import HTTPConnectionClosed, HTTPParseError

from llm_locust.client.streaming import (
    ClientConfig,
    StreamingClient,
    api_prefix,
    build_body,
    error_text,
    exc_text,
    http_client,
    shown_host,
)
from llm_locust.config.build import ConfigError
from llm_locust.config.jsontypes import JsonObject
from llm_locust.protocol.retry import RETRY_STATUSES, retry_after_seconds
from llm_locust.record import Outcome, RequestRecord
from llm_locust.workload.base import RequestSpec

__all__ = [
    "RETRY_WAIT_CAP_S",
    "ModelList",
    "Preflight",
    "fetch_server_info",
    "list_models",
    "preflight",
    "reach_reason",
    "retry_wait",
    "run_preflight",
    "server_facts",
]

log = logging.getLogger("llm_locust")

LIST_TIMEOUT = 10.0
TEST_TIMEOUT = 60.0
TEST_TOKENS = 8
_TEST_PROMPT = "Say hello in a few words."
_NO_RETRY = (Outcome.CONNECT, Outcome.HTTP_4XX)
#: The longest the preflight waits for a ``Retry-After`` (once per check).
RETRY_WAIT_CAP_S = 30.0


@dataclass(frozen=True)
class ModelList:
    """The answer to ``GET /v1/models``; ``problem`` says why there is no list."""

    models: tuple[str, ...] = ()
    lengths: dict[str, int] = field(default_factory=dict)  # max_model_len by id, where listed
    status: int | None = None
    problem: str = ""
    unreachable: bool = False  # no HTTP reply at all: refused, unknown host, TLS
    retry_after: float | None = None  # the seconds a 429 or 503 asked the client to wait


@dataclass(frozen=True)
class Preflight:
    """What preflight learned about the target, or why it refused it (``cause``)."""

    ok: bool
    target: str
    cause: str = ""
    model: str | None = None
    models: tuple[str, ...] = ()
    max_model_len: int | None = None
    usage: bool | None = None  # the test stream carried a usage block
    tokens: int = 0  # content chunks of the test stream
    ttft: float | None = None
    warnings: tuple[str, ...] = ()
    #: What the check itself cost the server (its test requests), so that the server's own
    #: counters reconcile with the run's records: ``{"requests", "prompt_tokens", "completion_tokens"}``.
    sent: dict[str, int] = field(default_factory=dict)

    def server_info(self) -> JsonObject:
        """The facts a run needs, in :func:`fetch_server_info`'s shape, plus what the check sent."""
        info: JsonObject = {"model": self.model, "models": list(self.models)}
        if self.max_model_len is not None:
            info["max_model_len"] = self.max_model_len
        if self.sent:
            info["preflight"] = dict(self.sent)
        return info

    def report(self) -> list[str]:
        """One line of what was learned, then one line per warning."""
        if not self.ok:
            return [self.cause]
        served = f"{len(self.models)} served" if self.models else "no model list"
        limit = f"max_model_len {self.max_model_len}" if self.max_model_len else "context limit unknown"
        usage = "reports usage" if self.usage else "reports no usage (counts come from a tokenizer or chunks)"
        ttft = "" if self.ttft is None else f", first token in {self.ttft:.2f} s"
        head = f"preflight ok: {self.target}: model {self.model!r} ({served}), {limit}, {usage}{ttft}"
        return [head, *self.warnings]


def reach_reason(exc: BaseException) -> str:
    """Why a connection gave no HTTP reply, in words (for "cannot reach X: ...")."""
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({exc.strerror or exc})"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return (
            f"TLS certificate not accepted: {exc.verify_message or exc.reason} "
            "(--ca-cert FILE trusts a private CA; --insecure skips verification)"
        )
    if isinstance(exc, ssl.SSLError):
        return f"TLS handshake failed: {exc.reason or exc}"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "connection timed out"
    if isinstance(exc, HTTPConnectionClosed):
        return "the connection closed without a reply"
    if isinstance(exc, HTTPParseError):
        return f"not an HTTP reply ({exc_text(exc)})"
    return exc_text(exc)


def _headers(config: ClientConfig) -> dict[str, str]:
    headers = {"Accept": "application/json"}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    headers.update(config.headers)
    return headers


def list_models(config: ClientConfig, timeout: float = LIST_TIMEOUT) -> ModelList:
    """``GET /v1/models`` with the run's TLS and headers, bounded by ``timeout``."""
    http = http_client(replace(config, connect_timeout=min(config.connect_timeout, timeout)), 1, timeout)
    try:
        with gevent.Timeout(timeout):
            response = http.get(api_prefix(config.host) + "/v1/models", headers=_headers(config))
            status = response.status_code
            body = response.read() if status == 200 else b""
            message = "" if status == 200 else error_text(response)
            after = retry_after_seconds(response.get("retry-after")) if status in RETRY_STATUSES else None
            response.release()
    except gevent.Timeout:
        return ModelList(problem=f"no answer in {timeout:g} s")
    except (OSError, HTTPParseError) as exc:
        return ModelList(problem=reach_reason(exc), unreachable=True)
    finally:
        http.close()
    if status != 200:
        return ModelList(status=status, problem=message, retry_after=after)
    return _parse_models(body)


def retry_wait(asked: float) -> float:
    """How long the preflight waits when a server asks for ``asked`` seconds: at most the cap."""
    return min(max(asked, 0.0), RETRY_WAIT_CAP_S)


class _Patience:
    """The one wait a preflight grants a server that asked for time (429/503 + Retry-After)."""

    def __init__(self) -> None:
        self.waited: float | None = None

    def wait(self, status: int | None, asked: float | None, what: str) -> bool:
        """Wait as asked (bounded) if this is the first such answer; whether it waited."""
        if self.waited is not None or status not in RETRY_STATUSES or asked is None:
            return False
        self.waited = retry_wait(asked)
        bound = (
            f" (asked {asked:g} s; the preflight waits at most {RETRY_WAIT_CAP_S:g} s)"
            if asked > self.waited
            else ""
        )
        log.warning(
            "llm-locust: preflight: %s answered HTTP %s with Retry-After: waiting %g s once, "
            "then asking again%s",
            what,
            status,
            self.waited,
            bound,
        )
        gevent.sleep(self.waited)
        return True

    def after(self) -> str:
        """For a refusal: that it came after the wait the server asked for."""
        return "" if self.waited is None else f" (after waiting {self.waited:g} s as the server asked)"


def _parse_models(body: bytes) -> ModelList:
    try:
        data = json.loads(body).get("data")
    except (ValueError, AttributeError):
        data = None
    if not isinstance(data, list):
        return ModelList(status=200, problem="no JSON model list")
    entries = [m for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]
    lengths = {m["id"]: int(m["max_model_len"]) for m in entries if isinstance(m.get("max_model_len"), int)}
    models = tuple(m["id"] for m in entries)
    return ModelList(models, lengths, 200, "" if models else "lists no model")


def fetch_server_info(config: ClientConfig, timeout: float = LIST_TIMEOUT) -> JsonObject:
    """``GET /v1/models``: the model to use, the ids served and its ``max_model_len``, or ``{"error"}``."""
    listing = list_models(config, min(timeout, config.request_timeout))
    if not listing.models:
        return {"error": f"GET /v1/models: {listing.problem}"}
    model = config.model or listing.models[0]
    info: JsonObject = {"model": model, "models": list(listing.models)}
    if model in listing.lengths:
        info["max_model_len"] = listing.lengths[model]
    return info


def preflight(config: ClientConfig, attempts: int = 3) -> Preflight:
    """Check ``config``'s target; a refusal's ``cause`` is one line naming the problem."""
    target = shown_host(config.host)
    patience = _Patience()
    listing = list_models(config, min(LIST_TIMEOUT, config.request_timeout))
    if patience.wait(listing.status, listing.retry_after, "GET /v1/models"):
        listing = list_models(config, min(LIST_TIMEOUT, config.request_timeout))
    if listing.unreachable:
        return Preflight(False, target, f"cannot reach {target}: {listing.problem}")
    if listing.status in (401, 403):
        return Preflight(False, target, listing.problem)
    warnings: list[str] = []
    model = config.model
    if not listing.models:
        if model is None:
            cause = f"GET {target}/v1/models: {listing.problem}{patience.after()}; pass --model NAME"
            return Preflight(False, target, cause)
        warnings.append(f"GET /v1/models: {listing.problem}; model {model!r} not checked")
    model = model or listing.models[0]
    unlisted = bool(listing.models) and model not in listing.models
    record, sent = _test_request(replace(config, model=model, tokenizer=None), attempts, patience)
    if not record.ok:
        cause = _test_failure(record, target, model, listing, unlisted) + patience.after()
        return Preflight(False, target, cause)
    if unlisted:
        listed = _listed(listing.models)
        warnings.append(f"model {model!r} is not in GET /v1/models ({listed}); the server answered anyway")
    if record.completion_tokens is not None and record.completion_tokens > TEST_TOKENS:
        warnings.append(
            f"the server ignores max_tokens: the test stream asked for {TEST_TOKENS} tokens and got "
            f"{record.completion_tokens} ({record.token_source}); the run's output lengths will not be the "
            "workload's (length accuracy in the summary)"
        )
    if record.usage_conflict:
        warnings.append(
            f"the test stream's usage contradicts it ({record.usage_conflict}): output tokens of such "
            "requests are counted as received, not as the usage claims"
        )
    limit = listing.lengths.get(model)
    if limit is None:
        warnings.append(
            "context limit unknown: the server lists no max_model_len; pass --max-model-len N so prompts fit"
        )
    return Preflight(
        True,
        target,
        model=model,
        models=listing.models,
        max_model_len=limit,
        usage=record.token_source == "usage" or record.usage_conflict is not None,
        tokens=len(record.chunk_times),
        ttft=record.ttft,
        warnings=tuple(warnings),
        sent=sent,
    )


def _test_request(
    config: ClientConfig, attempts: int, patience: _Patience
) -> tuple[RequestRecord, dict[str, int]]:
    """The test stream (retried on transient failures, once more after a Retry-After wait), and
    what all attempts sent."""
    # never abandoned on purpose (--cancel-rate is for the load, not for the check)
    config = replace(config, request_timeout=min(config.request_timeout, TEST_TIMEOUT), cancel=None)
    spec = RequestSpec(
        messages=[{"role": "user", "content": _TEST_PROMPT}], prompt=_TEST_PROMPT, max_tokens=TEST_TOKENS
    )
    client = StreamingClient(config)
    sent = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}
    try:
        attempt = 0
        while attempt < attempts:
            record = RequestRecord(request_id=f"preflight-{attempt}", wall_start=0.0, t_sent=0.0)
            client.send(build_body(config, spec), record)
            sent["requests"] += 1
            sent["prompt_tokens"] += record.prompt_tokens or 0
            sent["completion_tokens"] += record.completion_tokens or 0
            if record.ok or record.outcome in _NO_RETRY:
                break
            if patience.wait(record.status, record.extra.get("retry_after"), "the test request"):
                continue  # the wait it asked for: that attempt does not count
            attempt += 1
            if attempt < attempts:
                gevent.sleep(0.5)
    finally:
        client.close()
    return record, sent


def _test_failure(record: RequestRecord, target: str, model: str, listing: ModelList, unlisted: bool) -> str:
    if record.outcome == Outcome.CONNECT:
        return f"cannot reach {target}: {record.message}"
    if record.status in (401, 403):
        return record.message
    if record.status in (400, 404) and unlisted:
        return f"model {model!r} not served; the server lists: {_listed(listing.models)}"
    return f"a test request to model {model!r} failed: {record.outcome}: {record.message}"


def _listed(models: tuple[str, ...], limit: int = 10) -> str:
    shown = ", ".join(models[:limit])
    return shown + (f" (and {len(models) - limit} more)" if len(models) > limit else "")


def run_preflight(config: ClientConfig, replicas: tuple[str, ...] | None = None) -> Preflight:
    """Check the target (each of ``replicas`` when given: the first refusal, naming its replica,
    or the first's result) and log what was learned (warnings as warnings)."""
    if replicas:
        results = [run_preflight(replace(config, host=url)) for url in replicas]
        refused = next((r for r in results if not r.ok), None)
        if refused is not None and len(replicas) > 1:
            return replace(refused, cause=f"replica {refused.target}: {refused.cause}")
        return refused or results[0]
    result = preflight(config)
    if result.ok:
        head, *warnings = result.report()
        log.info("llm-locust: %s", head)
        for line in warnings:
            log.warning("llm-locust: preflight: %s", line)
    return result


def server_facts(checked: Preflight | None, config: ClientConfig) -> JsonObject:
    """The target's facts for a test's start: ``checked``'s when it checked this target (and
    model), else asked now; fills ``config.model`` or raises :class:`ConfigError`."""
    same = (
        checked is not None
        and checked.ok
        and checked.target == shown_host(config.host)
        and config.model in (None, checked.model)
    )
    if same and checked is not None:
        info = checked.server_info()
    else:
        info = fetch_server_info(config)
        if "error" in info:
            log.warning("llm-locust: %s", info["error"])
    if config.model is None:
        listed = info.get("model")
        config.model = listed if isinstance(listed, str) else None
    if config.model is None:
        raise ConfigError(f"no model to request ({info.get('error', 'none listed')}); pass --model NAME")
    return info
