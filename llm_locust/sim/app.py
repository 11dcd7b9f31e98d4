"""Routing and request validation: turns HTTP requests into streams on a token clock.

Endpoints (vLLM's OpenAI-compatible subset): ``GET /v1/models``, ``POST /v1/chat/completions``,
``POST /v1/completions``, ``POST /tokenize``, ``GET /metrics``, ``GET /health``,
``GET /version``. With an API key set, ``/v1/*`` requires ``Authorization: Bearer KEY``
(like vLLM, the other paths stay open).

Output length: ``--output-tokens N`` fixes it (still capped by the request's ``max_tokens``,
as a real server would never exceed it); otherwise ``max_completion_tokens`` or
``max_tokens`` from the request, default 256. ``finish_reason`` is ``"length"`` when the
output stopped at the limit in effect and ``"stop"`` when ``--output-tokens`` ended it
earlier. ``ignore_eos`` and ``min_tokens`` are accepted and have no further effect.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from llm_locust.sim.engine import Engine, EngineConfig
from llm_locust.sim.faults import FaultConfig
from llm_locust.sim.http import HttpConnection, Request
from llm_locust.sim.metrics import Metrics
from llm_locust.sim.schedule import EngineDriver, FixedScheduler
from llm_locust.sim.stream import Stream, StreamOwner
from llm_locust.sim.tokens import OUTPUT_WORDS, PromptError, TokenCounter, completion_prompt

__all__ = ["SimApp", "SimConfig"]

DEFAULT_MAX_TOKENS = 256


@dataclass(frozen=True)
class SimConfig:
    """Everything the server needs, in seconds (the CLI converts from milliseconds)."""

    model: str = "llm-locust/sim-8b"
    max_model_len: int = 32768
    api_key: str | None = None
    mode: str = "fixed"  # fixed | engine
    ttft: float = 0.1
    tpot: float = 0.02
    engine: EngineConfig = field(default_factory=EngineConfig)
    output_tokens: int | None = None
    faults: FaultConfig = field(default_factory=FaultConfig)
    seed: int | None = None


class _HttpError(Exception):
    def __init__(self, status: int, message: str, err_type: str) -> None:
        super().__init__(message)
        self.status = status
        self.err_type = err_type

    def body(self) -> dict[str, Any]:
        return {"error": {"message": str(self), "type": self.err_type, "param": None, "code": self.status}}


def _bad(message: str) -> _HttpError:
    return _HttpError(400, message, "BadRequestError")


@dataclass(frozen=True)
class _Gen:
    """A validated generation request."""

    chat: bool
    streaming: bool
    include_usage: bool
    prompt_tokens: int
    n_tokens: int
    finish_reason: str


class SimApp(StreamOwner):
    """The request handler shared by all connections."""

    def __init__(self, config: SimConfig, counter: TokenCounter, loop: asyncio.AbstractEventLoop) -> None:
        self.config = config
        self.counter = counter
        self.loop = loop
        self.rng = random.Random(config.seed)
        self.stall_seconds = config.faults.stall_seconds
        self.metrics = Metrics(config.model, self._gauges)
        self._ids = itertools.count(1)
        self._id_prefix = f"{config.seed:08x}" if config.seed is not None else os.urandom(4).hex()
        self.active: set[Stream] = set()
        self._kv_fixed = 0
        self.engine: Engine | None = None
        self.scheduler: FixedScheduler | EngineDriver
        if config.mode == "engine":
            self.engine = Engine(config.engine)
            self.scheduler = EngineDriver(loop, self.engine)
        else:
            self.scheduler = FixedScheduler(loop, config.ttft, config.tpot)
        self._models_body = json.dumps(
            {
                "object": "list",
                "data": [
                    {
                        "id": config.model,
                        "object": "model",
                        "created": int(time.time()),
                        "owned_by": "llm-locust-sim",
                        "root": config.model,
                        "max_model_len": config.max_model_len,
                    }
                ],
            }
        ).encode()
        self._routes: dict[tuple[str, str], Callable[[HttpConnection, Request], None]] = {
            ("GET", "/health"): self._health,
            ("GET", "/version"): self._version,
            ("GET", "/metrics"): self._metrics,
            ("GET", "/v1/models"): self._models,
            ("POST", "/v1/chat/completions"): self._chat,
            ("POST", "/v1/completions"): self._completions,
            ("POST", "/tokenize"): self._tokenize,
        }
        self._paths = {path for _, path in self._routes}

    # -- StreamOwner -----------------------------------------------------------------

    def stream_ended(self, stream: Stream) -> None:
        if stream in self.active:
            self.active.discard(stream)
            self._kv_fixed -= stream.prompt_tokens + stream.n_tokens

    def call_later(self, delay: float, callback: Callable[[], Any]) -> Any:
        return self.loop.call_later(delay, callback)

    def _gauges(self) -> tuple[int, int, float]:
        if self.engine is not None:
            return len(self.engine.running), len(self.engine.waiting), self.engine.kv_usage
        return len(self.active), 0, self._kv_fixed / self.config.engine.kv_cache_tokens

    def close(self) -> None:
        self.scheduler.stop()
        for stream in list(self.active):
            stream.cancel()

    # -- routing ---------------------------------------------------------------------

    def handle(self, conn: HttpConnection, request: Request) -> None:
        route = self._routes.get((request.method, request.path))
        try:
            if route is None:
                if request.path in self._paths:
                    raise _HttpError(405, f"method {request.method} not allowed", "MethodNotAllowed")
                raise _HttpError(404, f"no route for {request.path}", "NotFoundError")
            if request.path.startswith("/v1/"):
                self._check_auth(request)
            route(conn, request)
        except _HttpError as e:
            conn.respond_json(e.status, e.body())

    def _check_auth(self, request: Request) -> None:
        key = self.config.api_key
        if key and request.headers.get("authorization", "") != f"Bearer {key}":
            raise _HttpError(401, "Unauthorized: invalid or missing API key", "AuthenticationError")

    # -- simple endpoints ------------------------------------------------------------

    def _health(self, conn: HttpConnection, request: Request) -> None:
        conn.respond(200, b"", content_type="text/plain")

    def _version(self, conn: HttpConnection, request: Request) -> None:
        conn.respond_json(200, {"version": "llm-locust-sim"})

    def _metrics(self, conn: HttpConnection, request: Request) -> None:
        conn.respond(200, self.metrics.render().encode(), content_type="text/plain; version=0.0.4")

    def _models(self, conn: HttpConnection, request: Request) -> None:
        conn.respond(200, self._models_body)

    def _tokenize(self, conn: HttpConnection, request: Request) -> None:
        body = self._json_body(request)
        try:
            if "messages" in body:
                ids = self.counter.chat_ids(body["messages"])
            elif "prompt" in body:
                prompt = completion_prompt(body["prompt"])
                ids = prompt if isinstance(prompt, list) else self.counter.ids(prompt)
            else:
                raise PromptError("send 'prompt' or 'messages'")
        except PromptError as e:
            raise _bad(str(e)) from None
        conn.respond_json(200, {"count": len(ids), "max_model_len": self.config.max_model_len, "tokens": ids})

    # -- generation ------------------------------------------------------------------

    def _chat(self, conn: HttpConnection, request: Request) -> None:
        self._generate(conn, request, chat=True)

    def _completions(self, conn: HttpConnection, request: Request) -> None:
        self._generate(conn, request, chat=False)

    def _json_body(self, request: Request) -> dict[str, Any]:
        try:
            body = request.json()
        except (ValueError, UnicodeDecodeError) as e:
            raise _bad(f"request body is not valid JSON: {e}") from None
        if not isinstance(body, dict):
            raise _bad("request body must be a JSON object")
        return body

    def _count_prompt(self, body: dict[str, Any], chat: bool) -> int:
        try:
            if chat:
                return self.counter.count_chat(body.get("messages"))
            if "prompt" not in body:
                raise PromptError("'prompt' is required")
            prompt = completion_prompt(body["prompt"])
            return len(prompt) if isinstance(prompt, list) else self.counter.count(prompt)
        except PromptError as e:
            raise _bad(str(e)) from None

    def _validate(self, body: dict[str, Any], chat: bool) -> _Gen:
        cfg = self.config
        model = body.get("model")
        if model is not None and model != cfg.model:
            raise _HttpError(404, f"The model `{model}` does not exist.", "NotFoundError")
        prompt_tokens = self._count_prompt(body, chat)
        requested = body.get("max_completion_tokens") if chat else None
        if requested is None:
            requested = body.get("max_tokens")
        if requested is not None and (
            isinstance(requested, bool) or not isinstance(requested, int) or requested < 1
        ):
            raise _bad(f"max_tokens must be an integer >= 1, got {requested!r}")
        limit = requested if requested is not None else DEFAULT_MAX_TOKENS
        if requested is None:
            limit = min(limit, cfg.max_model_len - prompt_tokens)
        if limit < 1 or prompt_tokens + limit > cfg.max_model_len:
            raise _bad(
                f"This model's maximum context length is {cfg.max_model_len} tokens. However, you "
                f"requested {prompt_tokens + max(limit, 0)} tokens ({prompt_tokens} in the messages, "
                f"{max(limit, 0)} in the completion). Please reduce the length of the messages or "
                "completion."
            )
        n_tokens = limit if cfg.output_tokens is None else min(cfg.output_tokens, limit)
        stream_opts = body.get("stream_options") or {}
        return _Gen(
            chat=chat,
            streaming=bool(body.get("stream", False)),
            include_usage=isinstance(stream_opts, dict) and bool(stream_opts.get("include_usage")),
            prompt_tokens=prompt_tokens,
            n_tokens=n_tokens,
            finish_reason="length" if n_tokens >= limit else "stop",
        )

    def _generate(self, conn: HttpConnection, request: Request, chat: bool) -> None:
        gen = self._validate(self._json_body(request), chat)
        fault = self.config.faults.decide(self.rng, gen.n_tokens)
        if fault is not None:
            self.metrics.fault(fault.kind)
            if fault.kind == "error":
                raise _HttpError(500, "simulated internal server error", "InternalServerError")
            if fault.kind == "rate_limit":
                err = _HttpError(429, "simulated rate limit", "RateLimitError")
                conn.respond_json(429, err.body(), extra_headers=(("Retry-After", "1"),))
                return
        rid = ("chatcmpl-" if chat else "cmpl-") + f"{self._id_prefix}{next(self._ids):08x}"
        stream = Stream(
            self,
            conn,
            chat=gen.chat,
            streaming=gen.streaming,
            include_usage=gen.include_usage,
            prompt_tokens=gen.prompt_tokens,
            n_tokens=gen.n_tokens,
            finish_reason=gen.finish_reason,
            offset=self.rng.randrange(len(OUTPUT_WORDS)),
            fault=fault,
            t0=request.t_received,
            meta=(rid, int(time.time()), self.config.model),
        )
        try:
            self.scheduler.submit(stream)
        except ValueError as e:
            raise _bad(str(e)) from None
        self.metrics.prompt_tokens += gen.prompt_tokens
        self.active.add(stream)
        self._kv_fixed += gen.prompt_tokens + gen.n_tokens
        stream.start()
