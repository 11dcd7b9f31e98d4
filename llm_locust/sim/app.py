"""Routing: turns HTTP requests into streams on a token clock.

Endpoints (vLLM's OpenAI-compatible subset): ``GET /v1/models``, ``POST /v1/chat/completions``,
``POST /v1/completions``, ``POST /v1/responses`` (:mod:`~llm_locust.sim.responses`),
``POST /tokenize``, ``GET /metrics``, ``GET /health``,
``GET /version``. With an API key set, ``/v1/*`` requires ``Authorization: Bearer KEY``
(like vLLM, the other paths stay open).

What a generation request asks for (output length, prompt tokens, errors) is decided in
:mod:`~llm_locust.sim.request`.

Chat requests may get a reasoning phase (:mod:`~llm_locust.sim.reasoning`), and one that
offers tools a tool call (:mod:`~llm_locust.sim.tools`). In engine mode
with prefix caching, the prompt's token ids are cut into block hashes
(:func:`~llm_locust.sim.kvcache.block_hashes`) for the engine's prefix cache, and the usage
reports ``prompt_tokens_details.cached_tokens``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from llm_locust.sim.deploy import Deployment
from llm_locust.sim.engine import Engine, EngineConfig
from llm_locust.sim.faults import Drift, FaultConfig, FaultKind
from llm_locust.sim.flags import SimMode
from llm_locust.sim.http import HttpConnection, Request
from llm_locust.sim.kvcache import block_hashes
from llm_locust.sim.metrics import Metrics
from llm_locust.sim.reasoning import ReasoningSpec
from llm_locust.sim.request import GenRequest, HttpError, Limits, bad_request, json_body, prompt_ids, validate
from llm_locust.sim.responses import ResponsesStream, as_chat_body
from llm_locust.sim.schedule import EngineDriver, FixedScheduler
from llm_locust.sim.stream import Stream, StreamOwner
from llm_locust.sim.tokens import OUTPUT_WORDS, PromptError, TokenCounter
from llm_locust.sim.tools import decide_tool_call

__all__ = ["SimApp", "SimConfig"]


@dataclass(frozen=True)
class SimConfig:
    """Everything the server needs, in seconds (the CLI converts from milliseconds)."""

    model: str = "llm-locust/sim-8b"
    max_model_len: int = 32768
    api_key: str | None = None
    mode: SimMode = SimMode.FIXED
    ttft: float = 0.1
    tpot: float = 0.02
    engine: EngineConfig = field(default_factory=EngineConfig)
    output_tokens: int | None = None
    faults: FaultConfig = field(default_factory=FaultConfig)
    seed: int | None = None
    reasoning: ReasoningSpec | None = None
    reasoning_field: str = "reasoning_content"
    tool_call_rate: float = 0.0  # share of requests offering tools answered with a call
    tool_args_tokens: int = 24  # the call's arguments, in tokens
    drift: Drift = field(default_factory=Drift)
    speedup: float = 1.0  # simulated seconds per wall second (reported by /version)
    deployment: Deployment | None = None
    replica: int = 0
    overhead: float = 0.0  # seconds per request before the engine sees it (a calibrated model's)
    model_file: str | None = None


_RETRY_FAULTS = {
    FaultKind.RATE_LIMIT: (429, "simulated rate limit", "RateLimitError"),
    FaultKind.UNAVAILABLE: (503, "simulated overload: service unavailable", "ServiceUnavailableError"),
}


class SimApp(StreamOwner):
    """The request handler shared by all connections."""

    def __init__(self, config: SimConfig, counter: TokenCounter, loop: asyncio.AbstractEventLoop) -> None:
        self.config = config
        self.counter = counter
        self.loop = loop
        self.rng = random.Random(config.seed)
        self.stall_seconds = config.faults.stall_seconds
        self.metrics = Metrics(config.model, self._gauges, self._info())
        self._ids = itertools.count(1)
        self._id_prefix = f"{config.seed:08x}" if config.seed is not None else os.urandom(4).hex()
        self.active: set[Stream] = set()
        self._kv_fixed = 0
        self.engine: Engine | None = None
        self.scheduler: FixedScheduler | EngineDriver
        if config.mode is SimMode.ENGINE:
            self.engine = Engine(config.engine)
            self.scheduler = EngineDriver(loop, self.engine, config.drift, config.overhead)
        else:
            self.scheduler = FixedScheduler(loop, config.ttft, config.tpot, config.drift)
        self.caching = self.engine is not None and config.engine.prefix_caching
        self._version_body = json.dumps({"version": "llm-locust-sim", "speedup": config.speedup}).encode()
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
            ("POST", "/v1/responses"): self._responses,
            ("POST", "/tokenize"): self._tokenize,
        }
        self._paths = {path for _, path in self._routes}

    # -- StreamOwner -----------------------------------------------------------------

    def stream_ended(self, stream: Stream) -> None:
        if stream in self.active:
            self.active.discard(stream)
            self._kv_fixed -= stream.prompt_tokens + stream.n_tokens

    def call_later(self, delay: float, callback: Callable[[], object]) -> asyncio.TimerHandle:
        return self.loop.call_later(delay, callback)

    def _gauges(self) -> dict[str, float]:
        engine = self.engine
        if engine is not None:
            assert isinstance(self.scheduler, EngineDriver)
            self.scheduler.leak(self.loop.time())
            kv = engine.kv
            driver = self.scheduler
            return {
                "running": len(engine.running),
                "waiting": len(engine.waiting),
                "kv": kv.usage,
                "prefix_queries": kv.queries,
                "prefix_hits": kv.hits,
                "steps": driver.steps,
                "restarts": driver.restarts,
                "lost_s": driver.lost_s,
                "late_max_s": driver.late_max_s,
            }
        capacity = self.config.engine.kv_cache_tokens
        leaked = self.config.drift.leaked(self.loop.time() - self.scheduler.t_start)
        return {"running": len(self.active), "waiting": 0, "kv": (self._kv_fixed + leaked) / capacity}

    def _info(self) -> dict[str, str]:
        """Labels of ``vllm:cache_config_info`` and the simulator's own info gauge."""
        cfg = self.config
        info = {
            "mode": cfg.mode.value,
            "replica": str(cfg.replica),
            "speedup": f"{cfg.speedup:g}",
            "block_size": str(cfg.engine.block_size),
            "enable_prefix_caching": str(cfg.mode is SimMode.ENGINE and cfg.engine.prefix_caching),
            "kv_cache_tokens": str(cfg.engine.kv_cache_tokens),
        }
        if cfg.model_file:
            info["model_file"] = cfg.model_file
        d = cfg.deployment
        if d is not None:
            info.update(gpu=d.gpu.key, gpus=str(d.tp), tp=str(d.tp), model_class=d.model.key, dtype=d.dtype)
        return info

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
                    raise HttpError(405, f"method {request.method} not allowed", "MethodNotAllowed")
                raise HttpError(404, f"no route for {request.path}", "NotFoundError")
            if request.path.startswith("/v1/"):
                self._check_auth(request)
            route(conn, request)
        except HttpError as e:
            conn.respond_json(e.status, e.body())

    def _check_auth(self, request: Request) -> None:
        key = self.config.api_key
        if key and request.headers.get("authorization", "") != f"Bearer {key}":
            raise HttpError(401, "Unauthorized: invalid or missing API key", "AuthenticationError")

    # -- simple endpoints ------------------------------------------------------------

    def _health(self, conn: HttpConnection, request: Request) -> None:
        conn.respond(200, b"", content_type="text/plain")

    def _version(self, conn: HttpConnection, request: Request) -> None:
        conn.respond(200, self._version_body)

    def _metrics(self, conn: HttpConnection, request: Request) -> None:
        conn.respond(200, self.metrics.render().encode(), content_type="text/plain; version=0.0.4")

    def _models(self, conn: HttpConnection, request: Request) -> None:
        conn.respond(200, self._models_body)

    def _tokenize(self, conn: HttpConnection, request: Request) -> None:
        try:
            ids = prompt_ids(json_body(request), self.counter)
        except PromptError as e:
            raise bad_request(str(e)) from None
        conn.respond_json(
            200, {"count": len(ids), "max_model_len": self.config.max_model_len, "tokens": [*ids]}
        )

    # -- generation ------------------------------------------------------------------

    def _chat(self, conn: HttpConnection, request: Request) -> None:
        self._generate(conn, request, chat=True)

    def _completions(self, conn: HttpConnection, request: Request) -> None:
        self._generate(conn, request, chat=False)

    def _responses(self, conn: HttpConnection, request: Request) -> None:
        self._generate(conn, request, chat=True, responses=True)

    def _reasoning_tokens(self, gen: GenRequest) -> int | None:
        spec = self.config.reasoning
        if spec is None or not gen.chat:
            return None
        return spec.draw(self.rng, gen.n_tokens)

    def _generate(self, conn: HttpConnection, request: Request, chat: bool, responses: bool = False) -> None:
        cfg = self.config
        limits = Limits(cfg.model, cfg.max_model_len, cfg.output_tokens)
        body = json_body(request)
        if responses:  # the Responses API: the chat request it amounts to (sim/responses.py)
            try:
                body = as_chat_body(body)
            except PromptError as e:
                raise bad_request(str(e)) from None
        gen = validate(body, chat, self.counter, limits, with_ids=self.caching)
        fault = self.config.faults.decide(self.rng, gen.n_tokens)
        if fault is not None:
            self.metrics.fault(fault.kind)
            if fault.kind is FaultKind.ERROR:
                raise HttpError(500, "simulated internal server error", "InternalServerError")
            if fault.kind in _RETRY_FAULTS:
                status, message, err_type = _RETRY_FAULTS[fault.kind]
                after = self.config.faults.retry_after
                headers = () if after is None else (("Retry-After", str(after)),)
                conn.respond_json(status, HttpError(status, message, err_type).body(), extra_headers=headers)
                return
        kind = "resp_" if responses else "chatcmpl-" if chat else "cmpl-"
        rid = kind + f"{self._id_prefix}{next(self._ids):08x}"
        offset = self.rng.randrange(len(OUTPUT_WORDS))
        call = None
        if chat and cfg.tool_call_rate > 0:
            call = decide_tool_call(
                body, self.rng, cfg.tool_call_rate, cfg.tool_args_tokens, f"call-{rid}", offset
            )
        if call is not None:  # the call replaces the text: its arguments are the output
            n = cfg.tool_args_tokens
            gen = replace(
                gen, n_tokens=min(n, gen.limit), finish_reason="tool_calls" if n <= gen.limit else "length"
            )
        stream = (ResponsesStream if responses else Stream)(
            self,
            conn,
            chat=gen.chat,
            streaming=gen.streaming,
            include_usage=gen.include_usage,
            prompt_tokens=gen.prompt_tokens,
            n_tokens=gen.n_tokens,
            finish_reason=gen.finish_reason,
            offset=offset,
            fault=fault,
            t0=request.t_received,
            meta=(rid, int(time.time()), self.config.model),
            n_reasoning=None if call is not None else self._reasoning_tokens(gen),
            cached_tokens=0 if self.caching else None,
            reasoning_field=self.config.reasoning_field,
            tool_call=call,
        )
        try:
            if isinstance(self.scheduler, EngineDriver):
                hashes = block_hashes(gen.prompt_ids, self.config.engine.block_size) if gen.prompt_ids else ()
                self.scheduler.submit(stream, hashes)
            else:
                self.scheduler.submit(stream)
        except ValueError as e:
            raise bad_request(str(e)) from None
        self.metrics.prompt_tokens += gen.prompt_tokens
        self.active.add(stream)
        self._kv_fixed += gen.prompt_tokens + gen.n_tokens
        stream.start()
